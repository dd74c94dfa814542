import { lazy, Suspense, useState } from 'react';
import { theme } from 'antd';
import { TOOLBAR_HEIGHT } from '@kvm/protocol/constants';
import {
  DownOutlined,
  FullscreenExitOutlined,
  FullscreenOutlined,
  LogoutOutlined,
  QuestionCircleOutlined,
  SettingOutlined,
  ToolOutlined,
  UpOutlined,
  UsbOutlined,
} from '@ant-design/icons';
import { useTranslation } from 'react-i18next';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { useFullscreen } from '../../components/hooks';
import { enterFullscreen, exitFullscreen } from '../../lib/fullscreen';
import { CaptureIndicator } from '../input/CaptureIndicator';
import { KeyboardTools } from '../keyboard/KeyboardTools';
import { DeviceTools } from './DeviceTools';
import { logout } from '../session/session-actions';
import { setToolbarCollapsed, toggleLeftPanel, useLayout } from './layout-store';
import { useMessage } from '../../components/notify';
import { ToolButton } from '../../components/ToolButton';

const HelpDialog = lazy(() => import('../help/HelpDialog'));

/**
 * SPEC 2 main screen toolbar: collapse/expand, fullscreen, the left panel's sections (settings,
 * toolbox, external devices), help, logout.
 */
export function Toolbar() {
  const { t } = useTranslation();
  const message = useMessage();
  const { token } = theme.useToken();
  const collapsed = useLayout((s) => s.toolbarCollapsed);
  const leftPanel = useLayout((s) => s.leftPanel);
  const fullscreen = useFullscreen();
  const [helpOpen, setHelpOpen] = useState(false);
  const [logoutOpen, setLogoutOpen] = useState(false);

  const toggleFullscreen = async () => {
    try {
      if (fullscreen) {
        await exitFullscreen();
      } else {
        await enterFullscreen();
        void message.info(t('main.fullscreenHint'));
      }
    } catch {
      // Refused by the browser (no user gesture, iframe without allowfullscreen): stay as is.
    }
  };

  const collapseButton = (
    <ToolButton
      title={t(collapsed ? 'main.expandToolbar' : 'main.collapseToolbar')}
      icon={collapsed ? <DownOutlined /> : <UpOutlined />}
      onClick={() => setToolbarCollapsed(!collapsed)}
      testId="toolbar-collapse"
      showLabel={false}
    />
  );

  return (
    <>
      <header
        data-testid="toolbar"
        data-collapsed={collapsed ? 'true' : 'false'}
        style={
          collapsed
            ? {
                position: 'absolute',
                top: 0,
                left: '50%',
                transform: 'translateX(-50%)',
                zIndex: 10,
                background: token.colorBgContainer,
                borderRadius: `0 0 ${token.borderRadius}px ${token.borderRadius}px`,
                boxShadow: token.boxShadowTertiary,
                padding: '0 4px',
              }
            : {
                display: 'flex',
                alignItems: 'center',
                gap: 4,
                height: TOOLBAR_HEIGHT,
                padding: '0 8px',
                background: token.colorBgContainer,
                borderBottom: `1px solid ${token.colorBorderSecondary}`,
                flex: 'none',
              }
        }
      >
        {!collapsed && (
          <>
            <ToolButton
              title={t('main.settings')}
              icon={<SettingOutlined />}
              onClick={() => toggleLeftPanel('settings')}
              testId="toolbar-settings"
              active={leftPanel === 'settings'}
            />
            <ToolButton
              title={t('toolbox.title')}
              icon={<ToolOutlined />}
              onClick={() => toggleLeftPanel('toolbox')}
              testId="toolbar-toolbox"
              active={leftPanel === 'toolbox'}
            />
            <ToolButton
              title={t('external.title')}
              icon={<UsbOutlined />}
              onClick={() => toggleLeftPanel('externalDevices')}
              testId="toolbar-external"
              active={leftPanel === 'externalDevices'}
            />
            <KeyboardTools />
            <DeviceTools />
            <div style={{ flex: 1 }} />
            <CaptureIndicator />
            <ToolButton
              title={t(fullscreen ? 'main.exitFullscreen' : 'main.fullscreen')}
              icon={fullscreen ? <FullscreenExitOutlined /> : <FullscreenOutlined />}
              onClick={() => void toggleFullscreen()}
              testId="toolbar-fullscreen"
            />
            <ToolButton
              title={t('main.help')}
              icon={<QuestionCircleOutlined />}
              onClick={() => setHelpOpen(true)}
              testId="help-button"
            />
            <ToolButton
              title={t('main.logout')}
              icon={<LogoutOutlined />}
              onClick={() => setLogoutOpen(true)}
              testId="logout-button"
            />
          </>
        )}
        {collapseButton}
      </header>
      {helpOpen && (
        <Suspense fallback={null}>
          <HelpDialog onClose={() => setHelpOpen(false)} />
        </Suspense>
      )}
      <ConfirmDialog
        open={logoutOpen}
        okText={t('main.logout')}
        onConfirm={() => logout()}
        onCancel={() => setLogoutOpen(false)}
      >
        {t('main.logoutConfirm')}
      </ConfirmDialog>
    </>
  );
}

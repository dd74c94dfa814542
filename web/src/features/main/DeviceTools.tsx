import { lazy, Suspense, useEffect, useState } from 'react';
import { Drawer, Spin } from 'antd';
import {
  AimOutlined,
  AppstoreOutlined,
  CloudOutlined,
  CodeOutlined,
  HddOutlined,
  LaptopOutlined,
} from '@ant-design/icons';
import { useTranslation } from 'react-i18next';
import type { I18nKey } from '../../i18n/keys';
import { loadFingerbotExist, useFingerbot } from '../fingerbot/fingerbot-store';
import { PowerMenu } from '../power/PowerMenu';
import { ToolButton } from '../../components/ToolButton';
import { openTerminal } from '../terminal/open-terminal';

// Most visits never open these: each panel is its own chunk (house-style: lazy-load).
const StoragePanel = lazy(() => import('../storage/StoragePanel'));
const WolPanel = lazy(() => import('../wol/WolPanel'));
const FingerbotPanel = lazy(() => import('../fingerbot/FingerbotPanel'));
const CloudPanel = lazy(() => import('../cloud/CloudPanel'));
const AppsPanel = lazy(() => import('../apps/AppsPanel'));

type Panel = 'storage' | 'wol' | 'fingerbot' | 'cloud' | 'apps';

const PANEL_TITLE: Record<Panel, I18nKey> = {
  storage: 'storage.title',
  wol: 'wol.title',
  fingerbot: 'fingerbot.title',
  cloud: 'cloud.title',
  apps: 'apps.title',
};

const DRAWER_WIDTH = 400;

function PanelContent({ panel }: { panel: Panel }) {
  switch (panel) {
    case 'storage':
      return <StoragePanel />;
    case 'wol':
      return <WolPanel />;
    case 'fingerbot':
      return <FingerbotPanel />;
    case 'cloud':
      return <CloudPanel />;
    case 'apps':
      return <AppsPanel />;
  }
}

/**
 * The toolbar's device group (SPEC 2 main screen): ATX power menu, virtual media, wake-on-LAN,
 * the cloud service, terminal access and, when one is paired, the fingerbot. Each panel opens in a drawer, loaded on first use;
 * uploads and downloads keep running while a drawer is closed.
 */
export function DeviceTools() {
  const { t } = useTranslation();
  const fingerbot = useFingerbot((s) => s.exist) === true;
  const [open, setOpen] = useState<Panel | null>(null);
  // Stays drawn while the drawer slides out.
  const [last, setLast] = useState<Panel>('storage');

  useEffect(() => {
    // The event socket's first burst may have come before this module was loaded.
    if (useFingerbot.getState().exist === null) void loadFingerbotExist();
  }, []);

  const toggle = (panel: Panel) => {
    setLast(panel);
    setOpen((current) => (current === panel ? null : panel));
  };
  const shown = open === 'fingerbot' && !fingerbot ? null : open;

  return (
    <>
      <PowerMenu />
      <ToolButton
        title={t('storage.title')}
        icon={<HddOutlined />}
        onClick={() => toggle('storage')}
        testId="toolbar-storage"
        active={shown === 'storage'}
      />
      <ToolButton
        title={t('wol.title')}
        icon={<LaptopOutlined />}
        onClick={() => toggle('wol')}
        testId="toolbar-wol"
        active={shown === 'wol'}
      />
      <ToolButton
        title={t('cloud.title')}
        icon={<CloudOutlined />}
        onClick={() => toggle('cloud')}
        testId="toolbar-cloud"
        active={shown === 'cloud'}
      />
      <ToolButton
        title={t('apps.title')}
        icon={<AppstoreOutlined />}
        onClick={() => toggle('apps')}
        testId="toolbar-apps"
        active={shown === 'apps'}
      />
      <ToolButton
        title={t('terminal.title')}
        icon={<CodeOutlined />}
        onClick={() => openTerminal()}
        testId="toolbar-terminal"
      />
      {fingerbot && (
        <ToolButton
          title={t('fingerbot.title')}
          icon={<AimOutlined />}
          onClick={() => toggle('fingerbot')}
          testId="toolbar-fingerbot"
          active={shown === 'fingerbot'}
        />
      )}
      <Drawer
        open={shown !== null}
        title={t(PANEL_TITLE[last])}
        size={DRAWER_WIDTH}
        placement="right"
        onClose={() => setOpen(null)}
        destroyOnHidden
      >
        <Suspense
          fallback={
            <div style={{ padding: 24, textAlign: 'center' }}>
              <Spin />
            </div>
          }
        >
          <PanelContent panel={last} />
        </Suspense>
      </Drawer>
    </>
  );
}

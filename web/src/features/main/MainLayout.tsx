import { lazy, startTransition, Suspense, useEffect, useState } from 'react';
import { theme } from 'antd';
import { Outlet } from 'react-router';
import { LEFT_PANEL_WIDTH, STATUS_BAR_MIN_HEIGHT, TOOLBAR_HEIGHT } from '@kvm/protocol/constants';
import { useViewport } from '../../components/hooks';
import { LoadingIcon } from '../../components/LoadingIcon';
import { NoticeStackHost } from '../../components/NoticeStack';
import { PlatformProblems } from '../device-info/PlatformProblems';
import { VirtualKeyboardHost } from '../keyboard/VirtualKeyboardHost';
import UpgradeHost from '../upgrade/UpgradeHost';
import { useLayout, type LeftPanelSection } from './layout-store';
import { layoutRules } from '../../lib/layout-rules';
import { useVideoPart } from '../video/video-session';
import { StatusBar } from './StatusBar';
import { Toolbar } from './Toolbar';

const SettingsSidebar = lazy(() => import('../settings/SettingsSidebar'));
const ToolboxPanel = lazy(() => import('../toolbox/ToolboxPanel'));
const ExternalDevicesPanel = lazy(() => import('../external/ExternalDevicesPanel'));

function LeftPanelContent({ section }: { section: LeftPanelSection }) {
  switch (section) {
    case 'settings':
      return <SettingsSidebar />;
    case 'toolbox':
      return <ToolboxPanel />;
    case 'externalDevices':
      return <ExternalDevicesPanel />;
    case 'none':
      return null;
  }
}

/** The chrome waits at most this long for the video's first frame. */
const CHROME_WAIT_MS = 1_000;

/**
 * Issue 28 item 2 (docs/webrtc.md "First frame"): the first render holds the remote screen
 * alone; the toolbar, status bar and panels follow once the video shows its first frame (or
 * after CHROME_WAIT_MS, or at once when no client runs), in a transition that React renders in
 * slices: the page's main thread stays free for the video's handshake, ICE and DTLS.
 */
function useChrome(): boolean {
  const state = useVideoPart((v) => v.state);
  const waiting = state === 'connecting' || state === 'attached' || state === 'watching';
  const [shown, setShown] = useState(false);
  const [waited, setWaited] = useState(false);
  useEffect(() => {
    const timer = setTimeout(() => setWaited(true), CHROME_WAIT_MS);
    return () => clearTimeout(timer);
  }, []);
  const show = !shown && (!waiting || waited);
  useEffect(() => {
    if (show) startTransition(() => setShown(true));
  }, [show]);
  return shown;
}

/** SPEC 2 main layout: toolbar, left panel (320 px), remote screen, status bar. */
export default function MainLayout() {
  const { token } = theme.useToken();
  const section = useLayout((s) => s.leftPanel);
  const toolbarCollapsed = useLayout((s) => s.toolbarCollapsed);
  const { panel } = layoutRules(useViewport());
  const chrome = useChrome();

  return (
    <NoticeStackHost>
      <div
        style={{ position: 'relative', height: '100%', display: 'flex', flexDirection: 'column' }}
      >
        {chrome && <Toolbar />}
        {/* until the chrome renders its place is kept: the picture does not move when it comes */}
        {!chrome && !toolbarCollapsed && <div style={{ height: TOOLBAR_HEIGHT, flex: 'none' }} />}
        {chrome && <PlatformProblems />}
        <div style={{ position: 'relative', flex: 1, display: 'flex', minHeight: 0 }}>
          {chrome && section !== 'none' && (
            <aside
              data-testid="left-panel"
              data-section={section}
              data-panel={panel}
              style={{
                width: LEFT_PANEL_WIDTH,
                maxWidth: '100%',
                flex: 'none',
                overflowY: 'auto',
                background: token.colorBgContainer,
                borderRight: `1px solid ${token.colorBorderSecondary}`,
                // Below 1366 px: float over the remote screen instead of squeezing it.
                ...(panel === 'floating'
                  ? { position: 'absolute', top: 0, bottom: 0, left: 0, zIndex: 5 }
                  : {}),
              }}
            >
              <Suspense
                fallback={
                  <div style={{ padding: 24, textAlign: 'center' }}>
                    <LoadingIcon size={24} />
                  </div>
                }
              >
                <LeftPanelContent section={section} />
              </Suspense>
            </aside>
          )}
          <main style={{ flex: 1, minWidth: 0, minHeight: 0 }}>
            <Outlet />
          </main>
        </div>
        {/* not held back with the chrome: it checks at once for a download another tab runs */}
        <UpgradeHost />
        {chrome ? (
          <>
            <VirtualKeyboardHost />
            <StatusBar />
          </>
        ) : (
          <div style={{ minHeight: STATUS_BAR_MIN_HEIGHT, flex: 'none' }} />
        )}
      </div>
    </NoticeStackHost>
  );
}

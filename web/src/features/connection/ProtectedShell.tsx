import { Suspense, useEffect } from 'react';
import { Outlet } from 'react-router';
import { FullscreenSpinner } from '../../components/FullscreenSpinner';
import { loadConfig } from '../config/config-store';
import { fetchTwoFaState } from '../session/session-actions';
import { ConnectionLostOverlay } from './ConnectionLostOverlay';
import { startConnection } from './connection';

/**
 * Everything behind the login: the event socket with its heartbeat, the server-stored settings
 * (SPEC 4: they load after login, and after a reload with a live session) and the
 * connection-lost overlay.
 */
export default function ProtectedShell() {
  useEffect(() => startConnection(), []);
  useEffect(() => {
    void loadConfig();
    fetchTwoFaState().catch(() => undefined);
  }, []);
  return (
    <>
      <Suspense fallback={<FullscreenSpinner />}>
        <Outlet />
      </Suspense>
      <ConnectionLostOverlay />
    </>
  );
}

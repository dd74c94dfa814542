import { Suspense, useEffect } from 'react';
import { Navigate, Outlet, useLocation } from 'react-router';
import { FullscreenSpinner } from '../components/FullscreenSpinner';
import { checkLogin } from '../features/session/session-actions';
import { useSession } from '../features/session/session-store';
import { decideNavigation } from './guard';

/** Performs the SPEC 2 navigation guard on every location (decision in guard.ts). */
export function RouteGuard() {
  const location = useLocation();
  const isInited = useSession((s) => s.isInited);
  const isLoggedIn = useSession((s) => s.isLoggedIn);
  const decision = decideNavigation(location.pathname, location.search, { isInited, isLoggedIn });
  const checkToken = decision.kind === 'checkLogin' ? decision.token : undefined;

  useEffect(() => {
    if (checkToken !== undefined) void checkLogin(checkToken);
  }, [checkToken]);

  if (decision.kind === 'redirect') return <Navigate to={decision.to} replace />;
  // SPEC 2: the spinner shows until initialisation (init and login checks) finishes.
  if (decision.kind !== 'allow') return <FullscreenSpinner />;
  return (
    <Suspense fallback={<FullscreenSpinner />}>
      <Outlet />
    </Suspense>
  );
}

import { lazy } from 'react';
import { Route, Routes } from 'react-router';
import { FullscreenSpinner } from '../components/FullscreenSpinner';
import { registerPreload } from '../lib/preload';
import { loadLayout, loadPage, loadShell } from './console-chunks';
import { preloadedLazy } from './preloaded';
import { RouteGuard } from './RouteGuard';

// Every page is its own chunk: /login must stay small (size budget), and the main layout pulls
// in the settings, the event socket and the config schema only once logged in.
const LoginPage = lazy(() => import('../features/auth/LoginPage'));
const InitPage = lazy(() => import('../features/auth/InitPage'));
const TwoFactorPage = lazy(() => import('../features/auth/TwoFactorPage'));
// while preloaded: the spinner the guard showed, not a Suspense fallback (app/preloaded.tsx)
const spinner = <FullscreenSpinner />;
const shell = preloadedLazy(loadShell, spinner);
const layout = preloadedLazy(loadLayout, spinner);
const page = preloadedLazy(loadPage);
const ProtectedShell = shell.Component;
const MainLayout = layout.Component;
const MainPage = page.Component;
// app/prestart.ts: the console's three chunks at once, not each after the one above rendered
registerPreload('console', () => Promise.all([shell.load(), layout.load(), page.load()]));
const loadUpgradingPage = () => import('../features/upgrading/UpgradingPage');
const UpgradingPage = lazy(loadUpgradingPage);
registerPreload('upgrading', loadUpgradingPage);
const TerminalPage = lazy(() => import('../features/terminal/TerminalPage'));
const NoPermissionPage = lazy(() => import('../features/no-permission/NoPermissionPage'));

/** SPEC 2 routes, all behind the navigation guard. */
export function AppRoutes() {
  return (
    <Routes>
      <Route element={<RouteGuard />}>
        <Route path="/login" element={<LoginPage />} />
        <Route path="/init" element={<InitPage />} />
        <Route path="/twofactor" element={<TwoFactorPage />} />
        <Route element={<ProtectedShell />}>
          <Route path="/" element={<MainLayout />}>
            <Route index element={<MainPage />} />
          </Route>
          <Route path="/kvm" element={<MainLayout />}>
            <Route index element={<MainPage />} />
          </Route>
          <Route path="/upgrading" element={<UpgradingPage />} />
          <Route path="/webterm" element={<TerminalPage />} />
        </Route>
        <Route path="*" element={<NoPermissionPage />} />
      </Route>
    </Routes>
  );
}

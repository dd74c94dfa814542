/**
 * The fleet console's shell: antd in the console's theme and the chosen language, the router,
 * the guard (signed out → /signin, keeping ?next= and ?code=), the header with the navigation
 * (admin screens only for admins) and the status line. Screens are their own chunks.
 */
import { lazy, Suspense, useEffect, useState } from 'react';
import { Button, ConfigProvider, Layout, Spin } from 'antd';
import type { Locale } from 'antd/es/locale';
import enUS from 'antd/es/locale/en_US';
import { BrowserRouter, Navigate, NavLink, Outlet, Route, Routes, useLocation } from 'react-router';
import { usePrefersReducedMotion } from '../../components/reduced-motion';
import { setFleetLanguage, useFleetLanguage, useT, type FleetKey } from '../i18n';
import { api } from '../lib/api';
import { safeNext } from '../lib/links';
import { isAdmin, loadMe, showStatus, signedOut, useSession, useStatus } from '../lib/session';
import { SignInPage } from '../auth/SignInPage';

const SignUpPage = lazy(() => import('../auth/SignUpPage'));
const DevicesPage = lazy(() => import('../devices/DevicesPage'));
const WallPage = lazy(() => import('../wall/WallPage'));
const JobsPage = lazy(() => import('../jobs/JobsPage'));
const JobPage = lazy(() => import('../jobs/JobPage'));
const FilesPage = lazy(() => import('../files/FilesPage'));
const EventsPage = lazy(() => import('../events/EventsPage'));
const UsersPage = lazy(() => import('../admin/UsersPage'));
const GroupsPage = lazy(() => import('../admin/GroupsPage'));
const AlertsPage = lazy(() => import('../admin/AlertsPage'));
const AccountPage = lazy(() => import('../account/AccountPage'));

function useAntdLocale(lang: 'en' | 'zh'): Locale {
  const [zh, setZh] = useState<Locale | undefined>(undefined);
  useEffect(() => {
    if (lang !== 'zh' || zh) return;
    void import('antd/es/locale/zh_CN').then((m) => setZh(m.default));
  }, [lang, zh]);
  return lang === 'zh' && zh ? zh : enUS;
}

export function StatusLine() {
  const { text, error } = useStatus();
  return (
    <p
      className={`fleet-status${error ? ' error' : ''}`}
      role="status"
      aria-live="polite"
      data-testid="status"
    >
      {text}
    </p>
  );
}

export function LanguageSelect() {
  const t = useT();
  const lang = useFleetLanguage();
  return (
    <select
      className="fleet-select"
      aria-label={t('common.language')}
      data-testid="language"
      value={lang}
      onChange={(e) => setFleetLanguage(e.target.value === 'zh' ? 'zh' : 'en')}
    >
      <option value="en">English</option>
      <option value="zh">中文</option>
    </select>
  );
}

const NAV: Array<{ to: string; key: FleetKey; id: string; admin?: boolean }> = [
  { to: '/devices', key: 'nav.devices', id: 'nav-devices' },
  { to: '/wall', key: 'nav.wall', id: 'nav-wall' },
  { to: '/jobs', key: 'nav.jobs', id: 'nav-jobs' },
  { to: '/events', key: 'nav.events', id: 'nav-events' },
  { to: '/files', key: 'nav.files', id: 'nav-files', admin: true },
  { to: '/admin/users', key: 'nav.users', id: 'nav-users', admin: true },
  { to: '/admin/groups', key: 'nav.groups', id: 'nav-groups', admin: true },
  { to: '/admin/alerts', key: 'nav.alerts', id: 'nav-alerts', admin: true },
  { to: '/account', key: 'nav.account', id: 'nav-account' },
];

function Shell() {
  const t = useT();
  const me = useSession((s) => s.me);
  const loc = useLocation();
  useEffect(() => showStatus(''), [loc.pathname]);
  if (me === undefined) return <Spin />;
  if (me === null) return <Navigate to={`/signin${loc.search}`} replace />;
  const admin = isAdmin(me);
  return (
    <Layout style={{ minHeight: '100vh' }}>
      <Layout.Header
        style={{ display: 'flex', alignItems: 'center', gap: 16, background: 'transparent' }}
      >
        <strong style={{ fontSize: 18 }}>{t('app.title')}</strong>
        <nav className="fleet-nav" aria-label={t('nav.label')} style={{ flex: 1 }}>
          {NAV.filter((n) => !n.admin || admin).map((n) => (
            <NavLink key={n.to} to={n.to} data-testid={n.id}>
              {t(n.key)}
            </NavLink>
          ))}
        </nav>
        <LanguageSelect />
        <span data-testid="who">
          {me.username}
          {admin ? ` (${t('role.admin')})` : ''}
        </span>
        <Button
          data-testid="logout"
          onClick={() => {
            void api.post('logout').finally(signedOut);
          }}
        >
          {t('account.signOut')}
        </Button>
      </Layout.Header>
      <Layout.Content style={{ padding: '0 24px 24px' }}>
        <StatusLine />
        <Suspense fallback={<Spin />}>
          <Outlet />
        </Suspense>
      </Layout.Content>
    </Layout>
  );
}

function AdminOnly() {
  const me = useSession((s) => s.me);
  return isAdmin(me) ? <Outlet /> : <Navigate to="/devices" replace />;
}

function Public({ children }: { children: React.ReactNode }) {
  const me = useSession((s) => s.me);
  const loc = useLocation();
  // already signed in: `?next=` (where the tunnel sent the browser) goes back to that console
  const next = me ? safeNext(loc.search) : null;
  useEffect(() => {
    if (next) location.assign(next);
  }, [next]);
  if (me === undefined || next) return <Spin />;
  if (me) return <Navigate to={`/devices${loc.search}`} replace />;
  return (
    <div style={{ maxWidth: 480, margin: '40px auto', padding: '0 16px' }}>
      <div style={{ display: 'flex', justifyContent: 'space-between', alignItems: 'center' }}>
        <h1 style={{ fontSize: 22 }}>
          <FleetTitle />
        </h1>
        <LanguageSelect />
      </div>
      <StatusLine />
      <Suspense fallback={<Spin />}>{children}</Suspense>
    </div>
  );
}

function FleetTitle() {
  return <>{useT()('app.title')}</>;
}

export function FleetRoutes() {
  return (
    <Routes>
      <Route
        path="/signin"
        element={
          <Public>
            <SignInPage />
          </Public>
        }
      />
      <Route
        path="/signup"
        element={
          <Public>
            <SignUpPage />
          </Public>
        }
      />
      <Route element={<Shell />}>
        <Route path="/devices" element={<DevicesPage />} />
        <Route path="/wall" element={<WallPage />} />
        <Route path="/jobs" element={<JobsPage />} />
        <Route path="/jobs/:id" element={<JobPage />} />
        <Route path="/events" element={<EventsPage />} />
        <Route path="/account" element={<AccountPage />} />
        <Route element={<AdminOnly />}>
          <Route path="/files" element={<FilesPage />} />
          <Route path="/admin/users" element={<UsersPage />} />
          <Route path="/admin/groups" element={<GroupsPage />} />
          <Route path="/admin/alerts" element={<AlertsPage />} />
        </Route>
        <Route path="*" element={<Navigate to="/devices" replace />} />
      </Route>
    </Routes>
  );
}

export function FleetApp() {
  const lang = useFleetLanguage();
  const locale = useAntdLocale(lang);
  const reducedMotion = usePrefersReducedMotion();
  useEffect(() => {
    document.documentElement.lang = lang;
  }, [lang]);
  useEffect(() => {
    void loadMe();
  }, []);
  return (
    <ConfigProvider locale={locale} theme={{ token: { motion: !reducedMotion } }}>
      <BrowserRouter>
        <FleetRoutes />
      </BrowserRouter>
    </ConfigProvider>
  );
}

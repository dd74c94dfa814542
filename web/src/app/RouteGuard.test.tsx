import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MemoryRouter, Route, Routes, useLocation } from 'react-router';
import { STORAGE_KEYS } from '@kvm/protocol/constants';
import { envelope, stubFetch } from '../test/fetch-stub';
import { flush, render, type Rendered } from '../test/render';
import { INITIAL_SESSION, useSession } from '../features/session/session-store';
import { RouteGuard } from './RouteGuard';

function Where() {
  const { pathname, search } = useLocation();
  return <div data-testid="where">{pathname + search}</div>;
}

function app(entry: string) {
  const page = (id: string) => (
    <>
      <div data-testid={id} />
      <Where />
    </>
  );
  return (
    <MemoryRouter initialEntries={[entry]}>
      <Routes>
        <Route element={<RouteGuard />}>
          <Route path="/login" element={page('login')} />
          <Route path="/init" element={page('init')} />
          <Route path="/" element={page('main')} />
          <Route path="/kvm" element={page('main')} />
          <Route path="*" element={page('no-permission')} />
        </Route>
      </Routes>
    </MemoryRouter>
  );
}

describe('RouteGuard', () => {
  let view: Rendered | undefined;
  beforeEach(() => {
    localStorage.clear();
    useSession.setState(INITIAL_SESSION, true);
  });
  afterEach(() => {
    view?.unmount();
    vi.unstubAllGlobals();
  });

  it('shows the loading spinner while the init status is unknown', async () => {
    view = await render(app('/kvm'));
    expect(view.byTestId('app-loading')?.textContent).toContain('Loading');
    expect(view.byTestId('main')).toBeNull();
  });

  it('stores ?id as the token, checks the login and lands on /login when it fails', async () => {
    const { requests } = stubFetch({
      '/api/auth/check': () => envelope(401, { error: 'UnauthorizedError' }),
    });
    useSession.setState({ isInited: true });
    view = await render(app('/kvm?id=abc&embedded=1'));
    await flush();
    expect(localStorage.getItem(STORAGE_KEYS.authToken)).toBe('abc');
    expect(requests[0]?.headers.token).toBe('abc');
    expect(view.byTestId('where')?.textContent).toBe('/login?embedded=1');
  });

  it('opens the page when the login check succeeds', async () => {
    stubFetch({ '/api/auth/check': () => envelope(200, { user: 'admin' }) });
    useSession.setState({ isInited: true });
    view = await render(app('/'));
    await flush();
    expect(view.byTestId('main')).not.toBeNull();
  });

  it('sends a device that is not initialised to /init with the query', async () => {
    useSession.setState({ isInited: false });
    view = await render(app('/login?embedded=1'));
    await flush();
    expect(view.byTestId('where')?.textContent).toBe('/init?embedded=1');
  });

  it('shows the no-permission page for unknown paths without a login check', async () => {
    const { requests } = stubFetch({});
    useSession.setState({ isInited: true });
    view = await render(app('/whatever'));
    await flush();
    expect(view.byTestId('no-permission')).not.toBeNull();
    expect(requests).toHaveLength(0);
  });
});

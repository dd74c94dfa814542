import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AppRoot } from '../../app/App';
import { setBaseMetaForTests } from '../../lib/base';
import { envelope, stubFetch } from '../../test/fetch-stub';
import { flush, render, type Rendered } from '../../test/render';
import { INITIAL_SESSION, useSession } from '../session/session-store';
import { handleSessionLost, resetSessionLostForTests } from '../session/session-actions';
import { terminalUrl } from '../terminal/ttyd-codec';

const HTTPS = { protocol: 'https:', host: 'fleet.example' };

afterEach(() => {
  setBaseMetaForTests(null);
  resetSessionLostForTests();
  vi.restoreAllMocks();
});

describe('the console under a fleet path: the features', () => {
  it('opens the terminal socket under the base, and at the root without one', () => {
    expect(terminalUrl('device', HTTPS)).toBe('wss://fleet.example/api/terminal/ws?target=device');
    setBaseMetaForTests('/d/dev1');
    expect(terminalUrl('serial', HTTPS)).toBe(
      'wss://fleet.example/d/dev1/api/terminal/ws?target=serial',
    );
  });

  it('a lost session reloads the device console root; /upgrading is still recognised', () => {
    setBaseMetaForTests('/d/dev1');
    const assign = vi.fn();
    expect(handleSessionLost('/d/dev1/upgrading', assign)).toBe(false);
    expect(assign).not.toHaveBeenCalled();
    const go = vi.spyOn(window.location, 'assign').mockImplementation(() => undefined);
    expect(handleSessionLost('/d/dev1/kvm')).toBe(true);
    expect(go).toHaveBeenCalledWith('/d/dev1/');
  });
});

describe('the router under a fleet path', () => {
  let view: Rendered | undefined;
  beforeEach(() => {
    localStorage.clear();
    useSession.setState(INITIAL_SESSION, true);
  });
  afterEach(() => {
    view?.unmount();
    view = undefined;
    vi.unstubAllGlobals();
    window.history.replaceState(null, '', '/');
  });

  it('routes below /d/<id>: the login check answers, no login page; a refused one goes to /d/<id>/login', async () => {
    setBaseMetaForTests('/d/dev1');
    // The fleet attached the device's session: the check succeeds without any stored token.
    const { requests } = stubFetch({
      '/d/dev1/api/auth/check': () => envelope(200, { user: 'admin' }),
    });
    useSession.setState({ isInited: true });
    window.history.replaceState(null, '', '/d/dev1/kvm?ice=relay');
    view = await render(<AppRoot />);
    await vi.waitFor(() => expect(useSession.getState().isLoggedIn).toBe(true));
    expect(requests.map((r) => [r.path, r.headers.token])).toEqual([
      ['/d/dev1/api/auth/check', undefined],
    ]);
    expect(window.location.pathname).toBe('/d/dev1/kvm');
    view.unmount();
    view = undefined;

    useSession.setState({ ...INITIAL_SESSION, isInited: true, isLoggedIn: false });
    window.history.replaceState(null, '', '/d/dev1/kvm?ice=relay');
    view = await render(<AppRoot />);
    await flush();
    expect(window.location.pathname).toBe('/d/dev1/login');
    expect(window.location.search).toBe('?ice=relay');
  });
});

import { describe, expect, it } from 'vitest';
import { decideNavigation, isProtectedPath, type GuardState } from './guard';

const inited = (isLoggedIn: boolean | null): GuardState => ({ isInited: true, isLoggedIn });
const notInited: GuardState = { isInited: false, isLoggedIn: null };

describe('decideNavigation (SPEC 2 navigation guard)', () => {
  it('waits while the init status is unknown', () => {
    expect(decideNavigation('/', '', { isInited: null, isLoggedIn: null })).toEqual({
      kind: 'wait',
    });
  });

  it('sends /init to / once initialised, keeping the query', () => {
    expect(decideNavigation('/init', '?embedded=1', inited(null))).toEqual({
      kind: 'redirect',
      to: '/?embedded=1',
    });
    expect(decideNavigation('/init', '', notInited)).toEqual({ kind: 'allow' });
  });

  it('sends everything to /init while not initialised, keeping the query', () => {
    for (const path of ['/', '/kvm', '/login', '/twofactor', '/upgrading', '/nope']) {
      expect(decideNavigation(path, '?a=1&b=2', notInited)).toEqual({
        kind: 'redirect',
        to: '/init?a=1&b=2',
      });
    }
  });

  it('lets public pages and unknown paths through without a login', () => {
    for (const path of ['/login', '/twofactor', '/some/other/path']) {
      expect(decideNavigation(path, '', inited(false))).toEqual({ kind: 'allow' });
      expect(decideNavigation(path, '', inited(null))).toEqual({ kind: 'allow' });
    }
  });

  it('sends a known logged-out user to /login with the query (minus the consumed id)', () => {
    expect(decideNavigation('/kvm', '?embedded=1&id=abc', inited(false))).toEqual({
      kind: 'redirect',
      to: '/login?embedded=1',
    });
    expect(decideNavigation('/', '', inited(false))).toEqual({ kind: 'redirect', to: '/login' });
  });

  it('asks for a login check when the status is unknown, passing the id token', () => {
    expect(decideNavigation('/', '?id=tok123', inited(null))).toEqual({
      kind: 'checkLogin',
      token: 'tok123',
    });
    expect(decideNavigation('/upgrading', '', inited(null))).toEqual({
      kind: 'checkLogin',
      token: null,
    });
  });

  it('allows protected pages when logged in, trailing slash or not', () => {
    for (const path of ['/', '', '/kvm', '/kvm/', '/upgrading']) {
      expect(decideNavigation(path, '', inited(true))).toEqual({ kind: 'allow' });
    }
  });

  it('knows which paths need a login', () => {
    expect(isProtectedPath('/kvm/')).toBe(true);
    expect(isProtectedPath('/login')).toBe(false);
    expect(isProtectedPath('/other')).toBe(false);
  });
});

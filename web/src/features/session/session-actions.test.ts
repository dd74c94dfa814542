import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { INIT_RETRY_MS, STORAGE_KEYS } from '@kvm/protocol/constants';
import { envelope, stubFetch } from '../../test/fetch-stub';
import { getEmbed } from '../../lib/embed';
import {
  checkInit,
  checkLogin,
  completeLogin,
  handleSessionLost,
  loginWithPassword,
  loginWithTwoFa,
  logout,
  resetSessionLostForTests,
  takeLoginExpiredFlag,
} from './session-actions';
import { INITIAL_SESSION, useSession } from './session-store';

const TOKEN = 'c'.repeat(64);

describe('session actions', () => {
  beforeEach(() => {
    localStorage.clear();
    sessionStorage.clear();
    useSession.setState(INITIAL_SESSION, true);
    resetSessionLostForTests();
  });
  afterEach(() => {
    vi.unstubAllGlobals();
    vi.useRealTimers();
    vi.restoreAllMocks();
  });

  describe('checkInit', () => {
    it('retries every 2 s while the device answers 502, then stores the answer', async () => {
      vi.useFakeTimers();
      let answers = 0;
      const { requests } = stubFetch({
        '/api/init/is_inited': () => {
          answers += 1;
          return answers < 3
            ? new Response('Bad Gateway', { status: 502 })
            : envelope(200, { is_inited: false, country_code: 'CN' });
        },
      });
      const done = checkInit();
      await vi.advanceTimersByTimeAsync(0);
      expect(requests).toHaveLength(1);
      expect(useSession.getState().loading.init).toBe(true);
      await vi.advanceTimersByTimeAsync(INIT_RETRY_MS - 1);
      expect(requests).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(1);
      expect(requests).toHaveLength(2);
      await vi.advanceTimersByTimeAsync(INIT_RETRY_MS);
      await expect(done).resolves.toBe(false);
      expect(requests).toHaveLength(3);
      expect(useSession.getState()).toMatchObject({
        isInited: false,
        countryCode: 'CN',
        loading: { init: false },
      });
    });

    it('retries when the device does not answer at all', async () => {
      vi.useFakeTimers();
      let calls = 0;
      vi.stubGlobal(
        'fetch',
        vi.fn(async () => {
          calls += 1;
          if (calls === 1) throw new TypeError('Failed to fetch');
          return envelope(200, { is_inited: true, country_code: 'US' });
        }),
      );
      const done = checkInit();
      await vi.advanceTimersByTimeAsync(INIT_RETRY_MS);
      await expect(done).resolves.toBe(true);
      expect(calls).toBe(2);
    });

    it('counts a device without the init routes (404) as initialised', async () => {
      stubFetch({});
      await expect(checkInit()).resolves.toBe(true);
      expect(useSession.getState().isInited).toBe(true);
    });
  });

  describe('checkLogin', () => {
    it('stores the id token, sends it and logs in on 200', async () => {
      const { requests } = stubFetch({ '/api/auth/check': () => envelope(200, { user: 'admin' }) });
      await expect(checkLogin(TOKEN)).resolves.toBe(true);
      expect(localStorage.getItem(STORAGE_KEYS.authToken)).toBe(TOKEN);
      expect(requests[0]?.headers.token).toBe(TOKEN);
      expect(useSession.getState()).toMatchObject({
        isLoggedIn: true,
        userInfo: { user: 'admin' },
      });
    });

    it('marks the session logged out on failure and forgets a refused token', async () => {
      stubFetch({
        '/api/auth/check': () => envelope(403, { error: 'ForbiddenError', error_msg: 'Forbidden' }),
      });
      await expect(checkLogin(TOKEN)).resolves.toBe(false);
      expect(useSession.getState().isLoggedIn).toBe(false);
      expect(localStorage.getItem(STORAGE_KEYS.authToken)).toBeNull();
    });

    it('runs one check at a time', async () => {
      const { requests } = stubFetch({ '/api/auth/check': () => envelope(200, { user: 'admin' }) });
      await Promise.all([checkLogin(null), checkLogin(null)]);
      expect(requests).toHaveLength(1);
    });

    it('redirects to the root when a logged-in session gets 401', async () => {
      const assign = vi.spyOn(window.location, 'assign').mockImplementation(() => undefined);
      useSession.setState({ isLoggedIn: true });
      stubFetch({ '/api/auth/check': () => envelope(401, { error: 'UnauthorizedError' }) });
      await checkLogin(null);
      expect(assign).toHaveBeenCalledWith('/');
    });
  });

  describe('handleSessionLost', () => {
    it('redirects once, and never on /upgrading', () => {
      const assign = vi.fn();
      expect(handleSessionLost('/upgrading', assign)).toBe(false);
      expect(assign).not.toHaveBeenCalled();
      expect(handleSessionLost('/kvm', assign)).toBe(true);
      expect(handleSessionLost('/kvm', assign)).toBe(false);
      expect(assign).toHaveBeenCalledTimes(1);
      expect(assign).toHaveBeenCalledWith('/');
      // The login page says why, once.
      expect(takeLoginExpiredFlag()).toBe(true);
      expect(takeLoginExpiredFlag()).toBe(false);
    });
  });

  describe('login', () => {
    it('posts the form user/passwd', async () => {
      const { requests } = stubFetch({ '/api/auth/login': () => envelope(200, { token: TOKEN }) });
      await expect(loginWithPassword('secret1')).resolves.toEqual({ token: TOKEN });
      expect(requests[0]?.method).toBe('POST');
      expect(Object.fromEntries(new URLSearchParams(requests[0]?.body))).toEqual({
        user: 'admin',
        passwd: 'secret1',
      });
    });

    it('posts user/passwd/code/remember for 2FA', async () => {
      const { requests } = stubFetch({
        '/api/auth/login_with_2fa': () => envelope(200, { token: TOKEN }),
      });
      await loginWithTwoFa('secret1', '123456', true);
      await loginWithTwoFa('secret1', '123456', false);
      const bodies = requests.map((r) => Object.fromEntries(new URLSearchParams(r.body)));
      expect(bodies[0]).toEqual({
        user: 'admin',
        passwd: 'secret1',
        code: '123456',
        remember: '1',
      });
      expect(bodies[1]?.remember).toBe('0');
    });

    it('completeLogin keeps the token, tells the host and logs the session in', () => {
      const post = vi.spyOn(getEmbed(), 'post');
      completeLogin({ token: TOKEN });
      expect(localStorage.getItem(STORAGE_KEYS.authToken)).toBe(TOKEN);
      expect(post).toHaveBeenCalledWith({ type: 'login_success', token: TOKEN });
      expect(useSession.getState()).toMatchObject({
        isLoggedIn: true,
        userInfo: { user: 'admin' },
      });
    });
  });

  describe('logout', () => {
    it('calls logout, clears the token and reloads to the root, even if the call fails', async () => {
      localStorage.setItem(STORAGE_KEYS.authToken, TOKEN);
      const { requests } = stubFetch({
        '/api/auth/logout': () => envelope(500, { error: 'InternalError' }),
      });
      const assign = vi.fn();
      await logout(assign);
      expect(requests[0]).toMatchObject({ path: '/api/auth/logout', method: 'POST' });
      expect(localStorage.getItem(STORAGE_KEYS.authToken)).toBeNull();
      expect(assign).toHaveBeenCalledWith('/');
    });
  });
});

/** Session calls of SPEC 2/3/4: init check, login check, login, logout, session lost. */
import { ADMIN_USER, INIT_RETRY_MS } from '@kvm/protocol/constants';
import type { AuthCheckResult, InitStatus, LoginResult, TwoFaStatus } from '@kvm/protocol/api';
import { api, ApiError, isAuthDenied, NetworkError } from '../../lib/api';
import { assignPath, stripBase } from '../../lib/base';
import { getEmbed } from '../../lib/embed';
import { clearAuthToken, setAuthToken } from '../../lib/storage';
import { normalizePath } from '../../lib/path';
import { INITIAL_SESSION, setLoading, useSession } from './session-store';

/**
 * GET /api/2fa/is_enabled. `trusted` tells whether this browser carries a valid
 * remember-this-device cookie (docs/api.md); a kvmd device leaves it out.
 */
export type TwoFaState = Omit<TwoFaStatus, 'trusted'> & { trusted?: boolean };

/** SPEC 2: 502 means the device is still starting. A failed fetch is the same situation. */
export function shouldRetryInit(err: unknown): boolean {
  return (err instanceof ApiError && err.status === 502) || err instanceof NetworkError;
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * GET /api/init/is_inited until it answers; retried every 2 s (INIT_RETRY_MS) while the device
 * answers 502 or not at all. Any other error counts as initialised (a kvmd without the GL init
 * routes answers 404): the login check decides what comes next.
 */
export async function checkInit(): Promise<boolean> {
  setLoading('init', true);
  for (;;) {
    try {
      const status = await api.get<InitStatus>('/init/is_inited');
      useSession.setState({
        isInited: status.is_inited === true,
        countryCode: status.country_code || INITIAL_SESSION.countryCode,
      });
      break;
    } catch (err) {
      if (shouldRetryInit(err)) {
        await delay(INIT_RETRY_MS);
        continue;
      }
      useSession.setState({ isInited: true });
      break;
    }
  }
  setLoading('init', false);
  return useSession.getState().isInited === true;
}

let sessionLostRedirected = false;
const LOGIN_EXPIRED_FLAG = 'kvm_login_expired';

/**
 * SPEC 4: a 401 or 403 on the auth check while logged in redirects once to the site root,
 * except on /upgrading (the device reboots there and sessions may drop on purpose).
 */
export function handleSessionLost(
  pathname: string = window.location.pathname,
  assign: (path: string) => void = assignPath,
): boolean {
  if (sessionLostRedirected || normalizePath(stripBase(pathname)) === '/upgrading') return false;
  sessionLostRedirected = true;
  try {
    sessionStorage.setItem(LOGIN_EXPIRED_FLAG, '1');
  } catch {
    // The login page simply does not say why.
  }
  assign('/');
  return true;
}

/** Read once by the login page: whether we got here because the session was lost. */
export function takeLoginExpiredFlag(): boolean {
  try {
    const set = sessionStorage.getItem(LOGIN_EXPIRED_FLAG) === '1';
    sessionStorage.removeItem(LOGIN_EXPIRED_FLAG);
    return set;
  } catch {
    return false;
  }
}

/** For tests. */
export function resetSessionLostForTests(): void {
  sessionLostRedirected = false;
}

/**
 * SPEC 2: store the token from the query (if any), then GET /api/auth/check. The guard turns
 * a failure (isLoggedIn = false) into a redirect to /login.
 */
let loginCheck: Promise<boolean> | null = null;

export function checkLogin(token: string | null): Promise<boolean> {
  // One check at a time (React runs effects twice in development).
  loginCheck ??= runLoginCheck(token).finally(() => {
    loginCheck = null;
  });
  return loginCheck;
}

async function runLoginCheck(token: string | null): Promise<boolean> {
  if (token) setAuthToken(token);
  const wasLoggedIn = useSession.getState().isLoggedIn === true;
  setLoading('auth', true);
  try {
    const userInfo = await api.get<AuthCheckResult>('/auth/check');
    useSession.setState({ isLoggedIn: true, userInfo });
    return true;
  } catch (err) {
    // A stored token the server refuses (403) would be sent again on every call: forget it.
    if (err instanceof ApiError && err.status === 403) clearAuthToken();
    useSession.setState({ isLoggedIn: false, userInfo: null });
    if (wasLoggedIn && isAuthDenied(err)) handleSessionLost();
    return false;
  } finally {
    setLoading('auth', false);
  }
}

export async function fetchTwoFaState(): Promise<TwoFaState> {
  const state = await api.get<TwoFaState>('/2fa/is_enabled');
  useSession.setState({ twofaEnabled: state.enabled === true });
  return state;
}

/** POST /api/auth/login, form user/passwd (SPEC 7). */
export function loginWithPassword(password: string): Promise<Partial<LoginResult>> {
  return withLoginFlag(
    api.post<Partial<LoginResult>>('/auth/login', {
      form: { user: ADMIN_USER, passwd: password },
    }),
  );
}

/** POST /api/auth/login_with_2fa, form user/passwd/code/remember (docs/api.md). */
export function loginWithTwoFa(
  password: string,
  code: string,
  remember: boolean,
): Promise<Partial<LoginResult>> {
  return withLoginFlag(
    api.post<Partial<LoginResult>>('/auth/login_with_2fa', {
      form: { user: ADMIN_USER, passwd: password, code, remember: remember ? '1' : '0' },
    }),
  );
}

function withLoginFlag<T>(call: Promise<T>): Promise<T> {
  setLoading('login', true);
  return call.finally(() => setLoading('login', false));
}

/**
 * SPEC 4: after a successful login the token is kept, the host app hears login_success, and the
 * session is logged in. (The caller navigates to '/' with the query kept; the protected shell
 * then loads the server-stored settings.)
 */
export function completeLogin(result: Partial<LoginResult>): void {
  // A PiKVM-style server answers {} and relies on the cookie alone.
  if (result.token) {
    setAuthToken(result.token);
    getEmbed().post({ type: 'login_success', token: result.token });
  }
  useSession.setState({ isLoggedIn: true, userInfo: { user: ADMIN_USER } });
}

/** SPEC 4: logout (after the caller's confirmation), then reload to the site root. */
export async function logout(assign: (path: string) => void = assignPath): Promise<void> {
  try {
    await api.post('/auth/logout');
  } catch {
    // The session may be gone already; the reload below ends it locally either way.
  }
  clearAuthToken();
  assign('/');
}

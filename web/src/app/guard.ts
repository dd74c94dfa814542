/**
 * Navigation guard of SPEC 2 as a pure decision: (path, query, session state) → what to do.
 * The RouteGuard component performs the decision (redirect, login check, spinner).
 */
import { normalizePath } from '../lib/path';

/** SPEC 6: login is required except on these. */
export const PUBLIC_PATHS: readonly string[] = ['/login', '/init', '/twofactor'];

/** Routes of SPEC 2 that need a login; any other path is the no-permission page. */
export const PROTECTED_PATHS: readonly string[] = ['/', '/kvm', '/upgrading'];

/** The query parameter whose value is stored as the auth token (SPEC 2). */
export const TOKEN_QUERY_PARAM = 'id';

export interface GuardState {
  /** null while the init check has not answered. */
  isInited: boolean | null;
  /** null while the login status is not known. */
  isLoggedIn: boolean | null;
}

export type GuardDecision =
  /** Init status unknown: keep the loading spinner. */
  | { kind: 'wait' }
  | { kind: 'allow' }
  | { kind: 'redirect'; to: string }
  /** Login status unknown: store `token` (if any) as the auth token, then check the login. */
  | { kind: 'checkLogin'; token: string | null };

export function isProtectedPath(pathname: string): boolean {
  return PROTECTED_PATHS.includes(normalizePath(pathname));
}

function withQuery(path: string, query: URLSearchParams): string {
  const search = query.toString();
  return search ? `${path}?${search}` : path;
}

/**
 * The query for /login: everything kept except `id`, which was already consumed as a token
 * (keeping a token that failed would store it again on the next visit).
 */
function loginQuery(query: URLSearchParams): URLSearchParams {
  const next = new URLSearchParams(query);
  next.delete(TOKEN_QUERY_PARAM);
  return next;
}

export function decideNavigation(
  pathname: string,
  search: string,
  state: GuardState,
): GuardDecision {
  const path = normalizePath(pathname);
  const query = new URLSearchParams(search);
  if (state.isInited === null) return { kind: 'wait' };

  // SPEC 2: on /init, an initialised device goes to '/'.
  if (path === '/init') {
    return state.isInited ? { kind: 'redirect', to: withQuery('/', query) } : { kind: 'allow' };
  }
  // SPEC 2: a device that is not initialised goes to /init, keeping the query.
  if (!state.isInited) return { kind: 'redirect', to: withQuery('/init', query) };

  // Public pages and the no-permission page (any unknown path) need no login.
  if (!PROTECTED_PATHS.includes(path)) return { kind: 'allow' };

  // SPEC 2: known to be logged out → /login, keeping the query.
  if (state.isLoggedIn === false) {
    return { kind: 'redirect', to: withQuery('/login', loginQuery(query)) };
  }
  // SPEC 2: unknown → store `id` as the token and check; the check's failure sets
  // isLoggedIn = false, which lands in the branch above.
  if (state.isLoggedIn === null) {
    const token = query.get(TOKEN_QUERY_PARAM);
    return { kind: 'checkLogin', token: token ? token : null };
  }
  return { kind: 'allow' };
}

/**
 * The session check in front of every route and socket. Routes that SPEC.md names as public
 * say so with `config: { public: true }`; everything else needs credentials. The first source
 * present decides (GL kvmd order, wire-protocol.md 1.2): X-KVMD-User/X-KVMD-Passwd, `Token`
 * header, `?auth_token=`, cookie `auth_token`, `Authorization: Basic`. Present but wrong: 403;
 * none: 401. Basic (kvmd 4.82 and GL; never challenged with WWW-Authenticate) is checked like
 * the X-KVMD headers: the same limiter, hash gate and one-minute cache of a verified
 * credential, the 2FA code appended to the password; a header that does not decode to
 * `user:password` is 401, as in kvmd.
 *
 * Cross-origin requests: a browser sends the cookie with a request that another page starts
 * (SameSite=Strict only keeps other SITES out; another port of the device's host is the same
 * site), so a request authenticated by the cookie must come from the console's own origin:
 * `Sec-Fetch-Site: cross-site` or `same-site`, or an `Origin` that is not the request's own
 * scheme://host:port, gets 403. That covers every WebSocket upgrade too (browsers always send
 * Origin there). Basic credentials get the same check: a browser that once had them (a
 * `user:password@` address) may attach them on its own. Token header, `?auth_token=` and
 * X-KVMD headers are not sent by a browser on its own, so they are not checked. Public routes
 * that change state (`sameOrigin: true`: login, first-run init) get the same check whatever
 * the credentials (login CSRF).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { BadRequestError, ForbiddenError, UnauthorizedError } from '../errors';
import type { AuthService, LoginFailure } from '../services/auth/auth-service';
import { hashToken } from '../services/auth/sessions';
import { clientIp } from './client-ip';
import type { RequestAuth } from './request-auth';

export const AUTH_COOKIE = 'auth_token';
export const TRUSTED_DEVICE_COOKIE = 'kvm_trusted_device';

export type { RequestAuth } from './request-auth';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** No session needed (SPEC 6: login, init, two-factor and the console's files). */
    public?: boolean;
    /** A public route that changes state: refused when a browser sends it from another origin. */
    sameOrigin?: boolean;
  }
}

function single(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

type Source =
  | { kind: 'headers'; user: string; passwd: string }
  | { kind: 'basic'; user: string; passwd: string }
  | { kind: 'malformed' }
  | { kind: 'token'; token: string; via: 'header' | 'query' | 'cookie' }
  | { kind: 'none' };

/** Which credential source the request carries (the first present). */
export function credentialSource(request: FastifyRequest): Source {
  const user = single(request.headers['x-kvmd-user']);
  const passwd = single(request.headers['x-kvmd-passwd']);
  if (user !== undefined && passwd !== undefined) return { kind: 'headers', user, passwd };
  const header = single(request.headers['token']);
  if (header !== undefined) return { kind: 'token', token: header, via: 'header' };
  const query = (request.query as Record<string, unknown> | undefined)?.['auth_token'];
  if (typeof query === 'string') return { kind: 'token', token: query, via: 'query' };
  if (Array.isArray(query)) return { kind: 'token', token: '', via: 'query' };
  const cookie = request.cookies?.[AUTH_COOKIE];
  if (cookie !== undefined) return { kind: 'token', token: cookie, via: 'cookie' };
  return basicCredentials(single(request.headers.authorization));
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * `Authorization: Basic base64(user:password)`; another scheme counts as no credentials. The
 * password is what follows the first colon (RFC 7617: a user name has none), so a password
 * with a colon works, where kvmd's split refuses it.
 */
export function basicCredentials(header: string | undefined): Source {
  if (header === undefined || header.slice(0, 6).toLowerCase() !== 'basic ')
    return { kind: 'none' };
  const encoded = header.slice(6).trim();
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(encoded) || encoded.length % 4 !== 0)
    return { kind: 'malformed' };
  let text: string;
  try {
    text = STRICT_UTF8.decode(Buffer.from(encoded, 'base64'));
  } catch {
    return { kind: 'malformed' };
  }
  const colon = text.indexOf(':');
  if (colon < 0) return { kind: 'malformed' };
  return { kind: 'basic', user: text.slice(0, colon), passwd: text.slice(colon + 1) };
}

/** The request's own origin, scheme://host[:port]; null when the Host header is unusable. */
function ownOrigin(request: FastifyRequest, trustProxy: boolean): string | null {
  let proto: string = request.protocol;
  let host = single(request.headers.host);
  if (trustProxy) {
    const fwdHost = single(request.headers['x-forwarded-host'])?.split(',')[0]?.trim();
    const fwdProto = single(request.headers['x-forwarded-proto'])?.split(',')[0]?.trim();
    if (fwdHost) host = fwdHost;
    if (fwdProto === 'http' || fwdProto === 'https') proto = fwdProto;
  }
  if (!host || /[/\\@?#\s]/.test(host)) return null;
  try {
    return new URL(`${proto}://${host}`).origin;
  } catch {
    return null;
  }
}

/** A header value as an error message may echo it: printable ASCII, at most 100 characters. */
function echo(value: string): string {
  const clean = value.replace(/[^\x20-\x7e]/g, '?');
  return clean.length > 100 ? `${clean.slice(0, 100)}...` : clean;
}

/**
 * What the proxy headers say, for a refusal behind a reverse proxy (issue 21, item 13): the
 * setting that makes them count (`server.trust_proxy`) and which of X-Forwarded-Host and
 * X-Forwarded-Proto came with the request.
 */
function proxyHint(request: FastifyRequest, trustProxy: boolean): string {
  const host = single(request.headers['x-forwarded-host'])?.split(',')[0]?.trim();
  const proto = single(request.headers['x-forwarded-proto'])?.split(',')[0]?.trim();
  const seen = [
    host ? `X-Forwarded-Host: ${echo(host)}` : null,
    proto ? `X-Forwarded-Proto: ${echo(proto)}` : null,
  ].filter((x): x is string => x !== null);
  const missing = [host ? null : 'X-Forwarded-Host', proto ? null : 'X-Forwarded-Proto'].filter(
    (x): x is string => x !== null,
  );
  if (!trustProxy) {
    if (seen.length > 0) {
      return (
        ` The request came through a proxy (${seen.join(', ')}), but server.trust_proxy is ` +
        'off, so this server does not take its origin from those headers: set ' +
        'server.trust_proxy: true in the device config (docs/operations.md, "Behind a reverse proxy").'
      );
    }
    return (
      ' Behind a reverse proxy, set server.trust_proxy: true in the device config and have the ' +
      'proxy send X-Forwarded-Host and X-Forwarded-Proto (this request has neither; ' +
      'docs/operations.md, "Behind a reverse proxy").'
    );
  }
  if (missing.length > 0) {
    return (
      ` server.trust_proxy is on, but the proxy did not send ${missing.join(' and ')}` +
      `${seen.length > 0 ? ` (only ${seen.join(', ')})` : ''}: it must send both ` +
      '(docs/operations.md, "Behind a reverse proxy").'
    );
  }
  return ` server.trust_proxy is on and the proxy sent ${seen.join(', ')}.`;
}

/**
 * Why a browser request comes from another origin, or null when it does not: the error message
 * of the refusal, which says what to set when the request came through a proxy.
 */
export function crossOrigin(request: FastifyRequest, trustProxy: boolean): string | null {
  const site = single(request.headers['sec-fetch-site']);
  if (site === 'cross-site' || site === 'same-site') {
    return `Cross-origin request refused: the browser sent it from another site (Sec-Fetch-Site: ${site})`;
  }
  const origin = single(request.headers.origin);
  if (origin === undefined) return null;
  let theirs: string;
  try {
    theirs = new URL(origin).origin;
  } catch {
    return 'Cross-origin request refused: the Origin header is not an origin';
  }
  // An opaque origin ("null": sandboxed frames, file:) is never the console.
  if (theirs === 'null') {
    return 'Cross-origin request refused: Origin null (a sandboxed frame or a local file) is never the console';
  }
  const own = ownOrigin(request, trustProxy);
  if (theirs === own) return null;
  return (
    `Cross-origin request refused: Origin ${echo(theirs)} is not this server's own origin ` +
    `${own === null ? '(the Host header is unusable)' : echo(own)}.${proxyHint(request, trustProxy)}`
  );
}

export function refuseCrossOrigin(request: FastifyRequest, trustProxy: boolean): void {
  const why = crossOrigin(request, trustProxy);
  if (why === null) return;
  request.log.debug({ why, url: request.url.split('?')[0] }, 'cross-origin request refused');
  throw new ForbiddenError(why);
}

/** Printable ASCII, at most 32 characters: a user name as the log may show it. */
export function logSafeUser(user: string): string {
  const clean = user.replace(/[^\x20-\x7e]/g, '?');
  return clean.length > 32 ? `${clean.slice(0, 32)}...` : clean;
}

/**
 * Logs each refused login once at warn (user, address, the factor that failed; never the
 * secret), within the anonymous-log budget; the line that starts a lock says so.
 */
export function loginFailureLogger(
  request: FastifyRequest,
  via: string,
): (failure: LoginFailure) => void {
  return (f) => {
    const budget = request.server.anonLog.take();
    if (!budget.ok) return;
    const fields = {
      user: logSafeUser(f.user),
      ip: f.ip,
      factor: f.factor,
      via,
      ...(budget.suppressed > 0 ? { suppressed: budget.suppressed } : {}),
    };
    if (f.lockStarted)
      request.log.warn({ ...fields, locked_s: f.lockedS }, 'login failed; address locked');
    else request.log.warn(fields, 'login failed');
  };
}

/**
 * Who guesses a secret, as the login limiter and its log see them: the client's address and a
 * logger of refusals under `via` (login, Basic, 2FA checks, the password change).
 */
export function askerOf(
  request: FastifyRequest,
  trustProxy: boolean,
  via: string,
): { ip: string; onFailure: (failure: LoginFailure) => void } {
  return { ip: clientIp(request, trustProxy), onFailure: loginFailureLogger(request, via) };
}

/** Resolves the request's credentials or throws 401/403. */
export async function authenticate(
  request: FastifyRequest,
  auth: AuthService,
  trustProxy: boolean,
): Promise<RequestAuth> {
  const source = credentialSource(request);
  if (source.kind === 'none' || source.kind === 'malformed') throw new UnauthorizedError();
  if (source.kind === 'headers' || source.kind === 'basic') {
    if (source.kind === 'basic') refuseCrossOrigin(request, trustProxy);
    const trusted = request.cookies?.[TRUSTED_DEVICE_COOKIE];
    // Password credentials count against the same rate limit and hash gate as the login form.
    try {
      await auth.verifyHeaderCredentials({
        user: source.user,
        passwd: source.passwd,
        trustedToken: trusted,
        ...askerOf(request, trustProxy, source.kind === 'basic' ? 'basic' : 'x-kvmd-headers'),
      });
    } catch (err) {
      if (err instanceof ForbiddenError || err instanceof BadRequestError)
        throw new ForbiddenError();
      throw err;
    }
    return { user: source.user, token: null, tokenHash: null };
  }
  if (source.via === 'cookie') refuseCrossOrigin(request, trustProxy);
  const session = /^[0-9a-f]{64}$/.test(source.token) ? auth.session(source.token) : null;
  if (!session) throw new ForbiddenError();
  return { user: session.user, token: source.token, tokenHash: hashToken(source.token) };
}

/** Public routes that take a body: a client may be told to send it at once. */
const PUBLIC_BODY_PATHS = new Set(['/api/auth/login', '/api/auth/login_with_2fa']);

/**
 * Whether to answer `Expect: 100-continue` with 100 before the request runs. Node says 100 to
 * everyone by default, so an anonymous client was invited to send a 1 GB body only to be refused
 * after it. Here only a request whose session is live (token header, `?auth_token=`, cookie),
 * one with X-KVMD or Basic credentials (checked with the request, as always), or one to a
 * public route that takes a body is invited; the others get their 401/403 without ever being
 * asked for the body, and their connection closes (app.ts).
 */
export function mayContinue(request: IncomingMessage, auth: AuthService): boolean {
  const headers = request.headers;
  const url = new URL(request.url ?? '/', 'http://device');
  if (PUBLIC_BODY_PATHS.has(url.pathname.replace(/\/+$/, ''))) return true;
  if (headers['x-kvmd-user'] !== undefined && headers['x-kvmd-passwd'] !== undefined) return true;
  if (basicCredentials(single(headers.authorization)).kind === 'basic') return true;
  const token =
    single(headers['token']) ??
    url.searchParams.get('auth_token') ??
    /(?:^|;\s*)auth_token=([^;]*)/.exec(single(headers.cookie) ?? '')?.[1];
  return token !== undefined && /^[0-9a-f]{64}$/.test(token) && auth.session(token) !== null;
}

export function registerAuthHook(
  app: FastifyInstance,
  auth: AuthService,
  trustProxy: boolean,
): void {
  app.decorateRequest('auth', null);
  // With a listener here Node no longer answers 100 by itself; the request then runs as usual.
  app.server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => {
    if (mayContinue(request, auth)) response.writeContinue();
    app.server.emit('request', request, response);
  });
  app.addHook('onRequest', async (request) => {
    const config = request.routeOptions.config;
    if (config?.public) {
      if (config.sameOrigin) refuseCrossOrigin(request, trustProxy);
      return;
    }
    // Unknown routes fall to the not-found handler, which answers without a session check only
    // for the console's own files (SPA fallback); /api paths still need credentials there.
    request.auth = await authenticate(request, auth, trustProxy);
  });
}

/**
 * The session check in front of every route and socket. Routes that SPEC.md names as public
 * say so with `config: { public: true }`; everything else needs credentials. The first source
 * present decides (GL kvmd order, wire-protocol.md 1.2): X-KVMD-User/X-KVMD-Passwd, `Token`
 * header, `?auth_token=`, cookie `auth_token`. Present but wrong: 403; none: 401.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ForbiddenError, UnauthorizedError } from '../errors';
import type { AuthService } from '../services/auth/auth-service';
import { hashToken } from '../services/auth/sessions';
import { clientIp } from './client-ip';

export const AUTH_COOKIE = 'auth_token';
export const TRUSTED_DEVICE_COOKIE = 'kvm_trusted_device';

export interface RequestAuth {
  user: string;
  /** The session token used, null for X-KVMD header credentials. */
  token: string | null;
  tokenHash: string | null;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** No session needed (SPEC 6: login, init, two-factor and the console's files). */
    public?: boolean;
  }
  interface FastifyRequest {
    auth: RequestAuth | null;
  }
}

function single(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

type Source =
  | { kind: 'headers'; user: string; passwd: string }
  | { kind: 'token'; token: string }
  | { kind: 'none' };

/** Which credential source the request carries (the first present). */
export function credentialSource(request: FastifyRequest): Source {
  const user = single(request.headers['x-kvmd-user']);
  const passwd = single(request.headers['x-kvmd-passwd']);
  if (user !== undefined && passwd !== undefined) return { kind: 'headers', user, passwd };
  const header = single(request.headers['token']);
  if (header !== undefined) return { kind: 'token', token: header };
  const query = (request.query as Record<string, unknown> | undefined)?.['auth_token'];
  if (typeof query === 'string') return { kind: 'token', token: query };
  if (Array.isArray(query)) return { kind: 'token', token: '' };
  const cookie = request.cookies?.[AUTH_COOKIE];
  if (cookie !== undefined) return { kind: 'token', token: cookie };
  return { kind: 'none' };
}

/** Resolves the request's credentials or throws 401/403. */
export async function authenticate(
  request: FastifyRequest,
  auth: AuthService,
  trustProxy: boolean,
): Promise<RequestAuth> {
  const source = credentialSource(request);
  if (source.kind === 'none') throw new UnauthorizedError();
  if (source.kind === 'headers') {
    const trusted = request.cookies?.[TRUSTED_DEVICE_COOKIE];
    // Header credentials count against the same rate limit as the login form.
    const ip = clientIp(request, trustProxy);
    try {
      await auth.login({
        user: source.user,
        passwd: source.passwd,
        expireS: 1,
        trustedToken: trusted,
        ip,
        dryRun: true,
      });
    } catch (err) {
      if (err instanceof ForbiddenError || (err as { status?: number }).status === 400)
        throw new ForbiddenError();
      throw err;
    }
    return { user: source.user, token: null, tokenHash: null };
  }
  const session = /^[0-9a-f]{64}$/.test(source.token) ? auth.session(source.token) : null;
  if (!session) throw new ForbiddenError();
  return { user: session.user, token: source.token, tokenHash: hashToken(source.token) };
}

export function registerAuthHook(
  app: FastifyInstance,
  auth: AuthService,
  trustProxy: boolean,
): void {
  app.decorateRequest('auth', null);
  app.addHook('onRequest', async (request) => {
    if (request.routeOptions.config?.public) return;
    // Unknown routes fall to the not-found handler, which answers without a session check only
    // for the console's own files (SPA fallback); /api paths still need credentials there.
    request.auth = await authenticate(request, auth, trustProxy);
  });
}

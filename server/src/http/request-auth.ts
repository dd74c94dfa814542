/**
 * `request.auth`: the credentials the auth hook (auth.ts) accepted for a request. Declared
 * here, with nothing else imported, so that code reading it (socket owners, the Janus
 * gateway) type-checks in programs that do not include the whole server (e2e, bench).
 */
export interface RequestAuth {
  user: string;
  /** The session token used, null for X-KVMD header or Basic credentials. */
  token: string | null;
  tokenHash: string | null;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the auth hook; null on public routes and before the hook ran. */
    auth: RequestAuth | null;
  }
}

/**
 * Walks the server's own route table: every route that is not public answers 401 without
 * credentials and 403 with a wrong token, whatever its method, so a new route can never ship
 * without the session check.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { initAndLogin, newApp } from '../test-helpers';

/** SPEC 6 / docs/api.md: the only routes reachable without a session. */
const PUBLIC = new Set([
  'GET /api/init/is_inited',
  'GET /api/init/init',
  'POST /api/auth/login',
  'POST /api/auth/login_with_2fa',
  'GET /api/auth/check',
  'GET /api/2fa/is_enabled',
  'GET /*',
]);

let app: FastifyInstance;
beforeAll(async () => {
  app = await newApp();
  await initAndLogin(app);
});
afterAll(async () => {
  await app.close();
});

function concrete(url: string): string {
  return url.replace(/\*$/, 'x').replace(/:(\w+)/g, 'x');
}

describe('auth matrix', () => {
  it('has the expected public routes and no others', () => {
    const publicRoutes = app.routeTable.filter((r) => r.public).map((r) => `${r.method} ${r.url}`);
    expect(new Set(publicRoutes)).toEqual(PUBLIC);
  });

  it('guards every other route: 401 without credentials, 403 with a wrong token', async () => {
    const guarded = app.routeTable.filter((r) => !r.public);
    expect(guarded.length).toBeGreaterThan(8);
    for (const route of guarded) {
      const method = route.method as 'GET' | 'POST';
      const url = concrete(route.url);
      const none = await app.inject({ method, url });
      expect(none.statusCode, `${route.method} ${route.url} without credentials`).toBe(401);
      expect(none.json().result.error).toBe('UnauthorizedError');
      const wrong = await app.inject({ method, url, headers: { token: '0'.repeat(64) } });
      expect(wrong.statusCode, `${route.method} ${route.url} with a wrong token`).toBe(403);
      const cookie = await app.inject({ method, url, cookies: { auth_token: 'nonsense' } });
      expect(cookie.statusCode, `${route.method} ${route.url} with a bad cookie`).toBe(403);
    }
  });

  it('guards unknown API paths too', async () => {
    for (const method of ['GET', 'POST', 'PUT', 'DELETE'] as const) {
      expect((await app.inject({ method, url: '/api/secret/thing' })).statusCode).toBe(401);
      expect((await app.inject({ method, url: '/janus/ws' })).statusCode).toBe(401);
    }
  });

  it('serves the console files without a session', async () => {
    const res = await app.inject('/login');
    expect([200, 503]).toContain(res.statusCode);
  });
});

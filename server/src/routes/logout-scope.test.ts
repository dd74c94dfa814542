/** Issue 13 item 8: `auth.logout_scope` token (GL, default) or user (PiKVM). */
import { afterEach, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { FAST_HASHER, newAuthApp } from '../services/auth/auth-test-kit';
import { initAndLogin, login, PASSWORD } from '../test-helpers';

let app: FastifyInstance | null = null;
afterEach(async () => {
  await app?.close();
  app = null;
});

async function alive(token: string): Promise<boolean> {
  const res = await app!.inject({ url: '/api/auth/check', headers: { token } });
  return res.statusCode === 200;
}

it('token (default): ends only the presented session', async () => {
  app = await newAuthApp({ passwords: FAST_HASHER });
  const a = await initAndLogin(app);
  const b = await login(app, PASSWORD);
  const res = await app.inject({
    method: 'POST',
    url: '/api/auth/logout',
    headers: { cookie: `auth_token=${a}` },
  });
  expect(res.statusCode).toBe(200);
  expect(res.headers['set-cookie']).toMatch(/auth_token=;/);
  expect(await alive(a)).toBe(false);
  expect(await alive(b)).toBe(true);
});

it("user: ends every session of the caller's user", async () => {
  app = await newAuthApp({ passwords: FAST_HASHER, overrides: { auth: { logout_scope: 'user' } } });
  const a = await initAndLogin(app);
  const b = await login(app, PASSWORD);
  const c = await login(app, PASSWORD);
  const res = await app.inject({ method: 'POST', url: '/api/auth/logout', headers: { token: a } });
  expect(res.statusCode).toBe(200);
  expect([await alive(a), await alive(b), await alive(c)]).toEqual([false, false, false]);
});

it('refuses an unknown scope in the config', async () => {
  await expect(
    newAuthApp({ passwords: FAST_HASHER, overrides: { auth: { logout_scope: 'all' } } }),
  ).rejects.toThrow();
});

/**
 * Walks the server's own route table: every route that is not public refuses every kind of dead
 * credential (none: 401; the rest: 403), whatever its method, and every WebSocket refuses the
 * upgrade on a real listening server, so a new route or socket can never ship without the
 * session check or the cross-origin check.
 */
import { request as httpRequest } from 'node:http';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { FAST_HASHER, newAuthApp, TestClock } from '../services/auth/auth-test-kit';
import { form, initAndLogin, login, newApp, tempDataDir } from '../test-helpers';

/** SPEC 6 / docs/api.md: the only routes reachable without a session. */
const PUBLIC = new Set([
  'GET /api/init/is_inited',
  'GET /api/init/init',
  'POST /api/auth/login',
  'POST /api/auth/login_with_2fa',
  'GET /api/auth/check',
  'GET /api/2fa/is_enabled',
  // The Redfish service root: public in kvmd and by the Redfish spec (python-redfish reads it first).
  'GET /redfish/v1',
  'GET /api/redfish/v1',
  'GET /*',
]);
/** Public routes that change state: refused from another origin whatever the credentials. */
const SAME_ORIGIN_PUBLIC = [
  'GET /api/init/init',
  'POST /api/auth/login',
  'POST /api/auth/login_with_2fa',
];
const SOCKETS = [
  '/api/ws',
  '/api/media/ws',
  '/janus/ws',
  '/api/terminal/ws',
  '/extras/webterm/ttyd/ws',
];

const OLD_PASSWORD = 'first password';
const NEW_PASSWORD = 'second password';

let app: FastifyInstance;
let base: string;
/** A live session, for the cross-origin cases and the positive controls. */
let live: string;
let expired: string;
let loggedOut: string;
let beforeChange: string;

interface Dead {
  name: string;
  headers?: Record<string, string>;
  cookies?: Record<string, string>;
  query?: string;
  status: 401 | 403;
}

let dead: Dead[] = [];

beforeAll(async () => {
  const clock = new TestClock();
  app = await newAuthApp({
    clock,
    passwords: FAST_HASHER,
    // Every wrong X-KVMD password below is a failed login; the lock is tested elsewhere.
    overrides: { auth: { rate_limit: { max_failures: 1_000_000 } } },
  });
  live = await initAndLogin(app, OLD_PASSWORD);
  beforeChange = await login(app, OLD_PASSWORD);
  loggedOut = await login(app, OLD_PASSWORD);
  await app.inject({ method: 'POST', url: '/api/auth/logout', headers: { token: loggedOut } });
  const short = await app.inject({
    method: 'POST',
    url: '/api/auth/login',
    ...form({ user: 'admin', passwd: OLD_PASSWORD, expire: '1' }),
  });
  expired = short.json().result.token as string;
  const changed = await app.inject({
    method: 'POST',
    url: `/api/init/change_password?user=admin&old_password=${encodeURIComponent(OLD_PASSWORD)}&new_password=${encodeURIComponent(NEW_PASSWORD)}`,
    headers: { token: live },
  });
  expect(changed.statusCode).toBe(200);
  clock.advance(2_000);
  await app.listen({ host: '127.0.0.1', port: 0 });
  base = `127.0.0.1:${(app.server.address() as AddressInfo).port}`;

  dead = [
    { name: 'no credentials', status: 401 },
    { name: 'garbage token', headers: { token: 'garbage' }, status: 403 },
    { name: 'unknown token', headers: { token: randomBytes(32).toString('hex') }, status: 403 },
    { name: 'expired token', headers: { token: expired }, status: 403 },
    { name: 'logged-out token', headers: { token: loggedOut }, status: 403 },
    { name: 'token from before a password change', headers: { token: beforeChange }, status: 403 },
    { name: 'unknown ?auth_token=', query: `auth_token=${'0'.repeat(64)}`, status: 403 },
    {
      name: 'wrong X-KVMD password',
      headers: { 'x-kvmd-user': 'admin', 'x-kvmd-passwd': OLD_PASSWORD },
      status: 403,
    },
    {
      name: 'wrong X-KVMD user',
      headers: { 'x-kvmd-user': 'root', 'x-kvmd-passwd': NEW_PASSWORD },
      status: 403,
    },
    {
      name: 'wrong Basic password',
      headers: {
        authorization: `Basic ${Buffer.from(`admin:${OLD_PASSWORD}`).toString('base64')}`,
      },
      status: 403,
    },
    { name: 'malformed Basic', headers: { authorization: 'Basic %' }, status: 401 },
    { name: 'bad cookie', cookies: { auth_token: 'nonsense' }, status: 403 },
    { name: 'expired cookie', cookies: { auth_token: expired }, status: 403 },
    {
      name: 'valid cookie, foreign Origin',
      cookies: { auth_token: live },
      headers: { origin: 'http://127.0.0.1:1' },
      status: 403,
    },
    {
      name: 'valid cookie, Sec-Fetch-Site cross-site',
      cookies: { auth_token: live },
      headers: { 'sec-fetch-site': 'cross-site' },
      status: 403,
    },
    {
      name: 'valid cookie, Sec-Fetch-Site same-site',
      cookies: { auth_token: live },
      headers: { 'sec-fetch-site': 'same-site' },
      status: 403,
    },
  ];
});
afterAll(async () => {
  await app.close();
});

function concrete(url: string): string {
  return url.replace(/\*$/, 'x').replace(/:(\w+)/g, 'x');
}

function withQuery(url: string, query?: string): string {
  if (!query) return url;
  return `${url}${url.includes('?') ? '&' : '?'}${query}`;
}

function cookieHeader(cookies?: Record<string, string>): Record<string, string> {
  if (!cookies) return {};
  return {
    cookie: Object.entries(cookies)
      .map(([k, v]) => `${k}=${v}`)
      .join('; '),
  };
}

/** A WebSocket upgrade over a real connection: the status line the server answers. */
function upgrade(path: string, headers: Record<string, string>): Promise<number> {
  const [host, port] = base.split(':');
  return new Promise((resolve, reject) => {
    const req = httpRequest({
      // A fresh connection each time: the server closes one whose upgrade it refused.
      agent: false,
      host,
      port: Number(port),
      path,
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': randomBytes(16).toString('base64'),
        'sec-websocket-protocol': 'janus-protocol',
        ...headers,
      },
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve(res.statusCode ?? 101);
    });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', (e) => reject(new Error(`${path} ${JSON.stringify(headers)}: ${e.message}`)));
    req.end();
  });
}

describe('auth matrix', () => {
  it('has the expected public routes and no others', () => {
    const publicRoutes = app.routeTable.filter((r) => r.public).map((r) => `${r.method} ${r.url}`);
    expect(new Set(publicRoutes)).toEqual(PUBLIC);
  });

  it('has the expected sockets and no others', () => {
    const sockets = app.routeTable.filter((r) => r.websocket).map((r) => r.url);
    expect(new Set(sockets)).toEqual(new Set(SOCKETS));
  });

  it('refuses every dead credential on every other route', async () => {
    const guarded = app.routeTable.filter((r) => !r.public);
    expect(guarded.length).toBeGreaterThan(8);
    for (const route of guarded) {
      const method = route.method as 'GET' | 'POST';
      for (const d of dead) {
        const res = await app.inject({
          method,
          url: withQuery(concrete(route.url), d.query),
          headers: d.headers,
          cookies: d.cookies,
        });
        expect(res.statusCode, `${route.method} ${route.url}: ${d.name}`).toBe(d.status);
        expect(res.json().result.error, `${route.method} ${route.url}: ${d.name}`).toBe(
          d.status === 401 ? 'UnauthorizedError' : 'ForbiddenError',
        );
      }
    }
  });

  it('refuses the upgrade of every socket for every dead credential (never 101)', async () => {
    // The cross-origin cases only mean something while their cookie is a live session (a
    // cross-origin logout that got through above would have ended it).
    expect(
      (await app.inject({ url: '/api/auth/check', headers: { token: live } })).statusCode,
    ).toBe(200);
    for (const path of SOCKETS) {
      for (const d of dead) {
        const status = await upgrade(withQuery(path, d.query), {
          ...d.headers,
          ...cookieHeader(d.cookies),
        });
        expect(status, `${path}: ${d.name}`).toBe(d.status);
      }
    }
  });

  it('upgrades every socket for the console itself (the harness can see a 101)', async () => {
    for (const path of SOCKETS) {
      const viaCookie = await upgrade(path, {
        ...cookieHeader({ auth_token: live }),
        origin: `http://${base}`,
        'sec-fetch-site': 'same-origin',
      });
      expect(viaCookie, `${path} with the console's cookie`).toBe(101);
      expect(await upgrade(path, { token: live }), `${path} with a Token header`).toBe(101);
      const basic = `Basic ${Buffer.from(`admin:${NEW_PASSWORD}`).toString('base64')}`;
      expect(await upgrade(path, { authorization: basic }), `${path} with Basic`).toBe(101);
    }
  });

  it('refuses the public routes that change state when another origin sends them', async () => {
    for (const entry of SAME_ORIGIN_PUBLIC) {
      const [method, url] = entry.split(' ') as ['GET' | 'POST', string];
      for (const headers of [
        { origin: 'http://evil.example' },
        { 'sec-fetch-site': 'cross-site' },
        { 'sec-fetch-site': 'same-site' },
      ] as Array<Record<string, string>>) {
        const res = await app.inject({
          method,
          url,
          ...(method === 'POST' ? form({ user: 'admin', passwd: NEW_PASSWORD }) : {}),
          headers: { ...(method === 'POST' ? form({}).headers : {}), ...headers },
        });
        expect(res.statusCode, `${entry} ${JSON.stringify(headers)}`).toBe(403);
      }
    }
  });

  it('guards unknown API paths too', async () => {
    for (const method of ['GET', 'POST', 'PUT', 'DELETE'] as const) {
      expect((await app.inject({ method, url: '/api/secret/thing' })).statusCode).toBe(401);
      expect((await app.inject({ method, url: '/janus/ws' })).statusCode).toBe(401);
      expect(
        (
          await app.inject({
            method,
            url: '/api/secret/thing',
            cookies: { auth_token: live },
            headers: { 'sec-fetch-site': 'cross-site' },
          })
        ).statusCode,
      ).toBe(403);
    }
  });
});

describe('the console', () => {
  it('is served without a session', async () => {
    const webDir = join(await tempDataDir(), 'web');
    await mkdir(webDir);
    const marker = `console-${randomBytes(4).toString('hex')}`;
    await writeFile(join(webDir, 'index.html'), `<!doctype html><title>${marker}</title>`);
    const console = await newApp(undefined, { server: { web_dir: webDir } });
    try {
      const res = await console.inject('/login');
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.body).toContain(marker);
    } finally {
      await console.close();
    }
  });
});

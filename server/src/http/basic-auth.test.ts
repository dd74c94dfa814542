/**
 * Issue 13 item 2: `Authorization: Basic` as kvmd 4.82 and GL take it (wire-protocol.md 1.2),
 * sent the way the Home Assistant integrations and kvmd's own client send it: last in the
 * chain, no challenge, 2FA code appended to the password, counted by the login limiter, one
 * hash per credential a minute, and accepted by the WebSocket upgrades.
 */
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { FastifyInstance } from 'fastify';
import { CountingHasher, FAST_HASHER, newAuthApp, TestClock } from '../services/auth/auth-test-kit';
import { totp } from '../services/auth/totp';
import { initAndLogin, PASSWORD } from '../test-helpers';
import { basicCredentials } from './auth';
import { RawSockets } from './test-support';

let app: FastifyInstance | null = null;
const sockets = new RawSockets();
afterEach(async () => {
  sockets.destroyAll();
  await app?.close();
  app = null;
});

const basic = (user: string, passwd: string): string =>
  `Basic ${Buffer.from(`${user}:${passwd}`, 'utf8').toString('base64')}`;

/** What aiohttp's BasicAuth adds to a GET (HA integrations, kvmd's client). */
const aiohttpGet = (authorization: string): Record<string, string> => ({
  host: 'pikvm.local',
  accept: '*/*',
  'accept-encoding': 'gzip, deflate',
  'user-agent': 'Python/3.12 aiohttp/3.12.15',
  authorization,
});

async function check(headers: Record<string, string>, remoteAddress = '127.0.0.1') {
  if (!app) throw new Error('no app');
  return app.inject({ url: '/api/auth/check', headers, remoteAddress });
}

describe('parsing', () => {
  it('splits at the first colon and refuses what does not decode', () => {
    expect(basicCredentials(basic('admin', 'a:b c'))).toEqual({
      kind: 'basic',
      user: 'admin',
      passwd: 'a:b c',
    });
    expect(basicCredentials(`bAsIc ${Buffer.from('admin:x').toString('base64')}`).kind).toBe(
      'basic',
    );
    expect(basicCredentials('Bearer abc').kind).toBe('none');
    expect(basicCredentials(undefined).kind).toBe('none');
    expect(basicCredentials('Basic !!!!').kind).toBe('malformed');
    expect(basicCredentials('Basic YWRtaW4').kind).toBe('malformed'); // bad padding
    expect(basicCredentials(`Basic ${Buffer.from('admin').toString('base64')}`).kind).toBe(
      'malformed',
    );
    expect(
      basicCredentials(`Basic ${Buffer.from([0x61, 0x3a, 0xff]).toString('base64')}`).kind,
    ).toBe('malformed');
  });
});

describe('Basic on requests', () => {
  it('answers 200 with the right password, 403 wrong, 401 malformed; never challenges', async () => {
    app = await newAuthApp({ passwords: FAST_HASHER });
    await initAndLogin(app);
    const ok = await check(aiohttpGet(basic('admin', PASSWORD)));
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toEqual({ ok: true, result: { user: 'admin' } });
    expect(ok.headers['www-authenticate']).toBeUndefined();
    const atx = await app.inject({
      url: '/api/atx',
      headers: aiohttpGet(basic('admin', PASSWORD)),
    });
    expect(atx.statusCode).toBe(200);

    const wrong = await check(aiohttpGet(basic('admin', 'not it')));
    expect(wrong.statusCode).toBe(403);
    expect(wrong.json().result.error).toBe('ForbiddenError');
    expect((await check(aiohttpGet(basic('root', PASSWORD)))).statusCode).toBe(403);
    expect((await check(aiohttpGet(basic('Bad User!', PASSWORD)))).statusCode).toBe(403);
    const malformed = await check(aiohttpGet('Basic %%%'));
    expect(malformed.statusCode).toBe(401);
    expect(malformed.headers['www-authenticate']).toBeUndefined();
    expect((await check(aiohttpGet('Bearer x'))).statusCode).toBe(401);
  });

  it('comes last in GL order: any earlier source present decides', async () => {
    app = await newAuthApp({ passwords: FAST_HASHER });
    const token = await initAndLogin(app);
    const right = basic('admin', PASSWORD);
    const wrong = basic('admin', 'nope');
    // earlier source wrong, Basic right: 403 from the earlier one
    expect(
      (await check({ 'x-kvmd-user': 'admin', 'x-kvmd-passwd': 'x', authorization: right }))
        .statusCode,
    ).toBe(403);
    expect((await check({ token: '0'.repeat(64), authorization: right })).statusCode).toBe(403);
    expect(
      (await check({ cookie: `auth_token=${'1'.repeat(64)}`, authorization: right })).statusCode,
    ).toBe(403);
    // earlier source right, Basic wrong: 200
    expect((await check({ token, authorization: wrong })).statusCode).toBe(200);
    expect((await check({ cookie: `auth_token=${token}`, authorization: wrong })).statusCode).toBe(
      200,
    );
    if (!app) throw new Error('no app');
    const query = await app.inject({
      url: `/api/auth/check?auth_token=${token}`,
      headers: { authorization: wrong },
    });
    expect(query.statusCode).toBe(200);
  });

  it('refuses Basic from another origin, as the cookie', async () => {
    app = await newAuthApp({ passwords: FAST_HASHER });
    await initAndLogin(app);
    const res = await check({
      authorization: basic('admin', PASSWORD),
      origin: 'https://evil.example',
    });
    expect(res.statusCode).toBe(403);
  });

  it('takes the 2FA code appended to the password', async () => {
    const clock = new TestClock();
    app = await newAuthApp({ clock, passwords: FAST_HASHER });
    const token = await initAndLogin(app);
    const secret = (await app.inject({ url: '/api/2fa/create', headers: { token } })).json().result
      .secret as string;
    const on = await app.inject({
      url: `/api/2fa/init?secret=${secret}&key=${totp(secret, clock.t)}`,
      headers: { token },
    });
    expect(on.statusCode).toBe(200);
    clock.advance(30_000);
    expect((await check({ authorization: basic('admin', PASSWORD) })).statusCode).toBe(403);
    const withCode = basic('admin', `${PASSWORD}${totp(secret, clock.t)}`);
    expect((await check({ authorization: withCode })).statusCode).toBe(200);
  });

  it('counts wrong Basic passwords in the login limit and lock', async () => {
    app = await newAuthApp({
      passwords: FAST_HASHER,
      overrides: { auth: { rate_limit: { max_failures: 3 } } },
    });
    await initAndLogin(app);
    const ip = '192.0.2.7';
    const codes: number[] = [];
    for (let i = 0; i < 3; i += 1)
      codes.push((await check({ authorization: basic('admin', `guess ${i}`) }, ip)).statusCode);
    expect(codes).toEqual([403, 403, 429]);
    // locked: even the right password is refused from that address, also by the login form
    const right = await check({ authorization: basic('admin', PASSWORD) }, ip);
    expect(right.statusCode).toBe(429);
    expect(right.json().result.error).toBe('RateLimitError');
    const form = await app.inject({
      method: 'POST',
      url: '/api/auth/login',
      remoteAddress: ip,
      payload: `user=admin&passwd=${encodeURIComponent(PASSWORD)}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(form.statusCode).toBe(429);
    expect((await check({ authorization: basic('admin', PASSWORD) }, '192.0.2.8')).statusCode).toBe(
      200,
    );
  });

  it('hashes a credential sent on every request once, not per request', async () => {
    const hasher = new CountingHasher();
    app = await newAuthApp({ passwords: hasher });
    await initAndLogin(app);
    const before = hasher.verifications;
    const auth = aiohttpGet(basic('admin', PASSWORD));
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => app!.inject({ url: '/api/atx', headers: auth })),
    );
    expect(answers.every((r) => r.statusCode === 200)).toBe(true);
    for (let i = 0; i < 20; i += 1)
      expect((await app.inject({ url: '/api/hid', headers: auth })).statusCode).toBe(200);
    expect(hasher.verifications - before).toBe(1);
  });
});

describe('Basic on WebSocket upgrades and 100-continue', () => {
  async function listen(): Promise<number> {
    if (!app) throw new Error('no app');
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    if (!address || typeof address === 'string') throw new Error('no address');
    return address.port;
  }

  it('opens /api/ws with Basic (kvmd client) and refuses a wrong one', async () => {
    app = await newAuthApp({ passwords: FAST_HASHER });
    await initAndLogin(app);
    const port = await listen();
    const open = (authorization: string) =>
      new Promise<number | 'open'>((resolve) => {
        const ws = new WebSocket(`ws://127.0.0.1:${port}/api/ws?stream=0`, {
          headers: { authorization },
        });
        ws.on('open', () => {
          ws.close();
          resolve('open');
        });
        ws.on('unexpected-response', (_req, res) => {
          resolve(res.statusCode ?? 0);
          ws.terminate();
        });
        ws.on('error', () => undefined);
      });
    expect(await open(basic('admin', PASSWORD))).toBe('open');
    expect(await open(basic('admin', 'wrong'))).toBe(403);
  });

  it('invites the body of a request with Basic credentials', async () => {
    app = await newAuthApp({ passwords: FAST_HASHER });
    await initAndLogin(app);
    const port = await listen();
    const received = await sockets.headOnly(
      port,
      '/api/msd/write?image=a.iso',
      `Authorization: ${basic('admin', PASSWORD)}\r\n`,
    );
    await expect.poll(received, { timeout: 10_000 }).toMatch(/^HTTP\/1\.1 100 Continue\r\n/);
  });
});

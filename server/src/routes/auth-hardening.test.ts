/**
 * Issue 9 items 6, 7, 12, 16 and the auth defects found after them: TOTP codes are accepted
 * once; 2FA checks are rate-limited and turning 2FA off needs a code; cookie requests from
 * another origin are refused; exactly one first-run init wins; failed logins are logged once,
 * within the anonymous-log budget, without the secret.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { LogBudget } from '../http/log-budget';
import { LogSink, newAuthApp, TestClock } from '../services/auth/auth-test-kit';
import { totp } from '../services/auth/totp';
import { form, initAndLogin, login, newApp, PASSWORD } from '../test-helpers';

let app: FastifyInstance;
afterEach(async () => {
  await app?.close();
});

/** An app with 2FA on, the clock one step past the enabling code. */
async function withTwoFa(
  opts: { maxFailures?: number } = {},
): Promise<{ clock: TestClock; token: string; secret: string }> {
  const clock = new TestClock();
  app = await newAuthApp({
    clock,
    ...(opts.maxFailures
      ? { overrides: { auth: { rate_limit: { max_failures: opts.maxFailures } } } }
      : {}),
  });
  const token = await initAndLogin(app);
  const secret = (await app.inject({ url: '/api/2fa/create', headers: { token } })).json().result
    .secret as string;
  const res = await app.inject({
    url: `/api/2fa/init?secret=${secret}&key=${totp(secret, clock.t)}`,
    headers: { token },
  });
  expect(res.statusCode).toBe(200);
  return { clock, token, secret };
}

function loginWith2fa(code: string, remoteAddress = '127.0.0.1') {
  return app.inject({
    method: 'POST',
    url: '/api/auth/login_with_2fa',
    remoteAddress,
    ...form({ user: 'admin', passwd: PASSWORD, code }),
  });
}

describe('TOTP codes are accepted once', () => {
  it('refuses the code that enabled 2FA at login', async () => {
    const { clock, secret } = await withTwoFa();
    expect((await loginWith2fa(totp(secret, clock.t))).statusCode).toBe(403);
  });

  it('refuses a second use in login, login_with_2fa, X-KVMD headers and 2fa/verify', async () => {
    const { clock, secret, token } = await withTwoFa();
    clock.advance(30_000);
    const code = totp(secret, clock.t);
    await expect(login(app, PASSWORD + code)).resolves.toMatch(/^[0-9a-f]{64}$/);
    await expect(login(app, PASSWORD + code)).rejects.toThrow(/403/);
    expect((await loginWith2fa(code)).statusCode).toBe(403);
    expect(
      (
        await app.inject({
          url: '/api/info',
          headers: { 'x-kvmd-user': 'admin', 'x-kvmd-passwd': PASSWORD + code },
        })
      ).statusCode,
    ).toBe(403);
    expect(
      (await app.inject({ url: `/api/2fa/verify?code=${code}`, headers: { token } })).statusCode,
    ).toBe(403);
    // an earlier step's code (still inside the window) is refused too
    clock.advance(30_000);
    expect((await loginWith2fa(totp(secret, clock.t - 30_000))).statusCode).toBe(403);
    // the next code works once
    const fresh = totp(secret, clock.t);
    expect((await loginWith2fa(fresh)).statusCode).toBe(200);
    expect(
      (await app.inject({ url: `/api/2fa/verify?code=${fresh}`, headers: { token } })).statusCode,
    ).toBe(403);
  });
});

describe('2FA checks', () => {
  it('2fa/delete needs a current code: missing 400, wrong 403, right 200', async () => {
    const { clock, secret, token } = await withTwoFa();
    let res = await app.inject({ url: '/api/2fa/delete', headers: { token } });
    expect(res.statusCode).toBe(400);
    expect(res.json().result.error).toBe('ValidatorError');
    expect((await app.inject('/api/2fa/is_enabled')).json().result.enabled).toBe(true);
    res = await app.inject({ url: '/api/2fa/delete?code=12345', headers: { token } });
    expect(res.statusCode).toBe(400);
    clock.advance(30_000);
    const code = totp(secret, clock.t);
    const wrong = code === '000000' ? '000001' : '000000';
    res = await app.inject({ url: `/api/2fa/delete?code=${wrong}`, headers: { token } });
    expect(res.statusCode).toBe(403);
    expect(res.json().result.error).toBe('ForbiddenError');
    expect((await app.inject('/api/2fa/is_enabled')).json().result.enabled).toBe(true);
    res = await app.inject({ url: `/api/2fa/delete?code=${code}`, headers: { token } });
    expect(res.statusCode).toBe(200);
    expect((await app.inject('/api/2fa/is_enabled')).json().result.enabled).toBe(false);
  });

  it('counts wrong codes of 2fa/verify and 2fa/delete against the login limiter', async () => {
    const { clock, secret, token } = await withTwoFa({ maxFailures: 3 });
    clock.advance(30_000);
    const code = totp(secret, clock.t);
    const wrong = (i: number) => String((Number(code) + 1 + i) % 1_000_000).padStart(6, '0');
    expect(
      (await app.inject({ url: `/api/2fa/verify?code=${wrong(0)}`, headers: { token } }))
        .statusCode,
    ).toBe(403);
    expect(
      (await app.inject({ url: `/api/2fa/delete?code=${wrong(1)}`, headers: { token } }))
        .statusCode,
    ).toBe(403);
    const third = await app.inject({ url: `/api/2fa/verify?code=${wrong(2)}`, headers: { token } });
    expect(third.statusCode).toBe(429);
    expect(third.json().result.error).toBe('RateLimitError');
    // locked: the right code is refused too, and 2FA stays on
    expect(
      (await app.inject({ url: `/api/2fa/delete?code=${code}`, headers: { token } })).statusCode,
    ).toBe(429);
    expect((await app.inject('/api/2fa/is_enabled')).json().result.enabled).toBe(true);
  });
});

describe('first run', () => {
  it('lets exactly one of 10 concurrent inits win', async () => {
    app = await newApp();
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        app.inject(`/api/init/init?password=${encodeURIComponent(`password-${i}`)}`),
      ),
    );
    const codes = answers.map((r) => r.statusCode);
    expect(codes.filter((c) => c === 200)).toHaveLength(1);
    expect(codes.filter((c) => c === 403)).toHaveLength(9);
    const winner = codes.indexOf(200);
    await expect(login(app, `password-${winner}`)).resolves.toMatch(/^[0-9a-f]{64}$/);
    const loser = winner === 0 ? 1 : 0;
    await expect(login(app, `password-${loser}`)).rejects.toThrow(/403/);
  });
});

describe('cross-origin requests', () => {
  // inject's Host is localhost:80, so the console's own origin is http://localhost.
  const OWN = 'http://localhost';

  it('refuses cookie requests from another origin or site, keeps the console own ones', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const cookies = { auth_token: token };
    const ask = (headers: Record<string, string>, method: 'GET' | 'POST' = 'GET') =>
      app.inject({ method, url: '/api/info', cookies, headers });

    for (const headers of [
      { origin: 'http://localhost:8081' } as Record<string, string>,
      { origin: 'https://localhost' },
      { origin: 'http://evil.example' },
      { origin: 'null' },
      { origin: 'not a url' },
      { 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site' },
      { 'sec-fetch-site': 'same-site', origin: OWN },
    ]) {
      const res = await ask(headers);
      expect(res.statusCode, JSON.stringify(headers)).toBe(403);
      expect(res.json().result.error).toBe('ForbiddenError');
      expect(res.json().result.error_msg).toMatch(/^Cross-origin request refused: /);
    }
    for (const headers of [
      {} as Record<string, string>,
      { origin: OWN },
      { origin: 'http://localhost:80' },
      { 'sec-fetch-site': 'same-origin', origin: OWN },
      { 'sec-fetch-site': 'none' },
    ]) {
      expect((await ask(headers)).statusCode, JSON.stringify(headers)).toBe(200);
    }
    // a state-changing GET is refused before it runs
    const format = await app.inject({
      url: '/api/msd/partition_format',
      cookies,
      headers: { 'sec-fetch-site': 'same-site' },
    });
    expect(format.statusCode).toBe(403);
    // the console's session probe says the same
    expect(
      (
        await app.inject({
          url: '/api/auth/check',
          cookies,
          headers: { origin: 'http://localhost:9' },
        })
      ).statusCode,
    ).toBe(403);
  });

  it('does not check header-token, query-token and X-KVMD clients', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const foreign = { origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' };
    expect(
      (await app.inject({ url: '/api/info', headers: { token, ...foreign } })).statusCode,
    ).toBe(200);
    expect(
      (await app.inject({ url: `/api/info?auth_token=${token}`, headers: foreign })).statusCode,
    ).toBe(200);
    expect(
      (
        await app.inject({
          url: '/api/info',
          headers: { 'x-kvmd-user': 'admin', 'x-kvmd-passwd': PASSWORD, ...foreign },
        })
      ).statusCode,
    ).toBe(200);
  });

  it('uses X-Forwarded-Host/Proto for the own origin only with server.trust_proxy', async () => {
    const proxied = {
      origin: 'https://kvm.example',
      'x-forwarded-host': 'kvm.example',
      'x-forwarded-proto': 'https',
    };
    app = await newApp(undefined, { server: { trust_proxy: true } });
    let token = await initAndLogin(app);
    expect(
      (await app.inject({ url: '/api/info', cookies: { auth_token: token }, headers: proxied }))
        .statusCode,
    ).toBe(200);
    await app.close();
    app = await newApp();
    token = await initAndLogin(app);
    expect(
      (await app.inject({ url: '/api/info', cookies: { auth_token: token }, headers: proxied }))
        .statusCode,
    ).toBe(403);
  });

  it('behind a reverse proxy, the login refusal names server.trust_proxy and the X-Forwarded headers', async () => {
    // nginx in front: the browser is at https://kvm.example, the device sees http://kvm.example
    const loginVia = (headers: Record<string, string>) =>
      app.inject({
        method: 'POST',
        url: '/api/auth/login',
        payload: form({ user: 'admin', passwd: PASSWORD }).payload,
        headers: {
          ...form({}).headers,
          host: 'kvm.example',
          origin: 'https://kvm.example',
          'sec-fetch-site': 'same-origin',
          ...headers,
        },
      });
    const msg = async (headers: Record<string, string>) => {
      const res = await loginVia(headers);
      expect(res.statusCode).toBe(403);
      expect(res.json().result.error).toBe('ForbiddenError');
      return res.json().result.error_msg as string;
    };
    const both = { 'x-forwarded-host': 'kvm.example', 'x-forwarded-proto': 'https' };

    app = await newApp();
    await initAndLogin(app);
    // the proxy sends its headers, the setting is off: say which setting and what was seen
    expect(await msg(both)).toBe(
      "Cross-origin request refused: Origin https://kvm.example is not this server's own origin " +
        'http://kvm.example. The request came through a proxy (X-Forwarded-Host: kvm.example, ' +
        'X-Forwarded-Proto: https), but server.trust_proxy is off, so this server does not take ' +
        'its origin from those headers: set server.trust_proxy: true in the device config ' +
        '(docs/operations.md, "Behind a reverse proxy").',
    );
    // no header at all: both the setting and the headers are named
    const none = await msg({});
    expect(none).toContain('set server.trust_proxy: true');
    expect(none).toContain('X-Forwarded-Host and X-Forwarded-Proto (this request has neither');
    // what is echoed is bounded and printable
    const long = await msg({ 'x-forwarded-host': 'a'.repeat(5000) });
    expect(long.length).toBeLessThan(600);
    await app.close();

    app = await newApp(undefined, { server: { trust_proxy: true } });
    await initAndLogin(app);
    // the setting is on but the proxy forgot one header
    expect(await msg({ 'x-forwarded-host': 'kvm.example' })).toBe(
      "Cross-origin request refused: Origin https://kvm.example is not this server's own origin " +
        'http://kvm.example. server.trust_proxy is on, but the proxy did not send ' +
        'X-Forwarded-Proto (only X-Forwarded-Host: kvm.example): it must send both ' +
        '(docs/operations.md, "Behind a reverse proxy").',
    );
    // nginx's $host drops the port: the refusal shows what the proxy said
    expect(await msg({ ...both, origin: 'https://kvm.example:8443' })).toContain(
      'server.trust_proxy is on and the proxy sent X-Forwarded-Host: kvm.example, X-Forwarded-Proto: https',
    );
    // both headers and the setting: the login works
    const ok = await loginVia(both);
    expect(ok.statusCode).toBe(200);
  });

  it('refuses login and first-run init started by another origin (login CSRF)', async () => {
    app = await newApp();
    let res = await app.inject({
      url: `/api/init/init?password=${encodeURIComponent(PASSWORD)}`,
      headers: { 'sec-fetch-site': 'cross-site' },
    });
    expect(res.statusCode).toBe(403);
    expect((await app.inject('/api/init/is_inited')).json().result.is_inited).toBe(false);
    res = await app.inject({
      url: `/api/init/init?password=${encodeURIComponent(PASSWORD)}`,
      headers: { origin: OWN },
    });
    expect(res.statusCode).toBe(200);
    for (const headers of [
      { origin: 'http://localhost:3000' },
      { 'sec-fetch-site': 'same-site' },
    ]) {
      res = await app.inject({
        method: 'POST',
        url: '/api/auth/login',
        payload: form({ user: 'admin', passwd: PASSWORD }).payload,
        headers: { ...form({}).headers, ...headers },
      });
      expect(res.statusCode, JSON.stringify(headers)).toBe(403);
    }
    res = await app.inject({
      method: 'POST',
      url: '/api/auth/login',
      payload: form({ user: 'admin', passwd: PASSWORD }).payload,
      headers: { ...form({}).headers, origin: OWN, 'sec-fetch-site': 'same-origin' },
    });
    expect(res.statusCode).toBe(200);
    // a link from another site to the console still opens it
    res = await app.inject({ url: '/login', headers: { 'sec-fetch-site': 'cross-site' } });
    expect(res.statusCode).not.toBe(403);
  });
});

describe('failed logins are logged', () => {
  it('once at warn, without the secret; the lock once when it starts', async () => {
    const log = new LogSink();
    app = await newAuthApp({ log, overrides: { auth: { rate_limit: { max_failures: 3 } } } });
    await initAndLogin(app);
    const secretWords = ['hunter2-secret', 'hunter3-secret', 'hunter4-secret', 'hunter5-secret'];
    for (const passwd of secretWords) {
      await app.inject({
        method: 'POST',
        url: '/api/auth/login',
        ...form({ user: 'admin', passwd }),
      });
    }
    const failed = log.find('login failed');
    const locked = log.find('login failed; address locked');
    expect(failed).toHaveLength(2);
    expect(locked).toHaveLength(1);
    expect(failed[0]).toMatchObject({
      level: 40,
      user: 'admin',
      ip: '127.0.0.1',
      factor: 'password',
    });
    // the seconds still locked when the failure is logged, after the password check: on a
    // loaded machine that check alone can take over a second
    expect(locked[0]).toMatchObject({ level: 40 });
    const lockedS = (locked[0] as { locked_s: number }).locked_s;
    expect(lockedS).toBeGreaterThan(590);
    expect(lockedS).toBeLessThanOrEqual(600);
    for (const word of secretWords) expect(log.text).not.toContain(word);

    // a wrong user name is said so (the answer to the client stays a plain 403)
    await app.inject({
      method: 'POST',
      url: '/api/auth/login',
      remoteAddress: '127.0.0.2',
      ...form({ user: 'root', passwd: 'x' }),
    });
    expect(log.find('login failed').at(-1)).toMatchObject({ user: 'root', factor: 'user' });
  });

  it('within the anonymous-log budget, with the count of suppressed lines', async () => {
    // At info, as on a device: the error handler's debug lines then take nothing from the budget.
    const log = new LogSink('info');
    const clock = new TestClock();
    app = await newAuthApp({ log });
    await initAndLogin(app);
    app.anonLog = new LogBudget({ burst: 3, perMinute: 30, now: clock.now });
    const wrong = (i: number) =>
      app.inject({
        method: 'POST',
        url: '/api/auth/login',
        remoteAddress: `10.1.0.${i + 1}`,
        ...form({ user: 'admin', passwd: `wrong-${i}` }),
      });
    for (let i = 0; i < 8; i += 1) await wrong(i);
    expect(log.find('login failed')).toHaveLength(3);
    clock.advance(2_000);
    await wrong(9);
    const lines = log.find('login failed');
    expect(lines).toHaveLength(4);
    expect(lines[3]).toMatchObject({ suppressed: 5 });
  });
});

describe('user names and addresses', () => {
  it('refuses an over-long user name with a short message', async () => {
    app = await newApp();
    await initAndLogin(app);
    const res = await app.inject({
      method: 'POST',
      url: '/api/auth/login',
      ...form({ user: 'a'.repeat(100_000), passwd: 'x' }),
    });
    expect(res.statusCode).toBe(400);
    expect(res.body.length).toBeLessThan(300);
  });

  it('counts an IPv6 client by its /64, so rotating the interface id does not help', async () => {
    app = await newAuthApp({ overrides: { auth: { rate_limit: { max_failures: 3 } } } });
    await initAndLogin(app);
    const codes: number[] = [];
    for (let i = 1; i <= 4; i += 1) {
      const res = await app.inject({
        method: 'POST',
        url: '/api/auth/login',
        remoteAddress: `2001:db8:1:2::${i.toString(16)}`,
        ...form({ user: 'admin', passwd: `wrong-${i}` }),
      });
      codes.push(res.statusCode);
    }
    expect(codes).toEqual([403, 403, 429, 429]);
    // another /64 is not locked
    const other = await app.inject({
      method: 'POST',
      url: '/api/auth/login',
      remoteAddress: '2001:db8:1:3::1',
      ...form({ user: 'admin', passwd: PASSWORD }),
    });
    expect(other.statusCode).toBe(200);
  });
});

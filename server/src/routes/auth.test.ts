import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { newAuthApp, TestClock } from '../services/auth/auth-test-kit';
import { totp } from '../services/auth/totp';
import { form, initAndLogin, login, newApp, PASSWORD, tempDataDir } from '../test-helpers';

let app: FastifyInstance;
afterEach(async () => {
  await app?.close();
});

describe('first run', () => {
  it('initialises once and never resets an initialised device', async () => {
    app = await newApp();
    let res = await app.inject('/api/init/is_inited');
    expect(res.json()).toEqual({ ok: true, result: { is_inited: false, country_code: 'US' } });

    res = await app.inject('/api/init/init?password=abcd');
    expect(res.statusCode).toBe(400);
    expect(res.json().result.error).toBe('ValidatorError');
    expect(res.json().result.error_msg).toContain("'password'");
    expect(res.body).not.toContain('abcd');

    res = await app.inject('/api/init/init');
    expect(res.statusCode).toBe(400);

    res = await app.inject(`/api/init/init?password=${encodeURIComponent(PASSWORD)}`);
    expect(res.statusCode).toBe(200);
    expect((await app.inject('/api/init/is_inited')).json().result.is_inited).toBe(true);

    res = await app.inject('/api/init/init?password=another1');
    expect(res.statusCode).toBe(403);
    expect(res.json().result.error).toBe('ForbiddenError');
    // the first password still works, the second never took
    await expect(login(app, PASSWORD)).resolves.toMatch(/^[0-9a-f]{64}$/);
    await expect(login(app, 'another1')).rejects.toThrow(/403/);
  });

  it('refuses login before the device is initialised', async () => {
    app = await newApp();
    const res = await app.inject({
      method: 'POST',
      url: '/api/auth/login',
      ...form({ user: 'admin', passwd: 'whatever' }),
    });
    expect(res.statusCode).toBe(403);
  });
});

describe('login', () => {
  it('answers a token and an HttpOnly SameSite=Strict cookie', async () => {
    app = await newApp();
    await app.inject(`/api/init/init?password=${encodeURIComponent(PASSWORD)}`);
    const res = await app.inject({
      method: 'POST',
      url: '/api/auth/login',
      ...form({ user: 'admin', passwd: PASSWORD }),
    });
    expect(res.statusCode).toBe(200);
    const token = res.json().result.token as string;
    expect(token).toMatch(/^[0-9a-f]{64}$/);
    const cookie = String(res.headers['set-cookie']);
    expect(cookie).toContain(`auth_token=${token}`);
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Strict');
    expect(cookie).toContain('Path=/');
  });

  it('reads multipart forms and treats JSON bodies as empty forms (kvmd)', async () => {
    app = await newApp();
    await app.inject(`/api/init/init?password=${encodeURIComponent(PASSWORD)}`);
    const boundary = '----kvmtest';
    const body =
      `--${boundary}\r\nContent-Disposition: form-data; name="user"\r\n\r\nadmin\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="passwd"\r\n\r\n${PASSWORD}\r\n--${boundary}--\r\n`;
    let res = await app.inject({
      method: 'POST',
      url: '/api/auth/login',
      payload: body,
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    });
    expect(res.statusCode).toBe(200);

    res = await app.inject({
      method: 'POST',
      url: '/api/auth/login',
      payload: { user: 'admin', passwd: PASSWORD },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().result.error_msg).toContain("'user'");
  });

  it('answers 403 on a wrong password and 400 on a malformed user or expire', async () => {
    app = await newApp();
    await initAndLogin(app);
    let res = await app.inject({
      method: 'POST',
      url: '/api/auth/login',
      ...form({ user: 'admin', passwd: 'nope' }),
    });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ ok: false, result: { error: 'ForbiddenError' } });
    res = await app.inject({
      method: 'POST',
      url: '/api/auth/login',
      ...form({ user: 'Bad User', passwd: 'x' }),
    });
    expect(res.statusCode).toBe(400);
    res = await app.inject({
      method: 'POST',
      url: '/api/auth/login',
      ...form({ user: 'admin', passwd: PASSWORD, expire: '-5' }),
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().result.error_msg).toContain("'expire'");
    res = await app.inject({
      method: 'POST',
      url: '/api/auth/login',
      ...form({ user: 'other', passwd: PASSWORD }),
    });
    expect(res.statusCode).toBe(403);
  });

  it('locks a client after 10 failures in 600 s with RateLimitError and remaining_time', async () => {
    app = await newApp();
    await initAndLogin(app);
    for (let i = 0; i < 9; i += 1) {
      const res = await app.inject({
        method: 'POST',
        url: '/api/auth/login',
        ...form({ user: 'admin', passwd: `bad${i}` }),
      });
      expect(res.statusCode).toBe(403);
    }
    let res = await app.inject({
      method: 'POST',
      url: '/api/auth/login',
      ...form({ user: 'admin', passwd: 'bad9' }),
    });
    expect(res.statusCode).toBe(429);
    const result = res.json().result;
    expect(result.error).toBe('RateLimitError');
    expect(result.remaining_time).toBeGreaterThan(590);
    expect(result.remaining_time).toBeLessThanOrEqual(600);
    expect(result.error_msg).toMatch(/try again in \d+ seconds/);
    // even the right password is refused while locked
    res = await app.inject({
      method: 'POST',
      url: '/api/auth/login',
      ...form({ user: 'admin', passwd: PASSWORD }),
    });
    expect(res.statusCode).toBe(429);
    // another address is not locked
    res = await app.inject({
      method: 'POST',
      url: '/api/auth/login',
      remoteAddress: '127.0.0.9',
      ...form({ user: 'admin', passwd: PASSWORD }),
    });
    expect(res.statusCode).toBe(200);
  });
});

describe('credentials and check', () => {
  it('accepts cookie, Token header, auth_token query and X-KVMD headers', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const wrong = 'f'.repeat(64);
    expect((await app.inject('/api/auth/check')).statusCode).toBe(401);
    expect(
      (await app.inject({ url: '/api/auth/check', cookies: { auth_token: wrong } })).statusCode,
    ).toBe(403);
    expect(
      (await app.inject({ url: '/api/auth/check', cookies: { auth_token: 'garbage' } })).statusCode,
    ).toBe(403);
    expect(
      (await app.inject({ url: '/api/auth/check', cookies: { auth_token: token } })).statusCode,
    ).toBe(200);
    expect((await app.inject({ url: '/api/auth/check', headers: { token } })).json()).toEqual({
      ok: true,
      result: { user: 'admin' },
    });
    expect((await app.inject(`/api/auth/check?auth_token=${token}`)).statusCode).toBe(200);
    expect(
      (
        await app.inject({
          url: '/api/auth/check',
          headers: { 'x-kvmd-user': 'admin', 'x-kvmd-passwd': PASSWORD },
        })
      ).statusCode,
    ).toBe(200);
    expect(
      (
        await app.inject({
          url: '/api/auth/check',
          headers: { 'x-kvmd-user': 'admin', 'x-kvmd-passwd': 'no' },
        })
      ).statusCode,
    ).toBe(403);
    // the first source present decides: a wrong Token header is not rescued by a good cookie
    expect(
      (
        await app.inject({
          url: '/api/auth/check',
          headers: { token: wrong },
          cookies: { auth_token: token },
        })
      ).statusCode,
    ).toBe(403);
  });

  it('ends the session on logout and clears the cookie', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const res = await app.inject({ method: 'POST', url: '/api/auth/logout', headers: { token } });
    expect(res.statusCode).toBe(200);
    expect(String(res.headers['set-cookie'])).toMatch(/auth_token=;/);
    expect((await app.inject({ url: '/api/auth/check', headers: { token } })).statusCode).toBe(403);
  });

  it('keeps sessions across a restart of the server', async () => {
    const dir = await tempDataDir();
    app = await newApp(dir);
    const token = await initAndLogin(app);
    await app.close();
    app = await newApp(dir);
    expect((await app.inject({ url: '/api/auth/check', headers: { token } })).statusCode).toBe(200);
  });

  it('expires sessions after their lifetime without use', async () => {
    app = await newApp(undefined, { auth: { session_expire_s: 60 } });
    await app.inject(`/api/init/init?password=${encodeURIComponent(PASSWORD)}`);
    const res = await app.inject({
      method: 'POST',
      url: '/api/auth/login',
      ...form({ user: 'admin', passwd: PASSWORD, expire: '1' }),
    });
    const token = res.json().result.token as string;
    expect((await app.inject({ url: '/api/auth/check', headers: { token } })).statusCode).toBe(200);
    await new Promise((r) => setTimeout(r, 1100));
    expect((await app.inject({ url: '/api/auth/check', headers: { token } })).statusCode).toBe(403);
  });
});

describe('change password', () => {
  it('needs the old password and ends the other sessions', async () => {
    app = await newApp();
    const mine = await initAndLogin(app);
    const other = await login(app, PASSWORD);
    let res = await app.inject({
      method: 'POST',
      url: '/api/init/change_password?user=admin&old_password=wrong1&new_password=newpass1',
      headers: { token: mine },
    });
    expect(res.statusCode).toBe(403);
    res = await app.inject({
      method: 'POST',
      url:
        '/api/init/change_password?user=admin&old_password=' +
        encodeURIComponent(PASSWORD) +
        '&new_password=abc',
      headers: { token: mine },
    });
    expect(res.statusCode).toBe(400);
    res = await app.inject({
      method: 'POST',
      url:
        '/api/init/change_password?user=admin&old_password=' +
        encodeURIComponent(PASSWORD) +
        '&new_password=newpass1',
      headers: { token: mine },
    });
    expect(res.statusCode).toBe(200);
    expect(
      (await app.inject({ url: '/api/auth/check', headers: { token: mine } })).statusCode,
    ).toBe(200);
    expect(
      (await app.inject({ url: '/api/auth/check', headers: { token: other } })).statusCode,
    ).toBe(403);
    await expect(login(app, 'newpass1')).resolves.toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('two-factor', () => {
  it('enables with a code, then needs it at login, remembers a device, disables', async () => {
    // A code is accepted once (RFC 6238 5.2): each use below moves to the next 30 s step.
    const clock = new TestClock();
    const code = (): string => totp(secret, clock.t);
    const next = (): string => {
      clock.advance(30_000);
      return code();
    };
    let secret = '';
    app = await newAuthApp({ clock });
    const token = await initAndLogin(app);
    expect((await app.inject('/api/2fa/is_enabled')).json().result).toEqual({
      enabled: false,
      trusted: false,
    });
    expect((await app.inject({ url: '/api/2fa/show', headers: { token } })).statusCode).toBe(404);

    const created = (await app.inject({ url: '/api/2fa/create', headers: { token } })).json()
      .result;
    expect(created.secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(created.uri).toMatch(/^otpauth:\/\/totp\//);
    secret = created.secret as string;

    let res = await app.inject({
      url: `/api/2fa/init?secret=${secret}&key=000000`,
      headers: { token },
    });
    expect(res.statusCode).toBe(code() === '000000' ? 200 : 403);
    res = await app.inject({ url: `/api/2fa/init?secret=${secret}&key=12`, headers: { token } });
    expect(res.statusCode).toBe(400);
    res = await app.inject({
      url: `/api/2fa/init?secret=${secret}&key=${code()}`,
      headers: { token },
    });
    expect(res.statusCode).toBe(200);
    expect((await app.inject('/api/2fa/is_enabled')).json().result.enabled).toBe(true);
    expect((await app.inject({ url: '/api/2fa/create', headers: { token } })).statusCode).toBe(403);
    expect(
      (await app.inject({ url: '/api/2fa/show', headers: { token } })).json().result.URI,
    ).toContain(secret);
    expect(
      (await app.inject({ url: `/api/2fa/verify?code=${next()}`, headers: { token } })).statusCode,
    ).toBe(200);

    // password alone no longer logs in; password + code does (kvmd style and the 2FA route)
    await expect(login(app, PASSWORD)).rejects.toThrow(/403/);
    await expect(login(app, PASSWORD + next())).resolves.toMatch(/^[0-9a-f]{64}$/);
    res = await app.inject({
      method: 'POST',
      url: '/api/auth/login_with_2fa',
      ...form({ user: 'admin', passwd: PASSWORD, code: '123' }),
    });
    expect(res.statusCode).toBe(400);
    res = await app.inject({
      method: 'POST',
      url: '/api/auth/login_with_2fa',
      ...form({ user: 'admin', passwd: PASSWORD, code: next(), remember: '1' }),
    });
    expect(res.statusCode).toBe(200);
    const trustedCookie = [res.headers['set-cookie']]
      .flat()
      .find((c) => String(c).startsWith('kvm_trusted_device='));
    expect(trustedCookie).toMatch(/HttpOnly/);
    const trusted = /kvm_trusted_device=([0-9a-f]{64})/.exec(String(trustedCookie))?.[1] ?? '';
    expect(
      (
        await app.inject({ url: '/api/2fa/is_enabled', cookies: { kvm_trusted_device: trusted } })
      ).json().result.trusted,
    ).toBe(true);
    res = await app.inject({
      method: 'POST',
      url: '/api/auth/login',
      cookies: { kvm_trusted_device: trusted },
      ...form({ user: 'admin', passwd: PASSWORD }),
    });
    expect(res.statusCode).toBe(200);

    expect(
      (await app.inject({ url: `/api/2fa/delete?code=${next()}`, headers: { token } })).statusCode,
    ).toBe(200);
    expect((await app.inject('/api/2fa/is_enabled')).json().result.enabled).toBe(false);
    await expect(login(app, PASSWORD)).resolves.toMatch(/^[0-9a-f]{64}$/);
    // a remembered device is forgotten with 2FA
    expect(
      (
        await app.inject({ url: '/api/2fa/is_enabled', cookies: { kvm_trusted_device: trusted } })
      ).json().result.trusted,
    ).toBe(false);
  });
});

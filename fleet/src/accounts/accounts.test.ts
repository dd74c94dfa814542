/**
 * Fleet accounts against a real PostgreSQL and SMTP sink: SPEC 5's sign-up rules and messages,
 * the e-mail code, login with TOTP, sessions, rate limits, malformed bodies, cross-site calls.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { totp } from '../../../server/src/services/auth/totp';
import { api, failure, result, signIn, signUpAndIn, sql, startKit, type Kit } from '../test-kit';

let kit: Kit;
beforeAll(async () => {
  kit = await startKit();
});
afterAll(() => kit?.close());

async function emailCode(email: string, ip = '203.0.113.1'): Promise<string> {
  const r = await api(kit, 'POST', '/signup/email-code', { email }, { ip });
  expect(r.statusCode, r.body).toBe(200);
  const mail = await kit.sink.waitFor(email, 10_000);
  expect(mail.subject).toMatch(/sign-up code/);
  expect(mail.from).toBe('fleet@fleet.test');
  return /\b(\d{6})\b/.exec(mail.text)![1]!;
}

describe('sign-up', () => {
  it('refuses a form against SPEC 5 with one message key per field', async () => {
    const r = await api(kit, 'POST', '/signup', {
      username: '_bad',
      email: 'not-an-email',
      email_code: '12',
      password: '12345',
      password2: '54321',
      privacy: false,
      region: 'mars',
    });
    const f = failure(r);
    expect(f.status).toBe(400);
    expect(f.error).toBe('CloudFormError');
    expect(f.fields).toEqual({
      username: 'username_invalid',
      email: 'email_invalid',
      email_code: 'email_code_invalid',
      privacy: 'privacy_required',
      password: 'password_length',
      password2: 'password_mismatch',
      region: 'region_required',
    });
    const empty = failure(await api(kit, 'POST', '/signup', {}));
    expect(empty.fields).toMatchObject({
      username: 'username_required',
      password: 'password_required',
      region: 'region_required',
    });
    // 11 characters is over SPEC 5's 10
    const long = failure(
      await api(kit, 'POST', '/signup', { password: '12345678901', password2: '12345678901' }),
    );
    expect((long.fields as Record<string, string>).password).toBe('password_length');
  });

  it('signs up with the code mailed through SMTP; usernames and e-mails are unique regardless of case', async () => {
    const code = await emailCode('Alice@Example.com');
    const form = {
      username: 'Alice.1',
      email: 'Alice@Example.com',
      email_code: code,
      password: 'abc123',
      password2: 'abc123',
      privacy: true,
      region: 'us',
    };
    const made = await api(kit, 'POST', '/signup', form);
    expect(result(made)).toEqual({ username: 'Alice.1', email: 'Alice@Example.com', region: 'us' });
    const rows = await sql<{ password_hash: string }>(kit, 'SELECT password_hash FROM accounts');
    expect(rows[0]!.password_hash).toMatch(/^scrypt\$/);
    expect(rows[0]!.password_hash).not.toContain('abc123');
    // the code was used up
    expect(await sql(kit, 'SELECT * FROM email_codes')).toEqual([]);

    // the same e-mail (another case) cannot ask for a code
    const again = failure(
      await api(kit, 'POST', '/signup/email-code', { email: 'ALICE@example.COM' }),
    );
    expect(again.status).toBe(409);
    expect(again.fields).toEqual({ email: 'email_taken' });

    // the same username in another case
    const code2 = await emailCode('other@example.com');
    const taken = failure(
      await api(kit, 'POST', '/signup', {
        ...form,
        username: 'alice.1',
        email: 'other@example.com',
        email_code: code2,
      }),
    );
    expect(taken.status).toBe(409);
    expect(taken.error).toBe('AccountExistsError');
    expect(taken.fields).toEqual({ username: 'username_taken' });
  });

  it('password2 may be left out by a client that checked it (the device); given, it must match', async () => {
    const code = await emailCode('twice@example.com');
    const form = {
      username: 'twice1',
      email: 'twice@example.com',
      email_code: code,
      password: 'abc123',
      privacy: true,
      region: 'asia',
    };
    const mismatch = failure(await api(kit, 'POST', '/signup', { ...form, password2: 'abc124' }));
    expect(mismatch.fields).toEqual({ password2: 'password_mismatch' });
    expect(result(await api(kit, 'POST', '/signup', form))).toMatchObject({ region: 'asia' });
  });

  it('a wrong e-mail code is refused, and after 5 wrong tries even the right one', async () => {
    const code = await emailCode('tries@example.com');
    const wrong = code === '000000' ? '111111' : '000000';
    const form = {
      username: 'tries1',
      email: 'tries@example.com',
      password: 'abc123',
      password2: 'abc123',
      privacy: true,
      region: 'eu',
    };
    for (let i = 0; i < 5; i += 1) {
      const f = failure(await api(kit, 'POST', '/signup', { ...form, email_code: wrong }));
      expect(f.status).toBe(400);
      expect(f.fields).toEqual({ email_code: 'email_code_invalid' });
    }
    const late = failure(await api(kit, 'POST', '/signup', { ...form, email_code: code }));
    expect(late.fields).toEqual({ email_code: 'email_code_invalid' });
  });

  it('an expired code is refused', async () => {
    const code = await emailCode('late@example.com');
    await sql(kit, `UPDATE email_codes SET expires_at = now() - interval '1 second'`);
    const f = failure(
      await api(kit, 'POST', '/signup', {
        username: 'late1',
        email: 'late@example.com',
        email_code: code,
        password: 'abc123',
        password2: 'abc123',
        privacy: true,
        region: 'eu',
      }),
    );
    expect(f.fields).toEqual({ email_code: 'email_code_invalid' });
  });

  it('codes are rate limited per e-mail address (3 in 10 minutes)', async () => {
    for (let i = 0; i < 3; i += 1) {
      const r = await api(
        kit,
        'POST',
        '/signup/email-code',
        { email: 'spam@example.com' },
        { ip: `203.0.113.${50 + i}` },
      );
      expect(r.statusCode).toBe(200);
    }
    const f = failure(
      await api(
        kit,
        'POST',
        '/signup/email-code',
        { email: 'spam@example.com' },
        { ip: '203.0.113.60' },
      ),
    );
    expect(f.status).toBe(429);
    expect(f.remaining_time).toBeGreaterThan(0);
    expect(kit.sink.mails().filter((m) => m.to.includes('spam@example.com'))).toHaveLength(3);
  });
});

describe('login and sessions', () => {
  it('sets an httpOnly Secure SameSite=Lax cookie; me and logout', async () => {
    await signUpAndIn(kit, 'bob_1', 'pw1234');
    const bad = failure(
      await api(kit, 'POST', '/login', { username: 'bob_1', password: 'wrong1' }),
    );
    expect(bad.status).toBe(401);
    expect(bad.error).toBe('InvalidCredentialsError');
    const unknown = failure(
      await api(kit, 'POST', '/login', { username: 'nobody', password: 'wrong1' }),
    );
    expect(unknown.error_msg).toBe(bad.error_msg);

    const r = await api(kit, 'POST', '/login', { username: 'BOB_1', password: 'pw1234' });
    expect(r.statusCode).toBe(200);
    const c = r.cookies.find((x) => x.name === 'fleet_session')!;
    expect(c.httpOnly).toBe(true);
    expect(c.secure).toBe(true);
    expect(c.sameSite).toBe('Lax');
    expect(c.value).toMatch(/^[0-9a-f]{64}$/);
    // only its hash is stored
    const stored = await sql<{ token_hash: string }>(kit, 'SELECT token_hash FROM sessions');
    expect(stored.map((s) => s.token_hash)).not.toContain(c.value);

    const me = result<{ username: string; totp_enabled: boolean }>(
      await api(kit, 'GET', '/me', undefined, { cookie: c.value }),
    );
    expect(me).toMatchObject({
      username: 'bob_1',
      email: 'bob_1@example.com',
      totp_enabled: false,
    });
    expect(failure(await api(kit, 'GET', '/me')).status).toBe(401);
    expect(
      failure(await api(kit, 'GET', '/me', undefined, { cookie: 'f'.repeat(64) })).status,
    ).toBe(401);

    expect((await api(kit, 'POST', '/logout', {}, { cookie: c.value })).statusCode).toBe(200);
    expect(failure(await api(kit, 'GET', '/me', undefined, { cookie: c.value })).status).toBe(401);
  });

  it('TOTP: setup, enable, then login asks for it, refuses a wrong or reused code', async () => {
    const { cookie } = await signUpAndIn(kit, 'carol', 'pw1234');
    const setup = result<{ secret: string; uri: string }>(
      await api(kit, 'POST', '/totp/setup', {}, { cookie }),
    );
    expect(setup.uri).toContain('otpauth://totp/');
    expect(
      failure(await api(kit, 'POST', '/totp/enable', { code: '000000' }, { cookie })).error,
    ).toBe('InvalidTotpError');
    const enableCode = totp(setup.secret);
    expect(
      (await api(kit, 'POST', '/totp/enable', { code: enableCode }, { cookie })).statusCode,
    ).toBe(200);

    const need = failure(
      await api(kit, 'POST', '/login', { username: 'carol', password: 'pw1234' }),
    );
    expect(need.status).toBe(401);
    expect(need.error).toBe('TotpRequiredError');
    expect(need.totp_required).toBe(true);
    const wrong = failure(
      await api(kit, 'POST', '/login', {
        username: 'carol',
        password: 'pw1234',
        totp: '123456' === enableCode ? '654321' : '123456',
      }),
    );
    expect(wrong.error).toBe('InvalidTotpError');
    // the code that enabled it was spent: the same step is refused
    const reused = failure(
      await api(kit, 'POST', '/login', { username: 'carol', password: 'pw1234', totp: enableCode }),
    );
    expect(reused.error).toBe('InvalidTotpError');
    // the next step's code (what the authenticator shows 30 s later) works once
    const next = totp(setup.secret, Date.now() + 30_000);
    const r = await api(kit, 'POST', '/login', {
      username: 'carol',
      password: 'pw1234',
      totp: next,
    });
    expect(r.statusCode, r.body).toBe(200);
    const again = failure(
      await api(kit, 'POST', '/login', { username: 'carol', password: 'pw1234', totp: next }),
    );
    expect(again.error).toBe('InvalidTotpError');
    // disable needs the password and a fresh code
    const c2 = r.cookies.find((x) => x.name === 'fleet_session')!.value;
    expect(
      failure(
        await api(kit, 'POST', '/totp/disable', { password: 'nope12', code: next }, { cookie: c2 }),
      ).status,
    ).toBe(401);
  }, 60_000);

  it('failed logins are limited per address: the 11th within a minute is 429', async () => {
    await signUpAndIn(kit, 'dave1', 'pw1234');
    const ip = '203.0.113.99';
    for (let i = 0; i < 10; i += 1) {
      const f = failure(
        await api(kit, 'POST', '/login', { username: 'dave1', password: `bad${i}xx` }, { ip }),
      );
      expect(f.status).toBe(i < 10 ? 401 : 429);
    }
    const locked = failure(
      await api(kit, 'POST', '/login', { username: 'dave1', password: 'pw1234' }, { ip }),
    );
    expect(locked.status).toBe(429);
    expect(locked.remaining_time).toBeGreaterThan(0);
    // another address still signs in
    await signIn(kit, 'dave1', 'pw1234', undefined, '203.0.113.98');
  }, 90_000);
});

describe('the HTTP edge', () => {
  it('malformed bodies get the kvmd envelope with the right status', async () => {
    const raw = (payload: string, type = 'application/json') =>
      kit.app.inject({
        method: 'POST',
        url: '/cloud-basic/v1/login',
        headers: { host: 'fleet.test:8443', 'content-type': type },
        payload,
      });
    const notJson = failure(await raw('{"username":'));
    expect(notJson.status).toBe(400);
    const arr = failure(await raw('[1,2]'));
    expect(arr).toMatchObject({ status: 400, error: 'ValidatorError' });
    const str = failure(await raw('"x"'));
    expect(str.status).toBe(400);
    const wrongType = failure(await raw(JSON.stringify({ username: 5, password: 'abcdef' })));
    expect(wrongType).toMatchObject({ status: 400, error_msg: 'username must be a string' });
    const text = failure(await raw('username=a', 'text/plain'));
    expect(text.status).toBe(415);
    const form = failure(await raw('username=a', 'application/x-www-form-urlencoded'));
    expect(form.status).toBe(415);
    const big = failure(await raw(JSON.stringify({ username: 'x'.repeat(20_000) })));
    expect(big.status).toBe(413);
    const none = failure(await api(kit, 'GET', '/nothing-here'));
    expect(none).toMatchObject({ status: 404, error: 'NotFoundError' });
  });

  it('a state-changing call from another origin is refused before it acts', async () => {
    const { cookie } = await signUpAndIn(kit, 'erin1', 'pw1234');
    const r = await api(
      kit,
      'POST',
      '/logout',
      {},
      {
        cookie,
        headers: { origin: 'https://evil.example' },
      },
    );
    expect(failure(r)).toMatchObject({ status: 403, error: 'CrossOriginError' });
    // the session is still there
    expect((await api(kit, 'GET', '/me', undefined, { cookie })).statusCode).toBe(200);
  });
});

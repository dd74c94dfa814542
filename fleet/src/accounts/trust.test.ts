/**
 * TOTP "remember this browser" against a real PostgreSQL: `remember` with a right code sets
 * `fleet_trust`; that browser then signs in to THAT account with the password alone (another
 * account's cookie does not help); forgetting, turning TOTP off or a new password ends it; at
 * most 20 per account.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FLEET_TRUST_TTL_S, type FleetMe } from '@kvm/protocol';
import { totp } from '../../../server/src/services/auth/totp';
import { api, failure, result, signUpAndIn, sql, startKit, type Kit } from '../test-kit';
import { MAX_TRUSTED_PER_ACCOUNT, TRUST_COOKIE } from './accounts';

let kit: Kit;
beforeAll(async () => {
  kit = await startKit();
  await signUpAndIn(kit, 'tadmin'); // the first account (the admin)
});
afterAll(() => kit?.close());

let ipSeq = 0;
const ip = () => `198.18.0.${(ipSeq += 1) % 250}`;

/** Signs up `name` with TOTP on; its secret (every code may be used: the step is reset). */
async function withTotp(name: string): Promise<{ secret: string; id: string }> {
  const { cookie } = await signUpAndIn(kit, name, 'pass123');
  const { secret } = result<{ secret: string }>(
    await api(kit, 'POST', '/totp/setup', {}, { cookie }),
  );
  result(await api(kit, 'POST', '/totp/enable', { code: totp(secret) }, { cookie }));
  const me = result<FleetMe>(await api(kit, 'GET', '/me', undefined, { cookie }));
  return { secret, id: me.id };
}

/** Lets the current code be used again (the clock would take 30 s). */
async function freshStep(id: string): Promise<void> {
  await sql(kit, 'UPDATE accounts SET totp_last_step = NULL WHERE id = $1', [id]);
}

async function login(
  username: string,
  body: Record<string, unknown>,
  trust?: string,
): Promise<ReturnType<typeof api>> {
  return api(
    kit,
    'POST',
    '/login',
    { username, password: 'pass123', ...body },
    { ip: ip(), ...(trust ? { headers: { cookie: `${TRUST_COOKIE}=${trust}` } } : {}) },
  );
}

async function remembered(username: string, secret: string, id: string): Promise<string> {
  await freshStep(id);
  const r = await login(username, { totp: totp(secret), remember: true });
  expect(r.statusCode, r.body).toBe(200);
  const c = r.cookies.find((x) => x.name === TRUST_COOKIE)!;
  expect(c).toMatchObject({
    httpOnly: true,
    secure: true,
    sameSite: 'Lax',
    path: '/',
    maxAge: FLEET_TRUST_TTL_S,
  });
  expect(c.value).toMatch(/^[0-9a-f]{64}$/);
  return c.value;
}

describe('remember this browser', () => {
  it('a trusted browser skips TOTP for its account only; the password is still needed', async () => {
    const carl = await withTotp('carl_t');
    await withTotp('dora_t');
    // without remember: no cookie
    await freshStep(carl.id);
    const plain = await login('carl_t', { totp: totp(carl.secret) });
    expect(plain.cookies.find((x) => x.name === TRUST_COOKIE)).toBeUndefined();
    const trust = await remembered('carl_t', carl.secret, carl.id);
    // only the hash is stored
    const rows = await sql<{ token_hash: string }>(kit, 'SELECT token_hash FROM trusted_browsers');
    expect(rows.map((r) => r.token_hash)).not.toContain(trust);

    const skip = await login('carl_t', {}, trust);
    expect(skip.statusCode, skip.body).toBe(200);
    const ev = await sql<{ detail: { method: string } }>(
      kit,
      `SELECT detail FROM events WHERE kind = 'login' AND account_id = $1 ORDER BY id DESC LIMIT 1`,
      [carl.id],
    );
    expect(ev[0]!.detail.method).toBe('totp_trusted');
    // a wrong password is still wrong
    expect(failure(await login('carl_t', { password: 'wrong12' }, trust)).status).toBe(401);
    // another account's browser cookie: TOTP is asked
    const other = failure(await login('dora_t', {}, trust));
    expect([other.status, other.error]).toEqual([401, 'TotpRequiredError']);
    // a made-up cookie: TOTP is asked
    expect(failure(await login('carl_t', {}, 'a'.repeat(64))).error).toBe('TotpRequiredError');
    // expired: asked again
    await sql(kit, `UPDATE trusted_browsers SET expires_at = now() - interval '1 s'`);
    expect(failure(await login('carl_t', {}, trust)).error).toBe('TotpRequiredError');
  });

  it('forget, TOTP off and a new password each end every trusted browser', async () => {
    const eve = await withTotp('eve_tt');
    const cookieOf = async () => {
      await freshStep(eve.id);
      const r = await login('eve_tt', { totp: totp(eve.secret) });
      return r.cookies.find((x) => x.name === 'fleet_session')!.value;
    };
    // forget
    let trust = await remembered('eve_tt', eve.secret, eve.id);
    const session = await cookieOf();
    const forgot = await api(kit, 'POST', '/totp/trusted/forget', {}, { cookie: session });
    expect(forgot.statusCode).toBe(200);
    expect(forgot.cookies.find((x) => x.name === TRUST_COOKIE)?.value).toBe('');
    expect(failure(await login('eve_tt', {}, trust)).error).toBe('TotpRequiredError');

    // a new password (set by an admin)
    trust = await remembered('eve_tt', eve.secret, eve.id);
    expect((await login('eve_tt', {}, trust)).statusCode).toBe(200);
    const admin = (
      await api(kit, 'POST', '/login', { username: 'tadmin', password: 'secret12' })
    ).cookies.find((x) => x.name === 'fleet_session')!.value;
    result(await api(kit, 'PATCH', `/users/${eve.id}`, { password: 'pass123' }, { cookie: admin }));
    expect(failure(await login('eve_tt', {}, trust)).error).toBe('TotpRequiredError');

    // TOTP turned off (then on again: the old browser is not trusted)
    trust = await remembered('eve_tt', eve.secret, eve.id);
    const s2 = await cookieOf();
    await freshStep(eve.id);
    result(
      await api(
        kit,
        'POST',
        '/totp/disable',
        { password: 'pass123', code: totp(eve.secret) },
        { cookie: s2 },
      ),
    );
    expect(
      (await sql(kit, 'SELECT 1 FROM trusted_browsers WHERE account_id = $1', [eve.id])).length,
    ).toBe(0);
  });

  it(`keeps at most ${MAX_TRUSTED_PER_ACCOUNT} per account, dropping the oldest`, async () => {
    const fay = await withTotp('fay_tt');
    const tokens: string[] = [];
    // as many as the limit straight in (a login each would only be slower), then one more by login
    for (let i = 0; i < MAX_TRUSTED_PER_ACCOUNT; i += 1) {
      tokens.push(await kit.fleet.accounts.trustBrowser(fay.id));
    }
    tokens.push(await remembered('fay_tt', fay.secret, fay.id));
    const n = await sql(kit, 'SELECT 1 FROM trusted_browsers WHERE account_id = $1', [fay.id]);
    expect(n.length).toBe(MAX_TRUSTED_PER_ACCOUNT);
    expect(failure(await login('fay_tt', {}, tokens[0])).error).toBe('TotpRequiredError');
    expect((await login('fay_tt', {}, tokens[1])).statusCode).toBe(200);
    expect((await login('fay_tt', {}, tokens.at(-1))).statusCode).toBe(200);
  });
});

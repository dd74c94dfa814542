/**
 * Binding against a real PostgreSQL: by code (happy, expired, replayed, forged, another
 * account), by login, the claim rate limit, unbinding from either side, cross-account
 * isolation, the relay's DeviceDirectory (secret, revocation, fingerprint).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BindCodeAnswer, BindResult } from '@kvm/protocol';
import { totp } from '../../../server/src/services/auth/totp';
import {
  api,
  bindByCode,
  failure,
  identity,
  result,
  signUpAndIn,
  sql,
  startKit,
  type Kit,
} from '../test-kit';

let kit: Kit;
let alice: string;
let bob: string;
beforeAll(async () => {
  kit = await startKit();
  alice = (await signUpAndIn(kit, 'alice', 'pw1234')).cookie;
  bob = (await signUpAndIn(kit, 'bobby', 'pw5678')).cookie;
});
afterAll(() => kit?.close());

type Devices = { devices: { id: string; name: string; online: boolean }[] };

async function newCode(id = identity(), ip = '192.0.2.50'): Promise<BindCodeAnswer> {
  return result<BindCodeAnswer>(
    await api(kit, 'POST', '/bind/codes', { device: id }, { device: true, ip }),
  );
}

function poll(claimToken: string) {
  return api(kit, 'POST', '/bind/poll', { claim_token: claimToken }, { device: true });
}

describe('binding by code', () => {
  it('a claimed code hands the device its binding once, only the hash of its secret is kept', async () => {
    const id = identity({ name: 'rack-1', mac: '02:AA:BB:CC:DD:01' });
    const code = await newCode(id);
    expect(code.code).toMatch(/^\d{8}$/);
    expect(code.expires_in).toBe(60);
    expect(code.claim_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // nothing in the table gives the code or the token away
    const rows = await sql<{ code_hash: string; claim_token_hash: string }>(
      kit,
      'SELECT code_hash, claim_token_hash FROM bind_codes',
    );
    expect(JSON.stringify(rows)).not.toContain(code.code);
    expect(JSON.stringify(rows)).not.toContain(code.claim_token);

    // the device's long poll is woken by the claim (NOTIFY), well before its 25 s
    const started = Date.now();
    const waiting = poll(code.claim_token);
    await new Promise((r) => setTimeout(r, 300));
    const claimed = await api(
      kit,
      'POST',
      '/devices/claim',
      { code: code.code },
      { cookie: alice },
    );
    expect(result(claimed)).toEqual({ name: 'rack-1', model: 'test-kvm' });
    const got = result<{ pending: false } & BindResult>(await waiting);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(got.pending).toBe(false);
    expect(got.device_id).toMatch(/^[a-z2-7]{16}$/);
    expect(got.secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(got.account).toEqual({ username: 'alice', email: 'alice@example.com' });
    expect(got.endpoints).toEqual(['wss://fleet.test:8443/cloud-basic/v1/agent']);

    const dev = await sql<{ secret_hash: string; mac: string }>(
      kit,
      'SELECT secret_hash, mac FROM devices WHERE id = $1',
      [got.device_id],
    );
    expect(dev[0]!.secret_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(dev[0]!.secret_hash).not.toContain(got.secret);
    expect(dev[0]!.mac).toBe('02:aa:bb:cc:dd:01');

    // collected: the next poll is 410, the secret is never given again
    expect(failure(await poll(code.claim_token))).toMatchObject({
      status: 410,
      error: 'BindCodeGoneError',
    });
    const list = result<Devices>(await api(kit, 'GET', '/devices', undefined, { cookie: alice }));
    expect(list.devices.map((d) => d.id)).toContain(got.device_id);

    // the relay's view: right secret and hardware, or why not
    const d = kit.fleet.devices;
    const fp = { mac: '02:aa:bb:cc:dd:01', serial: id.serial };
    expect(await d.authenticate(got.device_id, got.secret, fp)).toMatchObject({ ok: true });
    const forged = `${got.secret.slice(0, -1)}${got.secret.endsWith('A') ? 'B' : 'A'}`;
    expect(await d.authenticate(got.device_id, forged, fp)).toEqual({
      ok: false,
      reason: 'unknown',
    });
    expect(await d.authenticate(got.device_id, got.secret, { ...fp, serial: 'other' })).toEqual({
      ok: false,
      reason: 'fingerprint',
    });
    expect(await d.authenticate('aaaaaaaaaaaaaaaa', got.secret, fp)).toEqual({
      ok: false,
      reason: 'unknown',
    });
  });

  it('a pending poll answers pending; an expired code cannot be claimed and its poll is 410', async () => {
    const code = await newCode();
    const ac = new AbortController();
    expect(await kit.fleet.devices.poll(code.claim_token, '192.0.2.51', ac.signal, 200)).toEqual({
      pending: true,
    });
    await sql(kit, `UPDATE bind_codes SET expires_at = now() - interval '1 second'`);
    const f = failure(
      await api(kit, 'POST', '/devices/claim', { code: code.code }, { cookie: alice }),
    );
    expect(f).toMatchObject({ status: 404, error: 'BindCodeNotFoundError' });
    expect(failure(await poll(code.claim_token)).status).toBe(410);
  });

  it('a replayed code binds nothing a second time; a forged code or claim token finds nothing', async () => {
    const code = await newCode();
    result(await api(kit, 'POST', '/devices/claim', { code: code.code }, { cookie: alice }));
    const replay = failure(
      await api(kit, 'POST', '/devices/claim', { code: code.code }, { cookie: bob }),
    );
    expect(replay.status).toBe(404);
    const forged = failure(
      await api(
        kit,
        'POST',
        '/devices/claim',
        { code: '1234-5678' },
        { cookie: bob, ip: '192.0.2.77' },
      ),
    );
    expect(forged.status).toBe(404);
    expect(failure(await poll('A'.repeat(43))).status).toBe(410);
    expect(failure(await poll('not a token')).status).toBe(410);
    // the binding went to the account that claimed first: alice, never bob
    const got = result<BindResult>(await poll(code.claim_token));
    expect(got.account.username).toBe('alice');
    const bobs = result<Devices>(await api(kit, 'GET', '/devices', undefined, { cookie: bob }));
    expect(bobs.devices.map((d) => d.id)).not.toContain(got.device_id);
  });

  it('claims need a session; wrong codes are limited to 5 a minute per account', async () => {
    expect(failure(await api(kit, 'POST', '/devices/claim', { code: '12345678' })).status).toBe(
      401,
    );
    const { cookie } = await signUpAndIn(kit, 'guesser', 'pw1234');
    for (let i = 0; i < 5; i += 1) {
      const f = failure(
        await api(
          kit,
          'POST',
          '/devices/claim',
          { code: `0000000${i}` },
          { cookie, ip: `192.0.2.${100 + i}` },
        ),
      );
      expect(f.status).toBe(404);
    }
    // even a real code is refused while the account is locked (from yet another address)
    const code = await newCode();
    const locked = failure(
      await api(kit, 'POST', '/devices/claim', { code: code.code }, { cookie, ip: '192.0.2.120' }),
    );
    expect(locked.status).toBe(429);
    expect(locked.remaining_time).toBeGreaterThan(0);
  }, 60_000);

  it('bad identities are refused with the field named', async () => {
    const bad = failure(
      await api(
        kit,
        'POST',
        '/bind/codes',
        { device: { ...identity(), mac: 'zz' } },
        { device: true },
      ),
    );
    expect(bad).toMatchObject({ status: 400, error: 'ValidatorError' });
    expect(bad.error_msg).toMatch(/^device\.mac/);
    const long = failure(
      await api(
        kit,
        'POST',
        '/bind/codes',
        { device: { ...identity(), name: 'x'.repeat(65) } },
        { device: true },
      ),
    );
    expect(long.error_msg).toMatch(/^device\.name/);
    const ctl = failure(
      await api(
        kit,
        'POST',
        '/bind/codes',
        { device: { ...identity(), serial: 'a\u0000b' } },
        { device: true },
      ),
    );
    expect(ctl.error_msg).toMatch(/^device\.serial/);
    expect(failure(await api(kit, 'POST', '/bind/codes', {}, { device: true })).status).toBe(400);
    // a device that cannot read its serial sends '' (the device server does): accepted
    const noSerial = await api(
      kit,
      'POST',
      '/bind/codes',
      { device: { ...identity(), serial: '' } },
      { device: true },
    );
    expect(noSerial.statusCode, noSerial.body).toBe(200);
  });
});

describe('binding by login', () => {
  it('binds with the account credentials and region; asks for the 2FA code when the account has one', async () => {
    const { cookie } = await signUpAndIn(kit, 'frank', 'pw1234');
    const dev = identity({ name: 'by-login' });
    const noRegion = failure(
      await api(
        kit,
        'POST',
        '/bind/login',
        { username: 'frank', password: 'pw1234', device: dev },
        { device: true },
      ),
    );
    expect(noRegion.fields).toEqual({ region: 'region_required' });
    const ok = result<BindResult>(
      await api(
        kit,
        'POST',
        '/bind/login',
        { username: 'frank', password: 'pw1234', region: 'eu', device: dev },
        { device: true },
      ),
    );
    expect(ok.account.username).toBe('frank');

    const setup = result<{ secret: string }>(await api(kit, 'POST', '/totp/setup', {}, { cookie }));
    result(await api(kit, 'POST', '/totp/enable', { code: totp(setup.secret) }, { cookie }));
    const need = failure(
      await api(
        kit,
        'POST',
        '/bind/login',
        { username: 'frank', password: 'pw1234', region: 'eu', device: dev },
        { device: true },
      ),
    );
    expect(need).toMatchObject({ status: 401, error: 'TotpRequiredError', totp_required: true });
    const again = result<BindResult>(
      await api(
        kit,
        'POST',
        '/bind/login',
        {
          username: 'frank',
          password: 'pw1234',
          region: 'eu',
          totp: totp(setup.secret, Date.now() + 30_000),
          device: dev,
        },
        { device: true },
      ),
    );
    // the same hardware bound again to the same account replaces the older binding
    expect(again.device_id).not.toBe(ok.device_id);
    const list = result<Devices>(await api(kit, 'GET', '/devices', undefined, { cookie }));
    expect(list.devices.map((d) => d.id)).toEqual([again.device_id]);
    expect(
      await kit.fleet.devices.authenticate(ok.device_id, ok.secret, {
        mac: dev.mac,
        serial: dev.serial,
      }),
    ).toEqual({ ok: false, reason: 'revoked' });
    await expect.poll(() => kit.unbound).toContain(ok.device_id);
  }, 60_000);
});

describe('unbinding and isolation', () => {
  const bound = (cookie: string) => bindByCode(kit, cookie);

  it('another account can neither see, open nor unbind a device', async () => {
    const a = await bound(alice);
    const bobs = result<Devices>(await api(kit, 'GET', '/devices', undefined, { cookie: bob }));
    expect(bobs.devices.map((d) => d.id)).not.toContain(a.device_id);
    const del = failure(
      await api(kit, 'DELETE', `/devices/${a.device_id}`, undefined, { cookie: bob }),
    );
    expect(del.status).toBe(404);
    const bobUser = (await kit.fleet.accounts.userOfToken(bob))!;
    const aliceUser = (await kit.fleet.accounts.userOfToken(alice))!;
    expect(await kit.fleet.devices.forUser(bobUser, a.device_id)).toBeNull();
    expect((await kit.fleet.devices.forUser(aliceUser, a.device_id))?.id).toBe(a.device_id);
    expect(failure(await api(kit, 'GET', '/devices')).status).toBe(401);
  });

  it('the account unbinds: revoked, the relay is told, the secret no longer opens anything', async () => {
    const a = await bound(alice);
    expect(
      result(await api(kit, 'DELETE', `/devices/${a.device_id}`, undefined, { cookie: alice })),
    ).toEqual({});
    await expect.poll(() => kit.unbound).toContain(a.device_id);
    const row = await sql<{ revoked_at: Date | null }>(
      kit,
      'SELECT revoked_at FROM devices WHERE id = $1',
      [a.device_id],
    );
    expect(row[0]!.revoked_at).not.toBeNull();
    const list = result<Devices>(await api(kit, 'GET', '/devices', undefined, { cookie: alice }));
    expect(list.devices.map((d) => d.id)).not.toContain(a.device_id);
    expect(
      failure(await api(kit, 'DELETE', `/devices/${a.device_id}`, undefined, { cookie: alice }))
        .status,
    ).toBe(404);
    const aliceUser = (await kit.fleet.accounts.userOfToken(alice))!;
    expect(await kit.fleet.devices.forUser(aliceUser, a.device_id)).toBeNull();
  });

  it('the device unbinds itself with its own credentials; a wrong secret is 401', async () => {
    const a = await bound(alice);
    const wrong = failure(
      await api(
        kit,
        'POST',
        '/device/unbind',
        {},
        {
          device: true,
          headers: { authorization: `Device ${a.device_id}:${'x'.repeat(43)}` },
        },
      ),
    );
    expect(wrong).toMatchObject({ status: 401, error: 'DeviceAuthError' });
    expect(failure(await api(kit, 'POST', '/device/unbind', {}, { device: true })).status).toBe(
      401,
    );
    const r = await api(
      kit,
      'POST',
      '/device/unbind',
      {},
      {
        device: true,
        headers: { authorization: `Device ${a.device_id}:${a.secret}` },
      },
    );
    expect(result(r)).toEqual({});
    const ev = await sql<{ kind: string; detail: { by: string } }>(
      kit,
      `SELECT kind, detail FROM events WHERE device_id = $1 AND kind = 'unbound'`,
      [a.device_id],
    );
    expect(ev).toEqual([{ kind: 'unbound', detail: { by: 'device' } }]);
    // asking again is fine (the device may retry), and changes nothing
    expect(
      (
        await api(
          kit,
          'POST',
          '/device/unbind',
          {},
          {
            device: true,
            headers: { authorization: `Device ${a.device_id}:${a.secret}` },
          },
        )
      ).statusCode,
    ).toBe(200);
  });

  it('presence: this replica sets it, and clears only its own', async () => {
    const a = await bound(alice);
    const d = kit.fleet.devices;
    await d.setPresence(a.device_id, 'fleet-test');
    await d.setPresence(a.device_id, 'fleet-other');
    // the socket on this replica closes after the device moved to another: it stays there
    await d.setPresence(a.device_id, null);
    const row = await sql<{ replica: string | null }>(
      kit,
      'SELECT replica FROM devices WHERE id = $1',
      [a.device_id],
    );
    expect(row[0]!.replica).toBe('fleet-other');
  });
});

describe('stopping (last: it closes the registry)', () => {
  it('a poll held when the replica stops answers pending at once, not after 25 s', async () => {
    const code = await newCode();
    const started = Date.now();
    const held = kit.fleet.devices.poll(
      code.claim_token,
      '192.0.2.52',
      new AbortController().signal,
    );
    await new Promise((r) => setTimeout(r, 300));
    kit.fleet.devices.close();
    expect(await held).toEqual({ pending: true });
    expect(Date.now() - started).toBeLessThan(5000);
  });
});

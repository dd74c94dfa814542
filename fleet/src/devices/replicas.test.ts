/**
 * Two replicas on one database: a device's poll held on A is woken by a claim made on B (the
 * claim's NOTIFY), sessions made on one are good on the other, presence is per replica.
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BindCodeAnswer, BindResult } from '@kvm/protocol';
import { SmtpMailer } from '../accounts/mailer';
import { BindWaiters } from './bind-waiters';
import { parseConfig } from '../config';
import { createFleet, type Fleet } from '../fleet';
import {
  HOST,
  api,
  bindByCode,
  identity,
  result,
  signUpAndIn,
  startKit,
  type Kit,
} from '../test-kit';

let a: Kit;
let b: Fleet;
let bKit: Kit;
beforeAll(async () => {
  a = await startKit();
  const config = parseConfig({
    replica: 'fleet-test-b',
    publicUrl: `https://${HOST}`,
    database: a.pg.url,
    smtp: { host: a.sink.host, port: a.sink.port, from: 'fleet@fleet.test' },
    data: '/nonexistent',
  });
  b = await createFleet(config, {
    relay: false,
    mailer: new SmtpMailer(config.smtp),
    log: pino({ level: 'silent' }),
  });
  bKit = { ...a, fleet: b, app: b.app };
});
afterAll(async () => {
  await b?.close();
  await a?.close();
});

describe('two replicas', () => {
  it('a poll held on A is answered when B takes the claim; the session of A works on B', async () => {
    const { cookie } = await signUpAndIn(a, 'tworeps', 'pw1234');
    const code = result<BindCodeAnswer>(
      await api(a, 'POST', '/bind/codes', { device: identity() }, { device: true }),
    );
    const started = Date.now();
    const held = api(a, 'POST', '/bind/poll', { claim_token: code.claim_token }, { device: true });
    await new Promise((r) => setTimeout(r, 500));
    result(await api(bKit, 'POST', '/devices/claim', { code: code.code }, { cookie }));
    const got = result<{ pending: false } & BindResult>(await held);
    expect(got.pending).toBe(false);
    expect(Date.now() - started).toBeLessThan(15_000);
    const onB = result<{ devices: { id: string }[] }>(
      await api(bKit, 'GET', '/devices', undefined, { cookie }),
    );
    expect(onB.devices.map((d) => d.id)).toEqual([got.device_id]);
  }, 60_000);

  it('each replica clears only its own presence at start', async () => {
    const { cookie } = await signUpAndIn(a, 'presence', 'pw1234');
    const got = await bindByCode(a, cookie);
    await b.devices.setPresence(got.device_id, 'fleet-test-b');
    await a.fleet.devices.clearPresence();
    const q = await a.fleet.db.query<{ replica: string }>(
      'SELECT replica FROM devices WHERE id = $1',
      [got.device_id],
    );
    expect(q.rows[0]!.replica).toBe('fleet-test-b');
    await b.devices.clearPresence();
    const q2 = await a.fleet.db.query<{ replica: string | null }>(
      'SELECT replica FROM devices WHERE id = $1',
      [got.device_id],
    );
    expect(q2.rows[0]!.replica).toBeNull();
  }, 60_000);

  it('a NOTIFY from any connection wakes the waiter of that key, and only it', async () => {
    const w = new BindWaiters(a.pg.url, pino({ level: 'silent' }));
    await w.start();
    try {
      const never = new AbortController();
      let otherWoke = false;
      void w.wait('other-key', 20_000, never.signal).then(() => {
        otherWoke = true;
      });
      const started = Date.now();
      const woken = w.wait('the-key', 20_000, never.signal);
      await new Promise((r) => setTimeout(r, 200));
      await a.fleet.db.query('SELECT pg_notify($1, $2)', [w.channel, 'the-key']);
      await woken;
      // well before the 20 s of the wait: the notification, not the timer
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(otherWoke).toBe(false);
      never.abort();
    } finally {
      await w.close();
    }
  });
});

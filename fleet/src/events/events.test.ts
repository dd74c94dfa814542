/**
 * The event log against a real PostgreSQL: `record` (and the relay's `devices.event`, which
 * delegates to it), `GET events` through the visibility rule with paging and filters,
 * device_online / device_offline from presence with a flapping device bounded, the late event
 * of a flap that ended behind, and retention.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FleetEvent, FleetEventPage } from '@kvm/protocol';
import { parseConfig } from '../config';
import { sweepExpired } from '../db/sweep';
import {
  api,
  bindByCode,
  failure,
  result,
  signUpAndIn,
  sql,
  startKit,
  type Kit,
  accountIdOf,
} from '../test-kit';
import { record } from './events';
import { FLAP_WINDOW_S, reconcilePresence } from './presence';

let kit: Kit;
let admin: string;
let alice: string;
let bob: string;
let aliceId: string;
let dev: string;

beforeAll(async () => {
  // the scanners' own ticks (reconcilePresence) stay out of the way: the test calls it
  kit = await startKit({ config: { alerts: { offline_after_s: 60, scan_s: 300 } } });
  admin = (await signUpAndIn(kit, 'fleetadmin', 'pw1234')).cookie;
  alice = (await signUpAndIn(kit, 'alice', 'pw1234')).cookie;
  bob = (await signUpAndIn(kit, 'bobby', 'pw1234')).cookie;
  aliceId = await accountIdOf(kit, 'alice');
  dev = (await bindByCode(kit, alice)).device_id;
}, 60_000);
afterAll(() => kit?.close());

async function events(cookie: string, query = ''): Promise<FleetEventPage> {
  return result<FleetEventPage>(await api(kit, 'GET', `/events${query}`, undefined, { cookie }));
}

/** The device's presence events, oldest first: [kind, detail]. */
async function presence(deviceId: string): Promise<Array<[string, unknown]>> {
  const rows = await sql<{ kind: string; detail: unknown }>(
    kit,
    `SELECT kind, detail FROM events WHERE device_id = $1
       AND kind IN ('device_online', 'device_offline') ORDER BY id`,
    [deviceId],
  );
  return rows.map((r) => [r.kind, r.detail]);
}

describe('record and GET events', () => {
  it('records the actor; devices.event still works and finds the device\u2019s account', async () => {
    await record(kit.fleet.db, 'action', {
      deviceId: dev,
      actor: 'alice',
      detail: { action: 'power' },
    });
    await kit.fleet.devices.event('console_opened', { deviceId: dev, detail: { ip: '192.0.2.1' } });
    const rows = await sql<{ kind: string; account_id: string; actor: string | null }>(
      kit,
      `SELECT kind, account_id, actor FROM events WHERE device_id = $1 AND kind IN ('action', 'console_opened') ORDER BY id`,
      [dev],
    );
    expect(rows).toEqual([
      { kind: 'action', account_id: aliceId, actor: 'alice' },
      { kind: 'console_opened', account_id: aliceId, actor: null },
    ]);
  });

  it('an admin sees all; a user its own account\u2019s and the devices it sees; newest first with paging', async () => {
    const all = await events(admin, '?limit=200');
    expect(all.events.some((e) => e.kind === 'bound' && e.device_id === dev)).toBe(true);
    const bobs = await events(bob, '?limit=200');
    expect(bobs.events.some((e) => e.device_id === dev)).toBe(false);
    expect(bobs.events.every((e) => e.actor === null || e.actor === 'bobby')).toBe(true);
    const alices = await events(alice, `?device=${dev}`);
    expect(alices.events.map((e) => e.kind)).toEqual(
      expect.arrayContaining(['bound', 'action', 'console_opened']),
    );
    const opened = alices.events.find((e) => e.kind === 'console_opened')!;
    expect(opened).toMatchObject({ device_id: dev, detail: { ip: '192.0.2.1' } });
    expect(opened.device_name).toMatch(/^kvm-/);

    // bob sees the device's events once a group links him to it, never alice's own sign-ins
    const [g] = await sql<{ id: string }>(
      kit,
      `INSERT INTO device_groups (name) VALUES ('g1') RETURNING id`,
    );
    const [ug] = await sql<{ id: string }>(
      kit,
      `INSERT INTO user_groups (name) VALUES ('u1') RETURNING id`,
    );
    await sql(kit, 'INSERT INTO device_group_members VALUES ($1, $2)', [g!.id, dev]);
    await sql(
      kit,
      `INSERT INTO user_group_members SELECT $1, id FROM accounts WHERE username = 'bobby'`,
      [ug!.id],
    );
    await sql(kit, 'INSERT INTO group_links VALUES ($1, $2)', [ug!.id, g!.id]);
    const linked = await events(bob, '?limit=200');
    expect(linked.events.some((e) => e.kind === 'console_opened' && e.device_id === dev)).toBe(
      true,
    );
    expect(linked.events.some((e) => e.device_id === null && e.actor === 'alice')).toBe(false);

    // paging: ids strictly descending across pages, every event once
    for (let i = 0; i < 7; i += 1) await record(kit.fleet.db, 'test_kind', { accountId: aliceId });
    const seen: FleetEvent[] = [];
    let before: string | null = null;
    do {
      const p: FleetEventPage = await events(
        alice,
        `?kind=test_kind&limit=3${before ? `&before=${before}` : ''}`,
      );
      seen.push(...p.events);
      before = p.next;
    } while (before);
    expect(seen).toHaveLength(7);
    const ids = seen.map((e) => Number(e.id));
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    expect((await events(bob, '?kind=test_kind')).events).toEqual([]);
  });

  it('bad parameters are 400; no session is 401', async () => {
    const bad = ['?device=xyz', '?kind=Bad-Kind', '?before=-1', '?limit=0', '?limit=500'];
    for (const q of [...bad, '?kind=login&kind=logout']) {
      const f = failure(await api(kit, 'GET', `/events${q}`, undefined, { cookie: alice }));
      expect(f, q).toMatchObject({ status: 400, error: 'ValidatorError' });
    }
    expect(failure(await api(kit, 'GET', '/events')).status).toBe(401);
  });
});

describe('presence in the log', () => {
  it('online when held, offline when released and not held elsewhere; a flapping device writes one pair per window', async () => {
    const id = (await bindByCode(kit, alice)).device_id;
    const d = kit.fleet.devices;
    await d.setPresence(id, 'fleet-test');
    // moving to another replica is no change; that replica's socket going is not ours to clear
    await d.setPresence(id, 'fleet-other');
    await d.setPresence(id, null);
    expect(await presence(id)).toEqual([['device_online', { replica: 'fleet-test' }]]);
    await d.setPresence(id, 'fleet-test');
    await d.setPresence(id, null);
    expect(await presence(id)).toEqual([
      ['device_online', { replica: 'fleet-test' }],
      ['device_offline', { replica: 'fleet-test' }],
    ]);
    // five more flaps inside the window: nothing written, ten changes counted
    for (let i = 0; i < 5; i += 1) {
      await d.setPresence(id, 'fleet-test');
      await d.setPresence(id, null);
    }
    expect(await presence(id)).toHaveLength(2);
    // the window passes (the clock moved back by hand): the next online says what was left out
    await sql(
      kit,
      `UPDATE devices SET presence_online_at = now() - make_interval(secs => $2) WHERE id = $1`,
      [id, FLAP_WINDOW_S + 1],
    );
    await d.setPresence(id, 'fleet-test');
    expect((await presence(id)).slice(2)).toEqual([
      ['device_online', { replica: 'fleet-test', suppressed: 10 }],
    ]);
    await d.setPresence(id, null);
    expect(await presence(id)).toHaveLength(4);
  });

  it('a flap that ends online inside the window is written late, once, by one of the scanners', async () => {
    const id = (await bindByCode(kit, alice)).device_id;
    const d = kit.fleet.devices;
    await d.setPresence(id, 'fleet-test');
    await d.setPresence(id, null);
    await d.setPresence(id, 'fleet-test'); // left out: the log says offline, the device is online
    expect((await presence(id)).map((p) => p[0])).toEqual(['device_online', 'device_offline']);
    expect(await reconcilePresence(kit.fleet.db)).toBe(0); // not before the window ends
    await sql(
      kit,
      `UPDATE devices SET presence_online_at = now() - make_interval(secs => $2) WHERE id = $1`,
      [id, FLAP_WINDOW_S + 1],
    );
    const n = await Promise.all([
      reconcilePresence(kit.fleet.db),
      reconcilePresence(kit.fleet.db),
      reconcilePresence(kit.fleet.db),
    ]);
    expect(n.reduce((a, b) => a + b, 0)).toBe(1);
    expect((await presence(id)).slice(2)).toEqual([
      ['device_online', { replica: 'fleet-test', late: true, suppressed: 1 }],
    ]);
    // a replica's crash: its restart clears presence without events; the scan writes offline
    await d.clearPresence();
    expect(await reconcilePresence(kit.fleet.db)).toBe(1);
    expect((await presence(id)).at(-1)).toEqual(['device_offline', { late: true }]);
  });
});

describe('retention', () => {
  it('events.keep_days (default 90) bounds the log; the sweep deletes older events', async () => {
    expect(parseConfig({ database: 'postgres://x/y' }).events).toEqual({ keep_days: 90 });
    expect(() => parseConfig({ database: 'postgres://x/y', events: { keep_days: 0 } })).toThrow(
      /events\.keep_days/,
    );
    await sql(
      kit,
      `INSERT INTO events (kind, at) VALUES ('old_100', now() - interval '100 days'),
         ('old_30', now() - interval '30 days')`,
    );
    await sweepExpired(kit.fleet.db, 90);
    const left = await sql<{ kind: string }>(
      kit,
      `SELECT kind FROM events WHERE kind LIKE 'old_%' ORDER BY kind`,
    );
    expect(left.map((r) => r.kind)).toEqual(['old_30']);
    await sweepExpired(kit.fleet.db, 7);
    expect(await sql(kit, `SELECT 1 FROM events WHERE kind LIKE 'old_%'`)).toEqual([]);
  });
});

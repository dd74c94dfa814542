/**
 * `GET devices` search and paging and `PATCH devices/:id` against a real PostgreSQL: keyset
 * pages, substring search over every field (wildcards taken literally), group and presence
 * filters through the visibility rule, bad parameters, renaming; and at 10,000 devices the
 * planner uses the indexes (no sequential scan of devices for a search).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { FleetDevicePage, FleetDeviceRow, FleetEventPage } from '@kvm/protocol';
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
  accountIdOf,
} from '../test-kit';
import { makeCursor } from './devices';
import { seedDevices } from './seed';

let kit: Kit;
let admin: string;
let alice: string;
let bob: string;
let aliceId: string;
let aliceDevices: string[];
let oddId: string;

beforeAll(async () => {
  kit = await startKit();
  admin = (await signUpAndIn(kit, 'fleetadmin', 'pw1234')).cookie;
  alice = (await signUpAndIn(kit, 'alice', 'pw1234')).cookie;
  bob = (await signUpAndIn(kit, 'bobby', 'pw1234')).cookie;
  aliceId = await accountIdOf(kit, 'alice');
  const bobId = await accountIdOf(kit, 'bobby');
  aliceDevices = await seedDevices(kit.fleet.db, aliceId, 30, { prefix: 'alice' });
  await seedDevices(kit.fleet.db, bobId, 5, { prefix: 'bob' });
  // a bound device whose name holds LIKE's wildcards
  oddId = (await bindByCode(kit, alice, identity({ name: 'Rack_50%', model: 'odd-model' })))
    .device_id;
}, 60_000);
afterAll(() => kit?.close());

async function page(cookie: string, query = ''): Promise<FleetDevicePage> {
  return result<FleetDevicePage>(await api(kit, 'GET', `/devices${query}`, undefined, { cookie }));
}

describe('GET devices', () => {
  it('pages through every visible device once, by name then id, with the total', async () => {
    const seen: FleetDeviceRow[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const p: FleetDevicePage = await page(
        alice,
        `?limit=7${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(p.total).toBe(31);
      expect(p.devices.length).toBeLessThanOrEqual(7);
      seen.push(...p.devices);
      cursor = p.next;
      pages += 1;
    } while (cursor !== null && pages < 20);
    expect(pages).toBe(5);
    expect(new Set(seen.map((d) => d.id)).size).toBe(31);
    const keys = seen.map((d) => [d.name.toLowerCase(), d.id] as const);
    const sorted = [...keys].sort((a, b) =>
      a[0] === b[0] ? (a[1] < b[1] ? -1 : 1) : a[0] < b[0] ? -1 : 1,
    );
    expect(keys).toEqual(sorted);
    const odd = seen.find((d) => d.id === oddId)!;
    expect(odd).toMatchObject({ name: 'Rack_50%', owner: 'alice', groups: [], online: false });
    expect(odd.bound_at).toBeGreaterThan(0);
    // the part-1 call without a query still answers `devices` (the first 50)
    const plain = await page(alice);
    expect(plain.devices).toHaveLength(31);
    expect(plain.next).toBeNull();
  });

  it('q matches name, MAC, serial, model and version as a case-insensitive substring', async () => {
    const byName = await page(alice, '?q=ALICE-0001');
    expect(byName.devices.map((d) => d.name)).toEqual(
      Array.from({ length: 10 }, (_, i) => `alice-000${10 + i}`),
    );
    expect(byName.total).toBe(10);
    const one = (await page(alice, '?q=alice-00007')).devices[0]!;
    expect(
      (await page(alice, `?q=${one.mac.slice(-8).toUpperCase()}`)).devices.map((d) => d.id),
    ).toEqual([one.id]);
    expect((await page(alice, `?q=${one.serial.toLowerCase()}`)).devices.map((d) => d.id)).toEqual([
      one.id,
    ]);
    expect((await page(alice, '?q=odd-MODEL')).devices.map((d) => d.id)).toEqual([oddId]);
    // versions 1.2.0 / 1.3.1 / 2.0.0 by i % 3: 10 of alice's 30 have 2.0.0
    expect((await page(alice, '?q=2.0.0')).total).toBe(10);
    // no match across two fields (the newline between them)
    expect((await page(alice, `?q=${encodeURIComponent(`${one.name}02:`)}`)).total).toBe(0);
  });

  it("LIKE's wildcards in q are literal characters", async () => {
    expect((await page(alice, `?q=${encodeURIComponent('%')}`)).devices.map((d) => d.id)).toEqual([
      oddId,
    ]);
    expect((await page(alice, '?q=_')).devices.map((d) => d.id)).toEqual([oddId]);
    expect((await page(alice, `?q=${encodeURIComponent('50%')}`)).total).toBe(1);
    expect((await page(alice, `?q=${encodeURIComponent('\\')}`)).total).toBe(0);
  });

  it('group and online filter; a user sees only its own and its groups\u2019 devices', async () => {
    expect((await page(bob, '?q=alice')).total).toBe(0);
    expect((await page(bob)).total).toBe(5);
    const [g] = await sql<{ id: string }>(
      kit,
      `INSERT INTO device_groups (name) VALUES ('Lab') RETURNING id`,
    );
    const [ug] = await sql<{ id: string }>(
      kit,
      `INSERT INTO user_groups (name) VALUES ('lab-users') RETURNING id`,
    );
    const shared = aliceDevices.slice(0, 3);
    for (const d of shared) {
      await sql(kit, 'INSERT INTO device_group_members (group_id, device_id) VALUES ($1, $2)', [
        g!.id,
        d,
      ]);
    }
    await sql(
      kit,
      `INSERT INTO user_group_members (group_id, account_id)
       SELECT $1, id FROM accounts WHERE username = 'bobby'`,
      [ug!.id],
    );
    await sql(kit, 'INSERT INTO group_links (user_group_id, device_group_id) VALUES ($1, $2)', [
      ug!.id,
      g!.id,
    ]);
    const inGroup = await page(bob, `?group=${g!.id}`);
    expect(inGroup.devices.map((d) => d.id).sort()).toEqual([...shared].sort());
    expect(inGroup.devices[0]).toMatchObject({
      owner: 'alice',
      groups: [{ id: g!.id, name: 'Lab' }],
    });
    expect((await page(bob)).total).toBe(8);
    expect((await page(bob, '?q=alice')).total).toBe(3);
    // presence is the replica column
    await sql(kit, `UPDATE devices SET replica = 'fleet-x' WHERE id = ANY($1)`, [
      shared.slice(0, 2),
    ]);
    expect((await page(bob, '?online=true')).devices.map((d) => d.id).sort()).toEqual(
      shared.slice(0, 2).sort(),
    );
    expect((await page(bob, '?online=false')).total).toBe(6);
    expect((await page(admin, '?online=true&q=alice')).total).toBe(2);
    expect((await page(admin)).total).toBe(36);
    await sql(kit, `UPDATE devices SET replica = NULL WHERE id = ANY($1)`, [shared]);
  });

  it('bad parameters are 400 with the parameter named', async () => {
    const bad = async (query: string, what: RegExp) => {
      const f = failure(await api(kit, 'GET', `/devices${query}`, undefined, { cookie: alice }));
      expect(f).toMatchObject({ status: 400, error: 'ValidatorError' });
      expect(f.error_msg).toMatch(what);
    };
    await bad('?cursor=not*base64', /cursor/);
    await bad(`?cursor=${Buffer.from('{"a":1}').toString('base64url')}`, /cursor/);
    await bad(`?cursor=${makeCursor('x', 'not-an-id')}`, /cursor/);
    await bad('?limit=0', /limit/);
    await bad('?limit=201', /limit/);
    await bad('?limit=abc', /limit/);
    await bad(`?q=${'x'.repeat(65)}`, /q is longer/);
    await bad('?group=lab', /group/);
    await bad('?online=yes', /online/);
    await bad('?q=a&q=b', /q must be given once/);
    await bad(`?group=${'0'.repeat(8)}-0000-0000-0000-${'0'.repeat(12)}&group=x`, /group/);
    expect(failure(await api(kit, 'GET', '/devices')).status).toBe(401);
  });
});

describe('PATCH devices/:id', () => {
  it('the owner or an admin renames; anyone else finds no such device; logged with the actor', async () => {
    const id = aliceDevices[5]!;
    const renamed = result<FleetDeviceRow>(
      await api(kit, 'PATCH', `/devices/${id}`, { name: '  Zulu rack ' }, { cookie: alice }),
    );
    expect(renamed).toMatchObject({ id, name: 'Zulu rack', owner: 'alice' });
    const last = (await page(alice)).devices.at(-1)!;
    expect(last.id).toBe(id);
    // bob sees alice's group devices but may not rename them; nor devices he cannot see
    expect(
      failure(
        await api(kit, 'PATCH', `/devices/${aliceDevices[0]}`, { name: 'x' }, { cookie: bob }),
      ).status,
    ).toBe(404);
    expect(
      failure(await api(kit, 'PATCH', `/devices/${id}`, { name: 'x' }, { cookie: bob })).status,
    ).toBe(404);
    expect(
      failure(await api(kit, 'PATCH', '/devices/nonexistent', { name: 'x' }, { cookie: bob }))
        .status,
    ).toBe(404);
    result(await api(kit, 'PATCH', `/devices/${id}`, { name: 'Yankee' }, { cookie: admin }));
    for (const name of ['', '   ', 'x'.repeat(65), 'a\u0007b', 5, null]) {
      const f = failure(await api(kit, 'PATCH', `/devices/${id}`, { name }, { cookie: alice }));
      expect(f).toMatchObject({ status: 400, error: 'ValidatorError' });
      expect(f.error_msg).toMatch(/^name/);
    }
    const log = result<FleetEventPage>(
      await api(kit, 'GET', `/events?device=${id}&kind=device_renamed`, undefined, {
        cookie: alice,
      }),
    );
    expect(log.events.map((e) => [e.actor, e.detail, e.device_name])).toEqual([
      ['fleetadmin', { from: 'Zulu rack', to: 'Yankee' }, 'Yankee'],
      ['alice', { from: 'alice-00006', to: 'Zulu rack' }, 'Yankee'],
    ]);
  });
});

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

function nodes(n: PlanNode): PlanNode[] {
  return [n, ...(n.Plans ?? []).flatMap(nodes)];
}

describe('at 10,000 devices', () => {
  it('a search uses the trigram index and the list the name index: no sequential scan of devices', async () => {
    await seedDevices(kit.fleet.db, await accountIdOf(kit, 'fleetadmin'), 10_000, {
      prefix: 'fleet',
    });
    await sql(kit, 'ANALYZE devices');
    const rootUser = (await kit.fleet.accounts.userOfToken(admin))!;
    const aliceUser = (await kit.fleet.accounts.userOfToken(alice))!;
    const spy = vi.spyOn(kit.fleet.db, 'query');
    const times: number[] = [];
    for (let i = 0; i < 20; i += 1) {
      const t = performance.now();
      const p = await kit.fleet.devices.page(rootUser, { q: `fleet-0${100 + i}`, limit: '50' });
      times.push(performance.now() - t);
      expect(p.total).toBe(10);
    }
    await kit.fleet.devices.page(aliceUser, { q: 'alice-0002' });
    const first = await kit.fleet.devices.page(rootUser, {});
    const second = await kit.fleet.devices.page(rootUser, { cursor: first.next! });
    expect(second.devices).toHaveLength(50);
    const calls = spy.mock.calls.map((c) => c as unknown as [string, unknown[]]);
    spy.mockRestore();
    const explained: Array<{ text: string; plan: PlanNode[] }> = [];
    for (const [text, values] of calls) {
      if (typeof text !== 'string' || !/FROM devices d/.test(text)) continue;
      const r = await kit.fleet.db.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
        `EXPLAIN (FORMAT JSON) ${text}`,
        values,
      );
      explained.push({ text, plan: nodes(r.rows[0]!['QUERY PLAN'][0]!.Plan) });
    }
    const searches = explained.filter((e) => /ILIKE/.test(e.text));
    expect(searches.length).toBeGreaterThanOrEqual(4);
    for (const s of searches) {
      const seq = s.plan.filter(
        (n) => n['Node Type'] === 'Seq Scan' && n['Relation Name'] === 'devices',
      );
      expect(seq, s.text).toEqual([]);
      expect(
        s.plan.some((n) => n['Index Name'] === 'devices_search_idx'),
        s.text,
      ).toBe(true);
    }
    // the pages without a search walk the name index from the cursor
    const lists = explained.filter((e) => !/ILIKE|count\(\*\)/.test(e.text));
    expect(lists.length).toBeGreaterThanOrEqual(2);
    for (const l of lists) {
      expect(
        l.plan.some((n) => n['Index Name'] === 'devices_name_idx'),
        l.text,
      ).toBe(true);
    }
    times.sort((a, b) => a - b);
    console.log(
      `device search at 10,036 devices: p50 ${times[10]!.toFixed(1)} ms, p95 ${times[18]!.toFixed(1)} ms`,
    );
  }, 120_000);
});

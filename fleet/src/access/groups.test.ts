/**
 * Groups against a real PostgreSQL, with the relay (the tunnel at /d/<id>/): an admin makes user
 * and device groups and links them; a user of group A sees and opens group A's devices and never
 * group B's (device list, the tunnel, GET groups), and a link or membership change takes effect
 * on the very next request. Names, limits and unknown ids are refused with clear errors.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FleetGroups, FleetMe, FleetUserRow } from '@kvm/protocol';
import type { FleetUser } from '../context';
import {
  HOST,
  api,
  bindByCode,
  failure,
  result,
  signIn,
  signUpAndIn,
  sql,
  startKit,
  type Kit,
} from '../test-kit';
import { GROUP_PATCH_MAX_IDS } from './groups';

let kit: Kit;
let admin: string;
/** Devices the admin bound: a1, a2 go in group A; b1 in group B. */
const dev: Record<string, string> = {};
let alice: { cookie: string; user: FleetUser };
let groupA = '';
let groupB = '';
let usersA = '';
let usersB = '';

beforeAll(async () => {
  kit = await startKit({ relay: true });
  admin = (await signUpAndIn(kit, 'gadmin')).cookie;
  for (const n of ['a1', 'a2', 'b1']) dev[n] = (await bindByCode(kit, admin)).device_id;
  const made = result<FleetUserRow>(
    await api(
      kit,
      'POST',
      '/users',
      { username: 'alice', email: 'alice@example.org', password: 'pass123' },
      { cookie: admin },
    ),
  );
  const cookie = await signIn(kit, 'alice', 'pass123');
  alice = { cookie, user: { accountId: made.id, username: 'alice', role: 'user' } };
}, 60_000);
afterAll(() => kit?.close());

const post = (path: string, body: unknown, cookie = admin) =>
  api(kit, 'POST', path, body, { cookie });
const patch = (path: string, body: unknown, cookie = admin) =>
  api(kit, 'PATCH', path, body, { cookie });

async function aliceSees(): Promise<string[]> {
  const r = result<{ devices: Array<{ id: string }> }>(
    await api(kit, 'GET', '/devices', undefined, { cookie: alice.cookie }),
  );
  return r.devices.map((d) => d.id).sort();
}

/** The tunnel's answer to alice for a device's console: 404 when she may not see it. */
async function aliceOpens(id: string): Promise<number> {
  const r = await kit.app.inject({
    method: 'GET',
    url: `/d/${id}/api/info`,
    headers: { host: HOST, cookie: `fleet_session=${alice.cookie}` },
  });
  return r.statusCode;
}

describe('groups: who sees which device', () => {
  it('a user of group A sees and opens only group A devices, from the next request on', async () => {
    groupA = result<{ id: string }>(await post('/groups/devices', { name: 'Lab A' })).id;
    groupB = result<{ id: string }>(await post('/groups/devices', { name: 'Lab B' })).id;
    usersA = result<{ id: string }>(await post('/groups/users', { name: 'Team A' })).id;
    usersB = result<{ id: string }>(await post('/groups/users', { name: 'Team B' })).id;
    result(await patch(`/groups/devices/${groupA}`, { add_devices: [dev.a1, dev.a2] }));
    result(await patch(`/groups/devices/${groupB}`, { add_devices: [dev.b1] }));
    result(await patch(`/groups/users/${usersB}`, { device_groups: [groupB] }));

    // alice in no group: nothing
    expect(await aliceSees()).toEqual([]);
    expect(await aliceOpens(dev.a1!)).toBe(404);

    // in Team A, linked to Lab A: a1 and a2, never b1
    result(await patch(`/groups/users/${usersA}`, { add_members: [alice.user.accountId] }));
    result(await patch(`/groups/users/${usersA}`, { device_groups: [groupA] }));
    expect(await aliceSees()).toEqual([dev.a1, dev.a2].sort());
    expect(await kit.fleet.devices.forUser(alice.user, dev.a1!)).not.toBeNull();
    expect(await kit.fleet.devices.forUser(alice.user, dev.b1!)).toBeNull();
    // the tunnel lets her past the visibility check (the device is offline: not a 404) for a1
    expect(await aliceOpens(dev.a1!)).not.toBe(404);
    expect(await aliceOpens(dev.b1!)).toBe(404);
    // she cannot remove a device she sees through a group
    expect(
      failure(await api(kit, 'DELETE', `/devices/${dev.a1}`, undefined, { cookie: alice.cookie }))
        .status,
    ).toBe(404);

    // GET groups: her own user group and the device groups she sees, nothing of B
    const mine = result<FleetGroups>(
      await api(kit, 'GET', '/groups', undefined, { cookie: alice.cookie }),
    );
    expect(mine.user_groups.map((g) => g.name)).toEqual(['Team A']);
    expect(mine.user_groups[0]!.members).toEqual([]);
    expect(mine.device_groups.map((g) => [g.name, g.device_count, g.user_groups])).toEqual([
      ['Lab A', 2, [usersA]],
    ]);

    // a2 leaves Lab A: gone on the next request
    result(await patch(`/groups/devices/${groupA}`, { remove_devices: [dev.a2] }));
    expect(await aliceSees()).toEqual([dev.a1]);
    // Team A's links replaced by Lab B: now b1 only
    result(await patch(`/groups/users/${usersA}`, { device_groups: [groupB] }));
    expect(await aliceSees()).toEqual([dev.b1]);
    expect(await aliceOpens(dev.a1!)).toBe(404);
    expect(await aliceOpens(dev.b1!)).not.toBe(404);
    // out of the group: nothing again
    result(await patch(`/groups/users/${usersA}`, { remove_members: [alice.user.accountId] }));
    expect(await aliceSees()).toEqual([]);
    expect(await aliceOpens(dev.b1!)).toBe(404);
  });

  it('an admin gets every group with members and links; changes are logged with the admin', async () => {
    const all = result<FleetGroups>(await api(kit, 'GET', '/groups', undefined, { cookie: admin }));
    expect(all.user_groups.map((g) => g.name)).toEqual(['Team A', 'Team B']);
    expect(all.device_groups.map((g) => [g.name, g.device_count])).toEqual([
      ['Lab A', 1],
      ['Lab B', 1],
    ]);
    expect(all.user_groups.find((g) => g.name === 'Team B')!.device_groups).toEqual([groupB]);
    const ev = await sql<{ actor: string; detail: { op: string } }>(
      kit,
      `SELECT actor, detail FROM events WHERE kind = 'group_changed' ORDER BY id`,
    );
    expect(ev.length).toBeGreaterThan(5);
    expect(new Set(ev.map((e) => e.actor))).toEqual(new Set(['gadmin']));
    // a user may not change groups
    expect(failure(await post('/groups/users', { name: 'Mine' }, alice.cookie)).status).toBe(403);
    expect(
      failure(await patch(`/groups/users/${usersA}`, { name: 'x' }, alice.cookie)).status,
    ).toBe(403);
  });
});

describe('groups: refusals', () => {
  it('names: 1-64 printable, unique per kind regardless of case (409)', async () => {
    for (const name of ['', '   ', 'x'.repeat(65), 'bad\u0007bell', 42]) {
      expect(failure(await post('/groups/users', { name })).status, String(name)).toBe(400);
    }
    expect(failure(await post('/groups/users', { name: 'team a' })).status).toBe(409);
    // the other kind may have the same name
    const same = result<{ id: string }>(await post('/groups/devices', { name: 'team a' }));
    const clash = failure(await patch(`/groups/devices/${same.id}`, { name: 'LAB A' }));
    expect(clash.status).toBe(409);
    result(await api(kit, 'DELETE', `/groups/devices/${same.id}`, undefined, { cookie: admin }));
    expect(
      failure(await api(kit, 'DELETE', `/groups/devices/${same.id}`, undefined, { cookie: admin }))
        .status,
    ).toBe(404);
  });

  it('unknown ids are 404 naming them, and nothing of the change is kept', async () => {
    const r = failure(
      await patch(`/groups/devices/${groupA}`, { add_devices: [dev.a2, 'no-such-dev'] }),
    );
    expect([r.status, r.error_msg]).toEqual([404, 'No such device: no-such-dev']);
    // a2 was not added either (all or nothing)
    const g = result<FleetGroups>(await api(kit, 'GET', '/groups', undefined, { cookie: admin }));
    expect(g.device_groups.find((x) => x.id === groupA)!.device_count).toBe(1);
    const ghost = '00000000-0000-4000-8000-000000000000';
    const m = failure(await patch(`/groups/users/${usersA}`, { add_members: [ghost] }));
    expect([m.status, m.error_msg]).toEqual([404, `No such user: ${ghost}`]);
    const l = failure(await patch(`/groups/users/${usersA}`, { device_groups: [ghost] }));
    expect([l.status, l.error_msg]).toEqual([404, `No such device group: ${ghost}`]);
    expect(failure(await patch(`/groups/users/${ghost}`, { name: 'x' })).status).toBe(404);
    expect(failure(await patch('/groups/users/not-a-uuid', { name: 'x' })).status).toBe(404);
  });

  it(`a list of more than ${GROUP_PATCH_MAX_IDS} ids, or not of strings, is 400`, async () => {
    const many = Array.from({ length: GROUP_PATCH_MAX_IDS + 1 }, (_, i) => `d${i}`);
    expect(failure(await patch(`/groups/devices/${groupA}`, { add_devices: many })).status).toBe(
      400,
    );
    expect(failure(await patch(`/groups/devices/${groupA}`, { add_devices: [1] })).status).toBe(
      400,
    );
    expect(failure(await patch(`/groups/devices/${groupA}`, { add_devices: 'x' })).status).toBe(
      400,
    );
  });

  it('deleting a group ends what it gave', async () => {
    result(await patch(`/groups/users/${usersA}`, { add_members: [alice.user.accountId] }));
    expect(await aliceSees()).toEqual([dev.b1]);
    result(await api(kit, 'DELETE', `/groups/devices/${groupB}`, undefined, { cookie: admin }));
    expect(await aliceSees()).toEqual([]);
    const me = result<FleetMe>(await api(kit, 'GET', '/me', undefined, { cookie: alice.cookie }));
    expect(me.role).toBe('user');
  });
});

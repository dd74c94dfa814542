/**
 * User groups and device groups (docs/cloud.md "Users, groups and roles"): an admin names them,
 * puts accounts in user groups and devices in device groups, and links a user group to the
 * device groups it sees. Visibility itself is visibility.ts's one SQL rule over these tables,
 * read on every request: a change takes effect on the next one.
 */
import {
  FLEET_GROUP_NAME_MAX,
  type FleetDeviceGroup,
  type FleetGroups,
  type FleetUserGroup,
} from '@kvm/protocol';
import type { PoolClient } from 'pg';
import type { FleetUser } from '../context';
import { inTransaction, uniqueViolation, type Db } from '../db/pool';
import { DEVICE_ID_RE, UUID_RE } from '../devices/devices';
import { ConflictStateError, NotFoundError, ValidatorError } from '../errors';

/** At most this many ids in one list of a PATCH. */
export const GROUP_PATCH_MAX_IDS = 1000;
// printable: no control, format, unassigned or surrogate code points
const NAME_RE = new RegExp(`^[^\\p{C}]{1,${FLEET_GROUP_NAME_MAX}}$`, 'u');

export type GroupKind = 'users' | 'devices';

const ACCOUNTS_IN = 'SELECT id::text AS id FROM accounts WHERE id = ANY($1::uuid[])';
const DEVICES_IN = 'SELECT id FROM devices WHERE id = ANY($1::text[])';

/** A group name: trimmed, 1-64 printable characters (400 otherwise). */
export function groupName(raw: unknown): string {
  const name = typeof raw === 'string' ? raw.trim() : '';
  if (!NAME_RE.test(name)) {
    throw new ValidatorError(`name must be 1-${FLEET_GROUP_NAME_MAX} printable characters`);
  }
  return name;
}

/** A list of ids from a PATCH body (absent: empty), at most 1000, each of `re`'s form or 404. */
function idList(body: Record<string, unknown>, key: string, what: string, re: RegExp): string[] {
  const v = body[key];
  if (v === undefined) return [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
    throw new ValidatorError(`${key} must be an array of ids`);
  }
  if (v.length > GROUP_PATCH_MAX_IDS) {
    throw new ValidatorError(`${key} names more than ${GROUP_PATCH_MAX_IDS} ids`);
  }
  const ids = [...new Set(v as string[])];
  const bad = ids.find((id) => !re.test(id));
  if (bad !== undefined) throw new NotFoundError(`No such ${what}: ${bad.slice(0, 64)}`);
  return ids;
}

/** 404 naming the first of `ids` that `sql` (given the array as $1) does not answer. */
async function requireAll(c: PoolClient, ids: string[], sql: string, what: string): Promise<void> {
  if (ids.length === 0) return;
  const r = await c.query<{ id: string }>(sql, [ids]);
  const found = new Set(r.rows.map((x) => x.id));
  const missing = ids.find((id) => !found.has(id));
  if (missing !== undefined) throw new NotFoundError(`No such ${what}: ${missing}`);
}

export class Groups {
  constructor(private readonly db: Db) {}

  /** `GET groups`: an admin gets all; a user its own user groups and the device groups it sees. */
  async list(user: FleetUser): Promise<FleetGroups> {
    const admin = user.role === 'admin';
    const ug = await this.db.query<FleetUserGroup>(
      `SELECT g.id, g.name,
         COALESCE((SELECT json_agg(json_build_object('id', a.id, 'username', a.username)
                     ORDER BY lower(a.username))
                   FROM user_group_members m JOIN accounts a ON a.id = m.account_id
                   WHERE m.group_id = g.id AND $1), '[]') AS members,
         COALESCE((SELECT array_agg(l.device_group_id::text ORDER BY l.device_group_id)
                   FROM group_links l WHERE l.user_group_id = g.id AND $1), '{}') AS device_groups
       FROM user_groups g
       WHERE $1 OR EXISTS (SELECT 1 FROM user_group_members m
                           WHERE m.group_id = g.id AND m.account_id = $2)
       ORDER BY lower(g.name), g.id`,
      [admin, user.accountId],
    );
    const dg = await this.db.query<FleetDeviceGroup & { device_count: string }>(
      `SELECT g.id, g.name,
         (SELECT count(*) FROM device_group_members m JOIN devices d ON d.id = m.device_id
          WHERE m.group_id = g.id AND d.revoked_at IS NULL) AS device_count,
         COALESCE((SELECT array_agg(l.user_group_id::text ORDER BY l.user_group_id)
                   FROM group_links l WHERE l.device_group_id = g.id AND ($1 OR EXISTS (
                     SELECT 1 FROM user_group_members m
                     WHERE m.group_id = l.user_group_id AND m.account_id = $2))), '{}')
           AS user_groups
       FROM device_groups g
       WHERE $1 OR EXISTS (SELECT 1 FROM group_links l
                             JOIN user_group_members m ON m.group_id = l.user_group_id
                           WHERE l.device_group_id = g.id AND m.account_id = $2)
       ORDER BY lower(g.name), g.id`,
      [admin, user.accountId],
    );
    return {
      user_groups: ug.rows,
      device_groups: dg.rows.map((g) => ({ ...g, device_count: Number(g.device_count) })),
    };
  }

  /** `POST groups/users|devices` {name}: 409 when the name is taken (case-insensitive). */
  async create(kind: GroupKind, rawName: unknown): Promise<{ id: string; name: string }> {
    const name = groupName(rawName);
    try {
      const r = await this.db.query<{ id: string; name: string }>(
        `INSERT INTO ${kind === 'users' ? 'user_groups' : 'device_groups'} (name) VALUES ($1)
         RETURNING id, name`,
        [name],
      );
      return r.rows[0]!;
    } catch (e) {
      if (uniqueViolation(e) === null) throw e;
      throw new ConflictStateError(`A group named "${name}" exists already`);
    }
  }

  /** `DELETE groups/users|devices/:id`: its memberships and links go with it. */
  async remove(kind: GroupKind, id: string): Promise<{ id: string; name: string }> {
    if (!UUID_RE.test(id)) throw new NotFoundError('No such group');
    const r = await this.db.query<{ id: string; name: string }>(
      `DELETE FROM ${kind === 'users' ? 'user_groups' : 'device_groups'} WHERE id = $1
       RETURNING id, name`,
      [id],
    );
    if (!r.rows[0]) throw new NotFoundError('No such group');
    return r.rows[0];
  }

  /** `PATCH groups/users/:id` (FleetUserGroupPatch): all of it or nothing. */
  async patchUserGroup(id: string, body: Record<string, unknown>): Promise<{ name: string }> {
    if (!UUID_RE.test(id)) throw new NotFoundError('No such group');
    const add = idList(body, 'add_members', 'user', UUID_RE);
    const remove = idList(body, 'remove_members', 'user', UUID_RE);
    const links =
      body.device_groups === undefined
        ? null
        : idList(body, 'device_groups', 'device group', UUID_RE);
    const name = body.name === undefined ? null : groupName(body.name);
    return inTransaction(this.db, async (c) => {
      const g = await this.lockGroup(c, 'user_groups', id);
      await requireAll(c, [...add, ...remove], ACCOUNTS_IN, 'user');
      if (links) {
        await requireAll(
          c,
          links,
          'SELECT id::text AS id FROM device_groups WHERE id = ANY($1::uuid[])',
          'device group',
        );
      }
      if (name !== null) await this.rename(c, 'user_groups', id, name);
      await changeMembers(c, USER_MEMBERS, id, add, remove);
      if (links) {
        await c.query('DELETE FROM group_links WHERE user_group_id = $1', [id]);
        await c.query(
          `INSERT INTO group_links (user_group_id, device_group_id)
           SELECT $1, unnest($2::uuid[])`,
          [id, links],
        );
      }
      return { name: name ?? g };
    });
  }

  /** `PATCH groups/devices/:id` (FleetDeviceGroupPatch): all of it or nothing. */
  async patchDeviceGroup(id: string, body: Record<string, unknown>): Promise<{ name: string }> {
    if (!UUID_RE.test(id)) throw new NotFoundError('No such group');
    const add = idList(body, 'add_devices', 'device', DEVICE_ID_RE);
    const remove = idList(body, 'remove_devices', 'device', DEVICE_ID_RE);
    const name = body.name === undefined ? null : groupName(body.name);
    return inTransaction(this.db, async (c) => {
      const g = await this.lockGroup(c, 'device_groups', id);
      // a device joins while bound; one unbound since may still leave
      await requireAll(c, add, `${DEVICES_IN} AND revoked_at IS NULL`, 'device');
      await requireAll(c, remove, DEVICES_IN, 'device');
      if (name !== null) await this.rename(c, 'device_groups', id, name);
      await changeMembers(c, DEVICE_MEMBERS, id, add, remove);
      return { name: name ?? g };
    });
  }

  private async lockGroup(c: PoolClient, table: string, id: string): Promise<string> {
    const r = await c.query<{ name: string }>(
      `SELECT name FROM ${table} WHERE id = $1 FOR UPDATE`,
      [id],
    );
    if (!r.rows[0]) throw new NotFoundError('No such group');
    return r.rows[0].name;
  }

  private async rename(c: PoolClient, table: string, id: string, name: string): Promise<void> {
    await c.query('SAVEPOINT rename');
    try {
      await c.query(`UPDATE ${table} SET name = $2 WHERE id = $1`, [id, name]);
    } catch (e) {
      if (uniqueViolation(e) === null) throw e;
      await c.query('ROLLBACK TO SAVEPOINT rename');
      throw new ConflictStateError(`A group named "${name}" exists already`);
    }
  }
}

/** A group's member table: its name, the member's column and that column's SQL type. */
interface MemberTable {
  table: string;
  column: string;
  type: 'uuid' | 'text';
}
const USER_MEMBERS: MemberTable = {
  table: 'user_group_members',
  column: 'account_id',
  type: 'uuid',
};
const DEVICE_MEMBERS: MemberTable = {
  table: 'device_group_members',
  column: 'device_id',
  type: 'text',
};

/** Adds and removes members of group `id` (inside the caller's transaction). */
async function changeMembers(
  c: PoolClient,
  m: MemberTable,
  id: string,
  add: string[],
  remove: string[],
): Promise<void> {
  if (add.length) {
    await c.query(
      `INSERT INTO ${m.table} (group_id, ${m.column})
       SELECT $1, unnest($2::${m.type}[]) ON CONFLICT DO NOTHING`,
      [id, add],
    );
  }
  if (remove.length) {
    await c.query(
      `DELETE FROM ${m.table} WHERE group_id = $1 AND ${m.column} = ANY($2::${m.type}[])`,
      [id, remove],
    );
  }
}

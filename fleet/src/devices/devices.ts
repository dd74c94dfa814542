/**
 * The device registry and binding (docs/cloud.md "Binding"):
 * - a device asks for a code (8 digits, 60 s, single use) and gets a claim token only it knows;
 * - a signed-in account claims the code; the device's long poll then collects the binding once:
 *   the per-device secret is made at that moment and only its SHA-256 is stored, so the secret
 *   is never at rest in clear anywhere on the fleet;
 * - or the device logs in with the account's credentials (`bind/login`);
 * - the relay authenticates agents against it (DeviceDirectory), constant-time on the hash.
 * Codes and claim tokens are stored as SHA-256 too. A replayed code finds nothing to claim, a
 * forged one is one of 10^8 and the claims are rate limited per account and per address.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { PoolClient } from 'pg';
import type { Logger } from 'pino';
import {
  AGENT_PATH,
  BIND_CODE_DIGITS,
  BIND_CODE_TTL_S,
  DEVICE_SECRET_BYTES,
  FLEET_QUERY_MAX,
  type BindCodeAnswer,
  type BindPollAnswer,
  type BindResult,
  type DeviceIdentity,
  type FleetDevicePage,
  type FleetDeviceRow,
} from '@kvm/protocol';
import { base32Encode } from '../../../server/src/services/auth/totp';
import { digitCode, sha256, type Account } from '../accounts/accounts';
import { visibilityParams, visibleTo } from '../access/visibility';
import type { DeviceDirectory, FleetConfig, FleetDevice, FleetUser, DeviceRelay } from '../context';
import { inTransaction, uniqueViolation, type Db } from '../db/pool';
import {
  BindCodeGoneError,
  BindCodeNotFoundError,
  DeviceAuthError,
  NotFoundError,
  ServiceUnavailableError,
  ValidatorError,
} from '../errors';
import { Throttle } from '../throttle';
import { pageLimit, record, type EventFields } from '../events/events';
import { PRESENCE_COLUMNS, presenceChanged, type PresenceLogRow } from '../events/presence';
import type { BindWaiters } from './bind-waiters';

/** A claimed binding may be collected this long after its claim. */
export const COLLECT_GRACE_S = 300;
/** The longest a `bind/poll` is held. */
export const BIND_POLL_MAX_MS = 25_000;
/** Polls held at once on one replica (each is a request kept open). */
export const MAX_PENDING_POLLS = 2000;

interface DeviceRow {
  id: string;
  account_id: string;
  name: string;
  mac: string;
  serial: string;
  model: string;
  version: string;
  secret_hash: string;
  bound_at: Date;
  revoked_at: Date | null;
  replica: string | null;
  last_seen: Date | null;
}

function toFleetDevice(r: DeviceRow): FleetDevice {
  return {
    id: r.id,
    accountId: r.account_id,
    name: r.name,
    identity: { mac: r.mac, serial: r.serial, name: r.name, model: r.model, version: r.version },
    revoked: r.revoked_at !== null,
  };
}

/** 16 lower-case base32 characters (80 random bits): the path `/d/<id>/`. */
export function newDeviceId(): string {
  return base32Encode(randomBytes(10)).toLowerCase();
}

export const DEVICE_ID_RE = /^[a-z2-7]{16}$/;
export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * What `q` searches, exactly as devices_search_idx (migration 4) indexes it: the fields joined by
 * a newline, which none holds, so a match never spans two.
 */
const SEARCH_TEXT = `(d.name || E'\\n' || d.mac || E'\\n' || d.serial || E'\\n' || d.model || E'\\n' || d.version)`;

/** A device's groups as JSON, by name (alias `d`). */
const GROUPS_OF_D = `COALESCE((SELECT json_agg(json_build_object('id', g.id, 'name', g.name)
    ORDER BY lower(g.name), g.id)
  FROM device_group_members m JOIN device_groups g ON g.id = m.group_id
  WHERE m.device_id = d.id), '[]'::json)`;

/** `q` taken literally by ILIKE: its wildcards and the escape character escaped. */
export function escapeLike(q: string): string {
  return q.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** The paging cursor: base64url of the last row's key [lower(name), id]. */
export function makeCursor(sortName: string, id: string): string {
  return Buffer.from(JSON.stringify([sortName, id])).toString('base64url');
}

export function parseCursor(cursor: string): [string, string] {
  let key: unknown;
  try {
    if (!/^[A-Za-z0-9_-]{1,1024}$/.test(cursor)) throw new Error('not base64url');
    key = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw new ValidatorError('cursor is not one this list gave');
  }
  if (
    !Array.isArray(key) ||
    key.length !== 2 ||
    typeof key[0] !== 'string' ||
    typeof key[1] !== 'string' ||
    !DEVICE_ID_RE.test(key[1])
  ) {
    throw new ValidatorError('cursor is not one this list gave');
  }
  return [key[0], key[1]];
}

/** `GET devices`' query string. */
export const DEVICE_QUERY = ['q', 'group', 'online', 'limit', 'cursor'] as const;
export type DeviceQuery = Partial<Record<(typeof DEVICE_QUERY)[number], string>>;

type DeviceListRow = DeviceRow & {
  sort_name: string;
  owner: string;
  groups: Array<{ id: string; name: string }>;
};

export interface DevicesDeps {
  db: Db;
  config: FleetConfig;
  log: Logger;
  waiters: BindWaiters;
  /** The relay once registered (unbinding reaches the device through it). */
  relay: () => DeviceRelay | null;
}

export class Devices implements DeviceDirectory {
  /** Bind codes asked for: per address 30 a minute (a device asks once a minute). */
  readonly codesByAddress = new Throttle('Too many bind codes from this address', {
    max: 30,
    windowS: 60,
    lockS: 60,
  });
  /** Wrong codes claimed: 5 a minute per account and per address. */
  readonly claimsByAccount = new Throttle('Too many wrong bind codes for this account', {
    max: 5,
    windowS: 60,
    lockS: 60,
  });
  readonly claimsByAddress = new Throttle('Too many wrong bind codes from this address', {
    max: 5,
    windowS: 60,
    lockS: 60,
  });
  /** Claim-token polls: per address 120 a minute. */
  readonly pollsByAddress = new Throttle('Too many bind polls from this address', {
    max: 120,
    windowS: 60,
    lockS: 60,
  });
  private pendingPolls = 0;
  /** Aborted when the replica stops: held polls answer `pending` at once, nothing waits. */
  private readonly closing = new AbortController();
  /** A hash to compare against for unknown ids, so they take as long as known ones. */
  private readonly dummyHash = sha256(randomBytes(32).toString('hex'));

  constructor(private readonly deps: DevicesDeps) {}

  private get db(): Db {
    return this.deps.db;
  }

  /** The agent URLs a new binding is given: every live replica's (the relay knows), or this one's. */
  endpoints(): string[] {
    const fromRelay = this.deps.relay()?.endpoints?.();
    if (fromRelay && fromRelay.length > 0) return fromRelay;
    const u = new URL(this.deps.config.publicUrl);
    u.protocol = 'wss:';
    u.pathname = AGENT_PATH;
    return [u.toString()];
  }

  /** The replica stops: polls held now answer at once. */
  close(): void {
    this.closing.abort();
  }

  // ---- binding by code -------------------------------------------------------------------------

  async createCode(identity: DeviceIdentity, ip: string): Promise<BindCodeAnswer> {
    this.codesByAddress.take(ip);
    // codes long expired (and collected bindings) leave
    await this.db.query(
      `DELETE FROM bind_codes WHERE expires_at < now() - make_interval(secs => $1)`,
      [COLLECT_GRACE_S * 2],
    );
    const claimToken = randomBytes(32).toString('base64url');
    for (let i = 0; i < 8; i += 1) {
      const code = digitCode(BIND_CODE_DIGITS);
      try {
        await this.db.query(
          `INSERT INTO bind_codes (code_hash, claim_token_hash, identity, address, expires_at)
           VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5))`,
          [sha256(code), sha256(claimToken), identity, ip, BIND_CODE_TTL_S],
        );
        return { code, expires_in: BIND_CODE_TTL_S, claim_token: claimToken };
      } catch (e) {
        // the same 8 digits are live (or not yet swept): draw again
        if (uniqueViolation(e) === null) throw e;
      }
    }
    throw new ServiceUnavailableError('No free bind code; try again');
  }

  /**
   * A signed-in account claims a code: the device's poll then collects the binding. Wrong codes
   * count against the account and the address (5 a minute each).
   */
  async claim(
    user: FleetUser,
    codeIn: unknown,
    ip: string,
  ): Promise<{ name: string; model: string }> {
    const byAccount = this.claimsByAccount.take(user.accountId);
    const byAddress = this.claimsByAddress.take(ip);
    const code = typeof codeIn === 'string' ? codeIn.replace(/[\s-]/g, '') : '';
    if (!new RegExp(`^\\d{${BIND_CODE_DIGITS}}$`).test(code)) throw new BindCodeNotFoundError();
    const r = await inTransaction(this.db, async (c) => {
      const row = (
        await c.query<{ claim_token_hash: string; identity: DeviceIdentity }>(
          `UPDATE bind_codes SET claimed_by = $2, claimed_at = now()
           WHERE code_hash = $1 AND claimed_by IS NULL AND expires_at > now()
           RETURNING claim_token_hash, identity`,
          [sha256(code), user.accountId],
        )
      ).rows[0];
      if (!row) return null;
      await c.query('SELECT pg_notify($1, $2)', [this.deps.waiters.channel, row.claim_token_hash]);
      await record(c, 'bind_claimed', {
        accountId: user.accountId,
        actor: user.username,
        detail: { ip, identity: row.identity },
      });
      return row;
    });
    if (!r) throw new BindCodeNotFoundError();
    this.claimsByAccount.forgive(byAccount);
    this.claimsByAddress.forgive(byAddress);
    return { name: r.identity.name, model: r.identity.model };
  }

  /**
   * The device's long poll: pending until an account claims its code (at most `maxMs`), then
   * the binding, once; 410 when the code expired unclaimed or the binding was collected.
   */
  async poll(
    claimTokenIn: unknown,
    ip: string,
    signal: AbortSignal,
    maxMs = BIND_POLL_MAX_MS,
  ): Promise<BindPollAnswer> {
    this.pollsByAddress.take(ip);
    const claimToken = typeof claimTokenIn === 'string' ? claimTokenIn : '';
    if (!/^[A-Za-z0-9_-]{43}$/.test(claimToken)) throw new BindCodeGoneError();
    const tokenHash = sha256(claimToken);
    if (this.pendingPolls >= MAX_PENDING_POLLS) {
      throw new ServiceUnavailableError('Too many devices waiting; poll again shortly');
    }
    this.pendingPolls += 1;
    signal = AbortSignal.any([signal, this.closing.signal]);
    try {
      const deadline = Date.now() + Math.min(maxMs, BIND_POLL_MAX_MS);
      for (;;) {
        const got = await this.collect(tokenHash);
        if (got) return { pending: false, ...got };
        const left = deadline - Date.now();
        if (left <= 0 || signal.aborted) return { pending: true };
        // woken by the claim's NOTIFY (any replica), else look again within 2 s anyway
        await this.deps.waiters.wait(tokenHash, Math.min(left, 2000), signal);
      }
    } finally {
      this.pendingPolls -= 1;
    }
  }

  /** The binding if the code was claimed (made now, once), null while pending; 410 else. */
  private async collect(tokenHash: string): Promise<BindResult | null> {
    return inTransaction(this.db, async (c) => {
      const row = (
        await c.query<{
          code_hash: string;
          identity: DeviceIdentity;
          claimed_by: string | null;
          collected_at: Date | null;
          expired: boolean;
          grace_over: boolean;
        }>(
          `SELECT code_hash, identity, claimed_by, collected_at,
                  expires_at <= now() AS expired,
                  claimed_at < now() - make_interval(secs => $2) AS grace_over
           FROM bind_codes WHERE claim_token_hash = $1 FOR UPDATE`,
          [tokenHash, COLLECT_GRACE_S],
        )
      ).rows[0];
      if (!row || row.collected_at) throw new BindCodeGoneError();
      if (!row.claimed_by) {
        if (row.expired) throw new BindCodeGoneError();
        return null;
      }
      if (row.grace_over) throw new BindCodeGoneError();
      const account = (
        await c.query<{ username: string; email: string }>(
          'SELECT username, email FROM accounts WHERE id = $1',
          [row.claimed_by],
        )
      ).rows[0];
      if (!account) throw new BindCodeGoneError();
      const { id, secret } = await this.insertDevice(c, row.claimed_by, row.identity, 'code');
      await c.query(
        'UPDATE bind_codes SET collected_at = now(), device_id = $2 WHERE code_hash = $1',
        [row.code_hash, id],
      );
      return {
        device_id: id,
        secret,
        account: { username: account.username, email: account.email },
        endpoints: this.endpoints(),
      };
    });
  }

  /** Binding by the account's credentials (checked by the caller). */
  async bindByLogin(account: Account, identity: DeviceIdentity): Promise<BindResult> {
    const { id, secret } = await inTransaction(this.db, (c) =>
      this.insertDevice(c, account.id, identity, 'login'),
    );
    return {
      device_id: id,
      secret,
      account: { username: account.username, email: account.email },
      endpoints: this.endpoints(),
    };
  }

  /**
   * A new device row with a fresh secret (returned, only its hash stored). The same hardware
   * bound to the same account before loses that older binding: the device holds only the new
   * secret now. (Another account's binding of that hardware is left alone: anyone can claim an
   * identity, so it must not revoke someone else's device.)
   */
  private async insertDevice(
    c: PoolClient,
    accountId: string,
    identity: DeviceIdentity,
    how: 'code' | 'login',
  ): Promise<{ id: string; secret: string }> {
    const secret = randomBytes(DEVICE_SECRET_BYTES).toString('base64url');
    const id = newDeviceId();
    const older = await c.query<{ id: string }>(
      `UPDATE devices SET revoked_at = now(), replica = NULL
       WHERE account_id = $1 AND mac = $2 AND serial = $3 AND revoked_at IS NULL RETURNING id`,
      [accountId, identity.mac, identity.serial],
    );
    await c.query(
      `INSERT INTO devices (id, account_id, name, mac, serial, model, version, secret_hash)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [
        id,
        accountId,
        identity.name,
        identity.mac,
        identity.serial,
        identity.model,
        identity.version,
        sha256(secret),
      ],
    );
    await record(c, 'bound', {
      deviceId: id,
      accountId,
      detail: { how, replaced: older.rows.map((r) => r.id) },
    });
    for (const o of older.rows) this.afterCommitNotify(o.id);
    return { id, secret };
  }

  private afterCommitNotify(deviceId: string): void {
    // the relay is told outside the transaction; a device that is offline learns it at its
    // next connection (401 with X-Kvm-Binding: revoked)
    setImmediate(() => {
      void this.deps
        .relay()
        ?.notifyUnbound(deviceId)
        .catch((err: unknown) => this.deps.log.warn({ err, deviceId }, 'unbind not relayed'));
    });
  }

  // ---- the account's devices -------------------------------------------------------------------

  /**
   * `GET devices`: the devices `user` sees, filtered in SQL (search through the trigram index
   * devices_search_idx, group, presence), keyset-paged on (lower(name), id) (devices_name_idx),
   * with the total of every match.
   */
  async page(user: FleetUser, query: DeviceQuery): Promise<FleetDevicePage> {
    const limit = pageLimit(query.limit);
    const params: unknown[] = visibilityParams(user);
    const where = ['d.revoked_at IS NULL', visibleTo(user, 'd', 1)];
    const q = query.q ?? '';
    if (q.length > FLEET_QUERY_MAX) {
      throw new ValidatorError(`q is longer than ${FLEET_QUERY_MAX} characters`);
    }
    if (q !== '') {
      params.push(`%${escapeLike(q)}%`);
      where.push(`${SEARCH_TEXT} ILIKE $${params.length}`);
    }
    if (query.group !== undefined && query.group !== '') {
      if (!UUID_RE.test(query.group)) throw new ValidatorError('group is not a group id');
      params.push(query.group);
      where.push(`EXISTS (SELECT 1 FROM device_group_members m
        WHERE m.device_id = d.id AND m.group_id = $${params.length})`);
    }
    if (query.online !== undefined && query.online !== '') {
      if (query.online !== 'true' && query.online !== 'false') {
        throw new ValidatorError('online must be true or false');
      }
      where.push(query.online === 'true' ? 'd.replica IS NOT NULL' : 'd.replica IS NULL');
    }
    const total = Number(
      (
        await this.db.query<{ n: string }>(
          `SELECT count(*) AS n FROM devices d WHERE ${where.join(' AND ')}`,
          params,
        )
      ).rows[0]?.n ?? 0,
    );
    const after = query.cursor ? parseCursor(query.cursor) : null;
    const pageParams = [...params];
    const pageWhere = [...where];
    if (after) {
      pageParams.push(after[0], after[1]);
      pageWhere.push(`(lower(d.name), d.id) > ($${pageParams.length - 1}, $${pageParams.length})`);
    }
    pageParams.push(limit + 1);
    const r = await this.db.query<DeviceListRow>(
      `SELECT d.*, lower(d.name) AS sort_name, a.username AS owner, ${GROUPS_OF_D} AS groups
       FROM devices d JOIN accounts a ON a.id = d.account_id
       WHERE ${pageWhere.join(' AND ')}
       ORDER BY lower(d.name), d.id LIMIT $${pageParams.length}`,
      pageParams,
    );
    const rows = r.rows.slice(0, limit);
    const last = rows[rows.length - 1];
    return {
      devices: await Promise.all(rows.map((d) => this.toRow(d))),
      next: r.rows.length > limit && last ? makeCursor(last.sort_name, last.id) : null,
      total,
    };
  }

  /** A listed row; `online` is the relay's truth for the devices the table says are held. */
  private async toRow(d: DeviceListRow): Promise<FleetDeviceRow> {
    const relay = this.deps.relay();
    const online =
      d.replica !== null && (relay ? await relay.online(d.id).catch(() => false) : true);
    return {
      id: d.id,
      name: d.name,
      model: d.model,
      version: d.version,
      mac: d.mac,
      serial: d.serial,
      online,
      replica: d.replica,
      last_seen: d.last_seen ? d.last_seen.getTime() : null,
      bound_at: d.bound_at.getTime(),
      owner: d.owner,
      groups: d.groups,
    };
  }

  /**
   * `PATCH devices/:id` {name}: the account that bound it or an admin renames it (anyone else,
   * a group member too, finds no such device); `device_renamed` in the log.
   */
  async rename(user: FleetUser, deviceId: string, name: string): Promise<FleetDeviceRow> {
    if (!DEVICE_ID_RE.test(deviceId)) throw new NotFoundError('No such device');
    const row = await inTransaction(this.db, async (c) => {
      const old = (
        await c.query<{ name: string }>(
          `SELECT name FROM devices WHERE id = $1 AND revoked_at IS NULL
             AND ($2::uuid IS NULL OR account_id = $2) FOR UPDATE`,
          [deviceId, user.role === 'admin' ? null : user.accountId],
        )
      ).rows[0];
      if (!old) return null;
      await c.query('UPDATE devices SET name = $2 WHERE id = $1', [deviceId, name]);
      await record(c, 'device_renamed', {
        deviceId,
        actor: user.username,
        detail: { from: old.name, to: name },
      });
      return (
        await c.query<DeviceListRow>(
          `SELECT d.*, lower(d.name) AS sort_name, a.username AS owner, ${GROUPS_OF_D} AS groups
           FROM devices d JOIN accounts a ON a.id = d.account_id WHERE d.id = $1`,
          [deviceId],
        )
      ).rows[0]!;
    });
    if (!row) throw new NotFoundError('No such device');
    return this.toRow(row);
  }

  /** The account removes its device: the binding ends, the device is told (or learns later). */
  async unbind(user: FleetUser, deviceId: string): Promise<void> {
    if (!DEVICE_ID_RE.test(deviceId)) throw new NotFoundError('No such device');
    // the account that bound it, or an admin (a group member may open it, not remove it)
    const r = await this.db.query(
      `UPDATE devices SET revoked_at = now(), replica = NULL
       WHERE id = $1 AND ($2::uuid IS NULL OR account_id = $2) AND revoked_at IS NULL`,
      [deviceId, user.role === 'admin' ? null : user.accountId],
    );
    // another account's device is "no such device": nothing tells it exists
    if (r.rowCount !== 1) throw new NotFoundError('No such device');
    await this.event('unbound', {
      deviceId,
      accountId: user.accountId,
      actor: user.username,
      detail: { by: 'fleet' },
    });
    this.afterCommitNotify(deviceId);
  }

  /** `POST device/unbind` with `Authorization: Device <id>:<secret>`: the device let go. */
  async unbindByCredentials(authorization: unknown): Promise<void> {
    const m = /^Device ([a-z2-7]{16}):([A-Za-z0-9_-]{1,128})$/.exec(String(authorization ?? ''));
    if (!m) throw new DeviceAuthError();
    const row = await this.row(m[1]!);
    if (!this.secretMatches(row, m[2]!)) throw new DeviceAuthError();
    if (row!.revoked_at) return; // unbound already: the device may forget its secret
    await this.unboundByDevice(row!.id);
  }

  // ---- DeviceDirectory (the relay's view) ------------------------------------------------------

  private async row(deviceId: string): Promise<DeviceRow | null> {
    if (!DEVICE_ID_RE.test(deviceId)) return null;
    const r = await this.db.query<DeviceRow>('SELECT * FROM devices WHERE id = $1', [deviceId]);
    return r.rows[0] ?? null;
  }

  /** Constant-time: a missing row compares against a dummy hash all the same. */
  private secretMatches(row: DeviceRow | null, secret: string): boolean {
    const given = Buffer.from(sha256(secret), 'hex');
    const stored = Buffer.from(row?.secret_hash ?? this.dummyHash, 'hex');
    const same = stored.length === given.length && timingSafeEqual(stored, given);
    return row !== null && same;
  }

  async authenticate(
    deviceId: string,
    secret: string,
    fingerprint: { mac: string; serial: string },
  ): Promise<
    { ok: true; device: FleetDevice } | { ok: false; reason: 'unknown' | 'revoked' | 'fingerprint' }
  > {
    const row = await this.row(deviceId);
    if (!this.secretMatches(row, secret) || !row) return { ok: false, reason: 'unknown' };
    if (row.revoked_at) return { ok: false, reason: 'revoked' };
    if (
      fingerprint.mac.toLowerCase() !== row.mac.toLowerCase() ||
      fingerprint.serial !== row.serial
    ) {
      return { ok: false, reason: 'fingerprint' };
    }
    return { ok: true, device: toFleetDevice(row) };
  }

  async forUser(user: FleetUser, deviceId: string): Promise<FleetDevice | null> {
    if (!DEVICE_ID_RE.test(deviceId)) return null;
    const params = visibilityParams(user);
    const r = await this.db.query<DeviceRow>(
      `SELECT * FROM devices d
       WHERE d.id = $${params.length + 1} AND d.revoked_at IS NULL AND ${visibleTo(user, 'd', 1)}`,
      [...params, deviceId],
    );
    const row = r.rows[0];
    return row ? toFleetDevice(row) : null;
  }

  /**
   * Presence, and `device_online` / `device_offline` in the log (events/presence.ts bounds a
   * flapping device's): online when it becomes held (moving to another replica is no change),
   * offline when this replica lets it go and no other holds it.
   */
  async setPresence(deviceId: string, replica: string | null): Promise<void> {
    if (!DEVICE_ID_RE.test(deviceId)) return;
    const own = this.deps.config.replica;
    await inTransaction(this.db, async (c) => {
      const row = (
        await c.query<PresenceLogRow & { replica: string | null }>(
          `SELECT ${PRESENCE_COLUMNS}, d.replica FROM devices d
           WHERE d.id = $1 AND d.revoked_at IS NULL FOR UPDATE`,
          [deviceId],
        )
      ).rows[0];
      if (!row) return;
      if (replica !== null) {
        await c.query('UPDATE devices SET replica = $2, last_seen = now() WHERE id = $1', [
          deviceId,
          replica,
        ]);
        if (row.replica === null) await presenceChanged(c, row, 'online', { replica });
        return;
      }
      // only this replica's own claim is cleared: the device may be on another one already
      if (row.replica !== own) return;
      await c.query('UPDATE devices SET replica = NULL, last_seen = now() WHERE id = $1', [
        deviceId,
      ]);
      await presenceChanged(c, row, 'offline', { replica: own });
    });
  }

  /** At start: this replica holds no socket yet, whatever a crash left in the table. */
  async clearPresence(): Promise<void> {
    await this.db.query('UPDATE devices SET replica = NULL WHERE replica = $1', [
      this.deps.config.replica,
    ]);
  }

  /** The event log's `record` (events/events.ts), kept for the relay's DeviceDirectory. */
  async event(kind: string, fields: EventFields): Promise<void> {
    await record(this.db, kind, fields);
  }

  async unboundByDevice(deviceId: string): Promise<void> {
    const r = await this.db.query(
      `UPDATE devices SET revoked_at = now(), replica = NULL
       WHERE id = $1 AND revoked_at IS NULL`,
      [deviceId],
    );
    if (r.rowCount === 1) await this.event('unbound', { deviceId, detail: { by: 'device' } });
  }
}

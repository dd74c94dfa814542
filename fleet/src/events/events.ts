/**
 * The event log (docs/cloud.md "Event log and alerts"): every part of the fleet writes through
 * `record`, and `GET events` reads through `listEvents`, which shows an admin everything and a
 * user the events of the devices it sees (access/visibility.ts) plus its own account's.
 */
import type { PoolClient } from 'pg';
import {
  FLEET_PAGE_DEFAULT,
  FLEET_PAGE_MAX,
  type FleetEvent,
  type FleetEventPage,
} from '@kvm/protocol';
import { visibilityParams, visibleTo } from '../access/visibility';
import type { FleetUser } from '../context';
import type { Db } from '../db/pool';
import { ValidatorError } from '../errors';

/** The pool, or a client inside a transaction (the event then commits with the change). */
export type Queryable = Db | PoolClient;

export interface EventFields {
  deviceId?: string | null;
  /** The account it concerns; when absent and a device is named, the device's account. */
  accountId?: string | null;
  /** Who did it (a username); absent for the fleet itself or a device. */
  actor?: string | null;
  detail?: Record<string, unknown> | null;
}

/** Appends one event to the log. */
export async function record(db: Queryable, kind: string, f: EventFields = {}): Promise<void> {
  await db.query(
    `INSERT INTO events (kind, device_id, account_id, actor, detail)
     VALUES ($1, $2::text, COALESCE($3::uuid, (SELECT account_id FROM devices WHERE id = $2::text)),
             $4, $5)`,
    [
      kind.slice(0, 64),
      f.deviceId ?? null,
      f.accountId ?? null,
      f.actor?.slice(0, 256) ?? null,
      f.detail ?? null,
    ],
  );
}

/** `GET events`' query string. */
export const EVENT_QUERY = ['device', 'kind', 'before', 'limit'] as const;
export type EventQuery = Partial<Record<(typeof EVENT_QUERY)[number], string>>;

/** A page limit from a query string: FLEET_PAGE_DEFAULT when absent, 1..FLEET_PAGE_MAX. */
export function pageLimit(v: string | undefined): number {
  if (v === undefined || v === '') return FLEET_PAGE_DEFAULT;
  if (!/^\d{1,4}$/.test(v) || Number(v) < 1 || Number(v) > FLEET_PAGE_MAX) {
    throw new ValidatorError(`limit must be 1-${FLEET_PAGE_MAX}`);
  }
  return Number(v);
}

interface EventRow {
  id: string;
  at: Date;
  kind: string;
  device_id: string | null;
  device_name: string | null;
  actor: string | null;
  detail: Record<string, unknown> | null;
}

/** `GET events`: newest first, `before` the last id seen. */
export async function listEvents(db: Db, user: FleetUser, q: EventQuery): Promise<FleetEventPage> {
  const limit = pageLimit(q.limit);
  const params: unknown[] = visibilityParams(user);
  const where: string[] = [];
  if (user.role !== 'admin') {
    where.push(`(e.account_id = $1 OR (d.id IS NOT NULL AND ${visibleTo(user, 'd', 1)}))`);
  }
  if (q.device !== undefined && q.device !== '') {
    if (!/^[a-z2-7]{16}$/.test(q.device)) throw new ValidatorError('device is not a device id');
    params.push(q.device);
    where.push(`e.device_id = $${params.length}`);
  }
  if (q.kind !== undefined && q.kind !== '') {
    if (!/^[a-z_]{1,64}$/.test(q.kind)) throw new ValidatorError('kind is not an event kind');
    params.push(q.kind);
    where.push(`e.kind = $${params.length}`);
  }
  if (q.before !== undefined && q.before !== '') {
    if (!/^\d{1,18}$/.test(q.before)) throw new ValidatorError('before is not an event id');
    params.push(q.before);
    where.push(`e.id < $${params.length}`);
  }
  params.push(limit + 1);
  const r = await db.query<EventRow>(
    `SELECT e.id, e.at, e.kind, e.device_id, d.name AS device_name, e.actor, e.detail
     FROM events e LEFT JOIN devices d ON d.id = e.device_id
     ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
     ORDER BY e.id DESC LIMIT $${params.length}`,
    params,
  );
  const rows = r.rows.slice(0, limit);
  const events: FleetEvent[] = rows.map((e) => ({
    id: String(e.id),
    at: e.at.getTime(),
    kind: e.kind,
    device_id: e.device_id,
    device_name: e.device_name,
    actor: e.actor,
    detail: e.detail,
  }));
  return {
    events,
    next: r.rows.length > limit ? String(rows[rows.length - 1]!.id) : null,
  };
}

/** Events older than `keepDays` leave the log (the sweep, db/sweep.ts). */
export async function deleteOldEvents(db: Db, keepDays: number): Promise<void> {
  await db.query('DELETE FROM events WHERE at < now() - make_interval(days => $1)', [keepDays]);
}

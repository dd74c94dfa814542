/**
 * `device_online` / `device_offline` in the event log, bounded for a flapping device: at most
 * one online (and so one online/offline pair) is written per device per FLAP_WINDOW_S; the
 * changes left out are counted and the next event written says how many (`suppressed`). What
 * the log says last is kept on the device row (`presence_logged`), so when the flapping stops
 * with the log behind (an online left out) or a replica crashed (its devices' presence cleared
 * at its restart without an event), `reconcilePresence` writes the missing event late.
 */
import type { PoolClient } from 'pg';
import type { Db } from '../db/pool';
import { record } from './events';

export const FLAP_WINDOW_S = 10;

export type PresenceState = 'online' | 'offline';

/** The device row's presence-log columns, read FOR UPDATE by the caller. */
export interface PresenceLogRow {
  id: string;
  account_id: string;
  presence_logged: PresenceState | null;
  presence_suppressed: number;
  /** An online was written less than FLAP_WINDOW_S ago. */
  online_recent: boolean;
}

/** The SELECT list that fills a PresenceLogRow (table alias `d`). */
export const PRESENCE_COLUMNS = `d.id, d.account_id, d.presence_logged, d.presence_suppressed,
  COALESCE(d.presence_online_at > now() - make_interval(secs => ${FLAP_WINDOW_S}), false)
    AS online_recent`;

/**
 * The device's presence changed to `state` (in the caller's transaction, the row locked):
 * writes the event, or counts it as suppressed.
 */
export async function presenceChanged(
  c: PoolClient,
  row: PresenceLogRow,
  state: PresenceState,
  detail: Record<string, unknown>,
): Promise<boolean> {
  const write = state !== row.presence_logged && (state === 'offline' || !row.online_recent);
  if (!write) {
    await c.query(
      'UPDATE devices SET presence_suppressed = presence_suppressed + 1 WHERE id = $1',
      [row.id],
    );
    return false;
  }
  const suppressed = row.presence_suppressed;
  await record(c, `device_${state}`, {
    deviceId: row.id,
    accountId: row.account_id,
    detail: { ...detail, ...(suppressed > 0 ? { suppressed } : {}) },
  });
  await c.query(
    `UPDATE devices SET presence_logged = $2, presence_suppressed = 0,
       presence_online_at = CASE WHEN $2 = 'online' THEN now() ELSE presence_online_at END
     WHERE id = $1`,
    [row.id, state],
  );
  return true;
}

/**
 * Writes the events the log is missing (a change left out while flapping that turned out to be
 * the last, a crashed replica's devices): every replica runs it every few seconds; the rows are
 * claimed with SKIP LOCKED and changed in the same statement, so each is written once. The
 * partial index devices_presence_stale_idx keeps it cheap (it holds only such rows).
 */
export async function reconcilePresence(db: Db): Promise<number> {
  const r = await db.query(
    `WITH c AS (
       SELECT id, account_id, replica, presence_suppressed FROM devices
       WHERE revoked_at IS NULL AND presence_logged IS NOT NULL
         AND presence_logged <> (CASE WHEN replica IS NULL THEN 'offline' ELSE 'online' END)
         AND (replica IS NULL OR presence_online_at IS NULL
              OR presence_online_at <= now() - make_interval(secs => $1))
       LIMIT 500 FOR UPDATE SKIP LOCKED
     ), u AS (
       UPDATE devices d
       SET presence_logged = CASE WHEN c.replica IS NULL THEN 'offline' ELSE 'online' END,
           presence_online_at = CASE WHEN c.replica IS NULL THEN d.presence_online_at ELSE now() END,
           presence_suppressed = 0
       FROM c WHERE d.id = c.id
       RETURNING d.id, d.account_id, c.replica, c.presence_suppressed
     )
     INSERT INTO events (kind, device_id, account_id, detail)
     SELECT CASE WHEN replica IS NULL THEN 'device_offline' ELSE 'device_online' END, id,
            account_id,
            jsonb_strip_nulls(jsonb_build_object('replica', replica, 'late', true,
              'suppressed', NULLIF(presence_suppressed, 0)))
     FROM u`,
    [FLAP_WINDOW_S],
  );
  return r.rowCount ?? 0;
}

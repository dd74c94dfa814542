/**
 * Alerts (docs/cloud.md "Event log and alerts"): targets (e-mail addresses, webhooks) subscribe
 * to `device_offline` and `rollout_stopped`; raising an alert stores one pending delivery per
 * subscribed target, and every replica's worker sends the due ones (claimed with SKIP LOCKED:
 * each is sent by one replica), 3 tries with backoff, then `failed`. The offline scan runs on
 * every replica too: a device offline longer than `alerts.offline_after_s` is claimed through the
 * unique key of alert_offline (device, start of the offline period), so it is alerted once per
 * offline period however many replicas look.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import {
  FLEET_ALERT_EVENTS,
  type FleetAlertDelivery,
  type FleetAlertEvent,
  type FleetAlertPayload,
  type FleetAlertTarget,
} from '@kvm/protocol';
import type { Mailer } from '../accounts/mailer';
import type { FleetConfig, FleetUser } from '../context';
import { inTransaction, type Db } from '../db/pool';
import { UUID_RE } from '../devices/devices';
import { ConflictStateError, NotFoundError, ValidatorError } from '../errors';
import { record, type Queryable } from '../events/events';
import { reconcilePresence } from '../events/presence';
import { failureText, postWebhook, sendMail } from './send';

/** Tries per delivery, and the waits before the 2nd and 3rd. */
export const ALERT_TRIES = 3;
export const ALERT_BACKOFF_S = [1, 4];
/** A claimed delivery is another replica's to retry if not settled within this (a crash). */
const CLAIM_LEASE_S = 60;
/** Deliveries sent at once by one replica. */
const SEND_BATCH = 20;
export const MAX_ALERT_TARGETS = 100;

const EMAIL_RE = /^[^\s@<>",;]{1,64}@[A-Za-z0-9.-]{1,253}$/;

interface TargetRow {
  id: string;
  kind: 'email' | 'webhook';
  target: string;
  events: FleetAlertEvent[];
  secret: string | null;
  created_at: Date;
}

type DeliveryRow = Omit<FleetAlertDelivery, 'created_at' | 'sent_at'> & {
  created_at: Date;
  sent_at: Date | null;
};

function toTarget(r: TargetRow): FleetAlertTarget {
  return {
    id: r.id,
    kind: r.kind,
    target: r.target,
    events: r.events,
    created_at: r.created_at.getTime(),
  };
}

function toDelivery(r: DeliveryRow): FleetAlertDelivery {
  return {
    id: String(r.id),
    target_id: r.target_id,
    event: r.event,
    state: r.state,
    tries: r.tries,
    error: r.error,
    created_at: r.created_at.getTime(),
    sent_at: r.sent_at ? r.sent_at.getTime() : null,
  };
}

/**
 * Raises an alert: one pending delivery per target subscribed to `event` (in the caller's
 * transaction when given a client); a replica's worker sends it within `alerts.scan_s`.
 * Answers how many deliveries were made.
 */
export async function raiseAlert(
  db: Queryable,
  event: FleetAlertEvent,
  payload: Omit<FleetAlertPayload, 'event' | 'at'> & { at?: number },
): Promise<number> {
  const full: FleetAlertPayload = { ...payload, event, at: payload.at ?? Date.now() };
  const r = await db.query(
    `INSERT INTO alert_deliveries (target_id, event, payload)
     SELECT id, $1, $2 FROM alert_targets WHERE $1 = ANY (events)`,
    [event, full],
  );
  return r.rowCount ?? 0;
}

export interface AlertsDeps {
  db: Db;
  mailer: Mailer;
  log: Logger;
  config: FleetConfig;
}

export class Alerts {
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  private again = false;
  private closed = false;

  constructor(private readonly deps: AlertsDeps) {}

  private get db(): Db {
    return this.deps.db;
  }

  get offlineAfterS(): number {
    return this.deps.config.alerts?.offline_after_s ?? 60;
  }

  /** Starts the scanner and sender: every `alerts.scan_s` (default 5 s). */
  start(): void {
    const every = (this.deps.config.alerts?.scan_s ?? 5) * 1000;
    this.timer = setInterval(() => this.kick(), every);
    this.timer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.ticking?.catch(() => {});
  }

  /** Runs a tick now (or right after the one running). */
  kick(): void {
    if (this.closed) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = this.tick()
      .catch((err: unknown) => this.deps.log.warn({ err }, 'alerts tick failed'))
      .finally(() => {
        this.ticking = null;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** The presence log's late events, the offline scan, then the due deliveries. */
  async tick(): Promise<void> {
    await reconcilePresence(this.db);
    await this.scanOffline();
    while (!this.closed && (await this.sendDue()) === SEND_BATCH);
  }

  /** `rollout_stopped` and the like: the deliveries are made, and sent from here at once. */
  async raise(
    event: FleetAlertEvent,
    payload: Omit<FleetAlertPayload, 'event' | 'at'>,
  ): Promise<number> {
    const n = await raiseAlert(this.db, event, payload);
    if (n > 0) this.kick();
    return n;
  }

  /**
   * Devices offline (no replica holds them) longer than `offline_after_s`, not yet alerted for
   * this offline period: claimed through alert_offline's unique key and their deliveries made in
   * the same transaction (a second scanner, on this replica or another, finds them claimed).
   */
  async scanOffline(): Promise<number> {
    return inTransaction(this.db, async (c) => {
      const due = await c.query<{ id: string; name: string; since: Date }>(
        `WITH due AS (
           SELECT d.id, d.last_seen FROM devices d
           WHERE d.revoked_at IS NULL AND d.replica IS NULL AND d.last_seen IS NOT NULL
             AND d.last_seen < now() - make_interval(secs => $1)
             AND NOT EXISTS (SELECT 1 FROM alert_offline a
                             WHERE a.device_id = d.id AND a.since = d.last_seen)
           LIMIT 500
         ), won AS (
           INSERT INTO alert_offline (device_id, since) SELECT id, last_seen FROM due
           ON CONFLICT DO NOTHING RETURNING device_id, since
         )
         SELECT won.device_id AS id, d.name, won.since FROM won JOIN devices d ON d.id = won.device_id`,
        [this.offlineAfterS],
      );
      for (const d of due.rows) {
        await raiseAlert(c, 'device_offline', {
          text: `Device "${d.name}" is offline since ${d.since.toISOString()}`,
          device: { id: d.id, name: d.name, last_seen: d.since.getTime() },
          at: Date.now(),
        });
      }
      return due.rows.length;
    });
  }

  /**
   * Sends the deliveries due now (at most SEND_BATCH), or only `onlyId`: claimed with SKIP
   * LOCKED (a try counted, a lease set), sent outside the transaction, then settled.
   */
  async sendDue(onlyId?: string): Promise<number> {
    const claimed = await this.db.query<{
      id: string;
      event: string;
      payload: FleetAlertPayload;
      tries: number;
      kind: 'email' | 'webhook';
      target: string;
      secret: string | null;
    }>(
      `UPDATE alert_deliveries x
       SET tries = x.tries + 1, next_at = now() + make_interval(secs => $1)
       FROM alert_targets t
       WHERE t.id = x.target_id AND x.id IN (
         SELECT id FROM alert_deliveries
         WHERE state = 'pending' AND next_at <= now() AND ($3::bigint IS NULL OR id = $3)
         ORDER BY next_at LIMIT $2 FOR UPDATE SKIP LOCKED)
       RETURNING x.id, x.event, x.payload, x.tries, t.kind, t.target, t.secret`,
      [CLAIM_LEASE_S, SEND_BATCH, onlyId ?? null],
    );
    await Promise.all(
      claimed.rows.map(async (d) => {
        let error: string | null = null;
        try {
          if (d.kind === 'webhook') {
            await postWebhook(d.target, d.secret ?? '', JSON.stringify(d.payload));
          } else {
            await sendMail(this.deps.mailer, d.target, d.payload);
          }
        } catch (e) {
          error = failureText(e);
        }
        await this.settle(d, error).catch((err: unknown) =>
          this.deps.log.warn({ err, delivery: d.id }, 'alert delivery not settled'),
        );
      }),
    );
    return claimed.rows.length;
  }

  private async settle(
    d: { id: string; event: string; tries: number; kind: string; target: string },
    error: string | null,
  ): Promise<void> {
    const detail = { delivery: String(d.id), event: d.event, kind: d.kind, target: d.target };
    if (error === null) {
      await inTransaction(this.db, async (c) => {
        await c.query(
          `UPDATE alert_deliveries SET state = 'sent', sent_at = now(), error = NULL WHERE id = $1`,
          [d.id],
        );
        await record(c, 'alert_sent', { detail: { ...detail, tries: d.tries } });
      });
      return;
    }
    if (d.tries >= ALERT_TRIES) {
      await inTransaction(this.db, async (c) => {
        await c.query(`UPDATE alert_deliveries SET state = 'failed', error = $2 WHERE id = $1`, [
          d.id,
          error,
        ]);
        await record(c, 'alert_failed', { detail: { ...detail, tries: d.tries, error } });
      });
      return;
    }
    const wait = ALERT_BACKOFF_S[d.tries - 1] ?? ALERT_BACKOFF_S[ALERT_BACKOFF_S.length - 1]!;
    await this.db.query(
      `UPDATE alert_deliveries SET error = $2, next_at = now() + make_interval(secs => $3)
       WHERE id = $1`,
      [d.id, error, wait],
    );
    // the retry is sent by whichever replica's tick comes first after the wait
    setTimeout(() => this.kick(), wait * 1000 + 50).unref();
  }

  // ---- the admin API -----------------------------------------------------------------------------

  async targets(): Promise<FleetAlertTarget[]> {
    const r = await this.db.query<TargetRow>('SELECT * FROM alert_targets ORDER BY created_at, id');
    return r.rows.map(toTarget);
  }

  async addTarget(user: FleetUser, body: Record<string, unknown>): Promise<FleetAlertTarget> {
    const kind = body.kind;
    const target = typeof body.target === 'string' ? body.target.trim() : '';
    if (kind !== 'email' && kind !== 'webhook') {
      throw new ValidatorError('kind must be email or webhook');
    }
    if (kind === 'email' && (target.length > 254 || !EMAIL_RE.test(target))) {
      throw new ValidatorError('target must be an e-mail address');
    }
    if (kind === 'webhook') checkWebhookUrl(target);
    const events = body.events;
    if (
      !Array.isArray(events) ||
      events.length === 0 ||
      !events.every((e) => FLEET_ALERT_EVENTS.includes(e as FleetAlertEvent))
    ) {
      throw new ValidatorError(`events must be a list of ${FLEET_ALERT_EVENTS.join(', ')}`);
    }
    const secret = kind === 'webhook' ? randomBytes(32).toString('base64url') : null;
    const row = await inTransaction(this.db, async (c) => {
      // one count at a time (the advisory lock), so replicas cannot pass the cap together
      await c.query(`SELECT pg_advisory_xact_lock(hashtext('alert_targets'))`);
      const n = (await c.query<{ n: string }>('SELECT count(*) AS n FROM alert_targets')).rows[0];
      if (Number(n?.n ?? 0) >= MAX_ALERT_TARGETS) {
        throw new ConflictStateError(`At most ${MAX_ALERT_TARGETS} alert targets`);
      }
      const made = (
        await c.query<TargetRow>(
          `INSERT INTO alert_targets (kind, target, events, secret) VALUES ($1, $2, $3, $4)
           RETURNING *`,
          [kind, target, [...new Set(events as string[])], secret],
        )
      ).rows[0]!;
      await record(c, 'alert_target_added', {
        accountId: user.accountId,
        actor: user.username,
        detail: { id: made.id, kind, target },
      });
      return made;
    });
    return { ...toTarget(row), ...(secret ? { secret } : {}) };
  }

  async removeTarget(user: FleetUser, id: string): Promise<void> {
    if (!UUID_RE.test(id)) throw new NotFoundError('No such alert target');
    await inTransaction(this.db, async (c) => {
      const r = await c.query<TargetRow>('DELETE FROM alert_targets WHERE id = $1 RETURNING *', [
        id,
      ]);
      const gone = r.rows[0];
      if (!gone) throw new NotFoundError('No such alert target');
      await record(c, 'alert_target_removed', {
        accountId: user.accountId,
        actor: user.username,
        detail: { id, kind: gone.kind, target: gone.target },
      });
    });
  }

  /** A `test` alert to one target, sent now: the delivery after its first try. */
  async test(user: FleetUser, id: string): Promise<FleetAlertDelivery> {
    if (!UUID_RE.test(id)) throw new NotFoundError('No such alert target');
    const payload: FleetAlertPayload = {
      event: 'test',
      at: Date.now(),
      text: `A test alert from the KVM fleet (${user.username})`,
    };
    const made = (
      await this.db.query<{ id: string }>(
        `INSERT INTO alert_deliveries (target_id, event, payload)
         SELECT id, 'test', $2 FROM alert_targets WHERE id = $1 RETURNING id`,
        [id, payload],
      )
    ).rows[0];
    if (!made) throw new NotFoundError('No such alert target');
    await this.sendDue(String(made.id));
    const r = await this.db.query<DeliveryRow>('SELECT * FROM alert_deliveries WHERE id = $1', [
      made.id,
    ]);
    return toDelivery(r.rows[0]!);
  }

  async deliveries(limit: number): Promise<FleetAlertDelivery[]> {
    const r = await this.db.query<DeliveryRow>(
      'SELECT * FROM alert_deliveries ORDER BY created_at DESC, id DESC LIMIT $1',
      [limit],
    );
    return r.rows.map(toDelivery);
  }
}

/** A webhook is an http(s) URL of at most 2048 characters. */
export function checkWebhookUrl(target: string): void {
  let u: URL | null = null;
  try {
    u = new URL(target);
  } catch {
    u = null;
  }
  if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:') || target.length > 2048) {
    throw new ValidatorError('target must be an http or https URL');
  }
}

/**
 * The sweep's part (db/sweep.ts): deliveries older than the log keeps, and the offline claims of
 * periods that ended (the device came back or was removed) a day ago.
 */
export async function sweepAlerts(db: Db, keepDays: number): Promise<void> {
  await db.query(
    'DELETE FROM alert_deliveries WHERE created_at < now() - make_interval(days => $1)',
    [keepDays],
  );
  await db.query(
    `DELETE FROM alert_offline a WHERE a.raised_at < now() - interval '1 day'
       AND NOT EXISTS (SELECT 1 FROM devices d WHERE d.id = a.device_id
                       AND d.replica IS NULL AND d.revoked_at IS NULL AND d.last_seen = a.since)`,
  );
}

/**
 * Which replicas are alive, in PostgreSQL (migration 6). The `devices.replica` column says who
 * holds a device's socket; a replica killed while no other takes its devices (their agents are
 * gone too) would leave them "online" in every list and never offline for the alerts. So each
 * replica writes its row every `beatMs`, and each one clears the devices of any replica whose
 * row is older than `staleMs`, with `last_seen` = when that replica was last alive (the offline
 * alert counts from there; the event log's scanner writes the missing `device_offline`).
 *
 * NATS has its own, faster view of the replicas (the bus); this one is what SQL filters read.
 * A replica that was only slow (a long pause, its database link down for longer than `staleMs`)
 * finds at its next beat that it had gone stale and claims the sockets it still holds again.
 */
import type { Logger } from 'pino';
import type { Db } from '../db/pool';

export const REPLICA_BEAT_MS = 5000;
export const REPLICA_STALE_MS = 20_000;

export interface LivenessOptions {
  db: Db;
  log: Logger;
  replica: string;
  url: string;
  /** The devices whose sockets this replica holds now (claimed again after a stale spell). */
  held: () => string[];
  /** Claims one of them again (presence). */
  claim: (deviceId: string) => Promise<void>;
  beatMs?: number;
  staleMs?: number;
}

export class ReplicaLiveness {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private readonly beatMs: number;
  private readonly staleMs: number;

  constructor(private readonly opts: LivenessOptions) {
    this.beatMs = opts.beatMs ?? REPLICA_BEAT_MS;
    this.staleMs = opts.staleMs ?? REPLICA_STALE_MS;
  }

  /** Writes this replica's row at once, then every beat (and clears the stale ones' devices). */
  async start(): Promise<void> {
    await this.beat();
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.tick().finally(() => (this.running = null));
    }, this.beatMs);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    try {
      if (await this.beat()) await this.claimHeld();
      await this.clearStale();
    } catch (err) {
      this.opts.log.warn({ err }, 'replica liveness: the database did not answer');
    }
  }

  /** Writes the row; true when the previous write was so old others may have cleared us. */
  async beat(): Promise<boolean> {
    const r = await this.opts.db.query<{ stale: boolean }>(
      `WITH old AS (SELECT seen_at FROM replicas WHERE name = $1)
       INSERT INTO replicas (name, url, seen_at) VALUES ($1, $2, now())
       ON CONFLICT (name) DO UPDATE SET url = EXCLUDED.url, seen_at = now()
       RETURNING COALESCE((SELECT seen_at FROM old) < now() - make_interval(secs => $3), false)
         AS stale`,
      [this.opts.replica, this.opts.url, this.staleMs / 1000],
    );
    return r.rows[0]?.stale === true;
  }

  /** The devices of replicas unheard for `staleMs` are nobody's; their rows go after a day. */
  async clearStale(): Promise<number> {
    const r = await this.opts.db.query(
      `UPDATE devices d SET replica = NULL, last_seen = r.seen_at
       FROM replicas r
       WHERE d.replica = r.name AND r.name <> $1
         AND r.seen_at < now() - make_interval(secs => $2)`,
      [this.opts.replica, this.staleMs / 1000],
    );
    await this.opts.db.query(
      `DELETE FROM replicas WHERE seen_at < now() - interval '1 day' AND name <> $1
         AND NOT EXISTS (SELECT 1 FROM devices WHERE replica = replicas.name)`,
      [this.opts.replica],
    );
    if ((r.rowCount ?? 0) > 0) {
      this.opts.log.warn({ devices: r.rowCount }, 'devices of a replica that stopped answering');
    }
    return r.rowCount ?? 0;
  }

  private async claimHeld(): Promise<void> {
    const held = this.opts.held();
    this.opts.log.warn({ devices: held.length }, 'this replica was stale; claiming its devices');
    for (const id of held) await this.opts.claim(id);
  }

  /**
   * Stops the beat. The row stays: a device whose release did not reach the database is then
   * cleared by the others once the row is stale, and a restart under the same name goes on.
   */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }
}

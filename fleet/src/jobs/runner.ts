/**
 * Batch actions and staged rollouts (docs/cloud.md "Files, batch actions and rollouts"). The
 * replica that got the POST runs the job in memory, FLEET_JOB_CONCURRENCY devices at once, and
 * writes every change to PostgreSQL (jobs, job_devices) with a heartbeat. A replica that finds
 * a running job whose heartbeat is older than `staleMs` adopts it (one UPDATE ... RETURNING:
 * one winner) and goes on: an action's device left `running` is failed ("interrupted"); a
 * rollout's device whose upgrade was started waits for its health again.
 *
 * A device is started only through a claim (`pending` → `running` while the job is `running`
 * and this replica its runner): a cancel, a stop or an adoption elsewhere stops new starts at
 * once, on any replica. Devices already running finish and record their result.
 */
import type { Logger } from 'pino';
import {
  FLEET_JOB_CONCURRENCY,
  type FleetAction,
  type FleetAlertPayload,
  type FleetJob,
  type FleetJobDetail,
  type FleetJobDeviceState,
  type FleetJobPage,
  type FleetJobState,
} from '@kvm/protocol';
import type { FleetUser } from '../context';
import { inTransaction, type Db } from '../db/pool';
import type { BindWaiters } from '../devices/bind-waiters';
import { deviceRequest, type StreamOpener } from '../tunnel/client';
import {
  runAction,
  sameVersion,
  startUpgrade,
  uploadPackage,
  upgradeStatus,
  type ActionArgs,
  type DeviceCall,
  type JobFile,
} from './device-calls';

/** The NOTIFY channel of agent hellos (payload: the device id). */
export const HELLO_CHANNEL = 'fleet_device_hello';

export interface RolloutArgs {
  first_stage_percent: number;
  max_failures: number;
  health_timeout_s: number;
  version: string;
}

export interface JobRunnerOptions {
  heartbeatMs: number;
  /** A running job's heartbeat older than this: its replica is gone, adopt it. */
  staleMs: number;
  adoptEveryMs: number;
  /** The health wait looks again at least this often (a lost notification only slows it). */
  healthPollMs: number;
  concurrency: number;
}

export const DEFAULT_JOB_OPTIONS: JobRunnerOptions = {
  heartbeatMs: 5000,
  staleMs: 15_000,
  adoptEveryMs: 5000,
  healthPollMs: 1000,
  concurrency: FLEET_JOB_CONCURRENCY,
};

export interface JobRunnerDeps {
  db: Db;
  log: Logger;
  replica: string;
  relay: () => StreamOpener | null;
  /** Where a file's bytes are (files/files.ts). */
  filePath: (id: string) => string;
  /** The event log (devices.event / events.record). */
  event: (
    kind: string,
    f: { deviceId?: string; accountId?: string; actor?: string; detail?: Record<string, unknown> },
  ) => Promise<void>;
  /** `rollout_stopped` through the alerts (fleet/src/alerts/). */
  alert: (payload: Omit<FleetAlertPayload, 'event' | 'at'>) => Promise<void>;
  /** Agent hellos (HELLO_CHANNEL). */
  hellos: BindWaiters;
}

interface JobRow {
  id: string;
  kind: 'action' | 'rollout';
  action: FleetAction | 'upgrade';
  name: string;
  args: Record<string, unknown>;
  file_id: string | null;
  state: FleetJobState;
  stage: number;
  reason: string | null;
  created_by: string | null;
  created_by_name: string | null;
  created_at: Date;
  finished_at: Date | null;
  runner: string | null;
}

interface DeviceRow {
  device_id: string;
  name: string;
  stage: number;
  state: FleetJobDeviceState;
  phase: string | null;
  detail: string | null;
  upgrade_at: Date | null;
  started_at: Date | null;
  finished_at: Date | null;
}

const ZERO_COUNTS = (): Record<FleetJobDeviceState, number> => ({
  pending: 0,
  running: 0,
  ok: 0,
  failed: 0,
  skipped: 0,
});

function toJob(r: JobRow, counts: Record<FleetJobDeviceState, number>): FleetJob {
  return {
    id: r.id,
    kind: r.kind,
    action: r.action,
    name: r.name,
    state: r.state,
    stage: r.stage,
    reason: r.reason,
    created_by: r.created_by_name,
    created_at: r.created_at.getTime(),
    finished_at: r.finished_at?.getTime() ?? null,
    counts,
  };
}

/** Runs `fn` over `items`, `n` at once. */
async function pool<T>(items: readonly T[], n: number, fn: (t: T) => Promise<void>): Promise<void> {
  let i = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (i < items.length) await fn(items[i++]!);
    }),
  );
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export class JobRunner {
  private readonly opts: JobRunnerOptions;
  private readonly running = new Map<string, Promise<void>>();
  private readonly closing = new AbortController();
  private timers: NodeJS.Timeout[] = [];

  constructor(
    private readonly deps: JobRunnerDeps,
    options: Partial<JobRunnerOptions> = {},
  ) {
    this.opts = { ...DEFAULT_JOB_OPTIONS, ...options };
  }

  private get db(): Db {
    return this.deps.db;
  }

  /** Heartbeats and the adoption scan. */
  start(): void {
    const beat = setInterval(() => {
      if (this.running.size === 0) return;
      this.db
        .query(
          `UPDATE jobs SET heartbeat = now()
           WHERE runner = $1 AND state = 'running' AND id = ANY($2::uuid[])`,
          [this.deps.replica, [...this.running.keys()]],
        )
        .catch((err: unknown) => this.deps.log.warn({ err }, 'job heartbeat failed'));
    }, this.opts.heartbeatMs);
    const adopt = setInterval(() => {
      this.adopt().catch((err: unknown) => this.deps.log.warn({ err }, 'job adoption failed'));
    }, this.opts.adoptEveryMs);
    beat.unref();
    adopt.unref();
    this.timers = [beat, adopt];
  }

  /**
   * Stops: no new device starts here, health waits end, the heartbeats stop (another replica
   * adopts the jobs once they are stale). Device calls under way get `closeWaitMs` to finish.
   */
  async close(closeWaitMs = 2000): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.closing.abort();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all([...this.running.values()].map((p) => p.catch(() => undefined))),
      new Promise((r) => (timer = setTimeout(r, closeWaitMs))),
    ]);
    clearTimeout(timer);
  }

  /** Jobs this replica runs now. */
  get active(): string[] {
    return [...this.running.keys()];
  }

  /** Takes over running jobs whose runner stopped beating; answers their ids. */
  async adopt(): Promise<string[]> {
    const taken: string[] = [];
    while (!this.closing.signal.aborted) {
      const r = await this.db.query<{ id: string }>(
        `UPDATE jobs SET runner = $1, heartbeat = now()
         WHERE id = (SELECT id FROM jobs
                     WHERE state = 'running' AND heartbeat < now() - $2 * interval '1 millisecond'
                     ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
         RETURNING id`,
        [this.deps.replica, this.opts.staleMs],
      );
      const id = r.rows[0]?.id;
      if (!id) break;
      this.deps.log.info({ job: id }, 'job adopted');
      taken.push(id);
      this.launch(id, true);
    }
    return taken;
  }

  // ---- creating ---------------------------------------------------------------------------

  /** A new job over `devices` (in this order), run from here. */
  async create(
    user: FleetUser,
    job: {
      kind: 'action' | 'rollout';
      action: FleetAction | 'upgrade';
      name: string;
      args: ActionArgs | RolloutArgs;
      fileId: string | null;
      devices: Array<{ id: string; name: string; stage: number }>;
    },
  ): Promise<FleetJob> {
    const id = await inTransaction(this.db, async (c) => {
      const r = await c.query<{ id: string }>(
        `INSERT INTO jobs (kind, action, name, args, file_id, created_by, created_by_name, runner)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
        [
          job.kind,
          job.action,
          job.name,
          job.args,
          job.fileId,
          user.accountId,
          user.username,
          this.deps.replica,
        ],
      );
      const jobId = r.rows[0]!.id;
      await c.query(
        `INSERT INTO job_devices (job_id, device_id, name, ord, stage)
         SELECT $1, d.id, d.name, d.ord, d.stage
         FROM unnest($2::text[], $3::text[], $4::int[], $5::int[]) AS d(id, name, ord, stage)`,
        [
          jobId,
          job.devices.map((d) => d.id),
          job.devices.map((d) => d.name),
          job.devices.map((_d, i) => i),
          job.devices.map((d) => d.stage),
        ],
      );
      return jobId;
    });
    await this.note('job_started', user.username, user.accountId, {
      job: id,
      kind: job.kind,
      action: job.action,
      name: job.name,
      devices: job.devices.length,
    });
    this.launch(id, false);
    return (await this.get(id))!;
  }

  /** Cancels a running job: no new device starts, the pending ones are skipped. */
  async cancel(id: string, user: FleetUser): Promise<boolean> {
    const done = await inTransaction(this.db, async (c) => {
      const r = await c.query(
        `UPDATE jobs SET state = 'cancelled', finished_at = now(), reason = $2
         WHERE id = $1 AND state = 'running'`,
        [id, `cancelled by ${user.username}`],
      );
      if (!r.rowCount) return false;
      await c.query(
        `UPDATE job_devices SET state = 'skipped', finished_at = now()
         WHERE job_id = $1 AND state = 'pending'`,
        [id],
      );
      return true;
    });
    if (done)
      await this.note('job_finished', user.username, user.accountId, {
        job: id,
        state: 'cancelled',
      });
    return done;
  }

  // ---- reading ----------------------------------------------------------------------------

  private async counts(ids: string[]): Promise<Map<string, Record<FleetJobDeviceState, number>>> {
    const out = new Map(ids.map((id) => [id, ZERO_COUNTS()]));
    const r = await this.db.query<{ job_id: string; state: FleetJobDeviceState; n: string }>(
      `SELECT job_id, state, count(*) AS n FROM job_devices WHERE job_id = ANY($1::uuid[])
       GROUP BY job_id, state`,
      [ids],
    );
    for (const row of r.rows) out.get(row.job_id)![row.state] = Number(row.n);
    return out;
  }

  async get(id: string): Promise<FleetJob | null> {
    const r = await this.db.query<JobRow>('SELECT * FROM jobs WHERE id = $1', [id]);
    const row = r.rows[0];
    if (!row) return null;
    return toJob(row, (await this.counts([id])).get(id)!);
  }

  /** The job if `user` may see it (its creator, or an admin). */
  async detail(
    user: FleetUser,
    id: string,
  ): Promise<(FleetJobDetail & { created_by_id: string | null }) | null> {
    const r = await this.db.query<JobRow>(
      `SELECT * FROM jobs WHERE id = $1 AND ($2::uuid IS NULL OR created_by = $2)`,
      [id, user.role === 'admin' ? null : user.accountId],
    );
    const row = r.rows[0];
    if (!row) return null;
    const d = await this.db.query<DeviceRow>(
      'SELECT * FROM job_devices WHERE job_id = $1 ORDER BY ord',
      [id],
    );
    return {
      job: toJob(row, (await this.counts([id])).get(id)!),
      created_by_id: row.created_by,
      devices: d.rows.map((x) => ({
        device_id: x.device_id,
        name: x.name,
        stage: x.stage,
        state: x.state,
        detail: x.detail,
        started_at: x.started_at?.getTime() ?? null,
        finished_at: x.finished_at?.getTime() ?? null,
      })),
    };
  }

  /** Newest first; `cursor` is the last id of the previous page. */
  async list(user: FleetUser, limit: number, cursor: string | null): Promise<FleetJobPage> {
    const r = await this.db.query<JobRow>(
      `SELECT * FROM jobs j
       WHERE ($1::uuid IS NULL OR j.created_by = $1)
         AND ($2::uuid IS NULL OR (j.created_at, j.id) < (SELECT created_at, id FROM jobs WHERE id = $2))
       ORDER BY j.created_at DESC, j.id DESC LIMIT $3`,
      [user.role === 'admin' ? null : user.accountId, cursor, limit + 1],
    );
    const rows = r.rows.slice(0, limit);
    const counts = await this.counts(rows.map((x) => x.id));
    return {
      jobs: rows.map((x) => toJob(x, counts.get(x.id)!)),
      next: r.rows.length > limit ? rows.at(-1)!.id : null,
    };
  }

  // ---- running ----------------------------------------------------------------------------

  private launch(id: string, adopted: boolean): void {
    if (this.running.has(id)) return;
    const p = this.run(id, adopted)
      .catch(async (err: unknown) => {
        this.deps.log.error({ err, job: id }, 'job failed');
        await this.finish(id, 'failed', message(err)).catch(() => undefined);
      })
      .finally(() => this.running.delete(id));
    this.running.set(id, p);
  }

  private async note(
    kind: string,
    actor: string | null,
    accountId: string | null,
    detail: Record<string, unknown>,
    deviceId?: string,
  ): Promise<void> {
    await this.deps
      .event(kind, {
        ...(deviceId ? { deviceId } : {}),
        ...(accountId ? { accountId } : {}),
        ...(actor ? { actor } : {}),
        detail,
      })
      .catch((err: unknown) => this.deps.log.warn({ err, kind }, 'event not recorded'));
  }

  /** Ends the job (only if it is still running here); answers whether it did. */
  private async finish(id: string, state: FleetJobState, reason: string | null): Promise<boolean> {
    const r = await inTransaction(this.db, async (c) => {
      const u = await c.query<JobRow>(
        `UPDATE jobs SET state = $2, reason = $3, finished_at = now()
         WHERE id = $1 AND state = 'running' AND runner = $4 RETURNING *`,
        [id, state, reason, this.deps.replica],
      );
      if (u.rowCount && state !== 'done') {
        await c.query(
          `UPDATE job_devices SET state = 'skipped', finished_at = now()
           WHERE job_id = $1 AND state = 'pending'`,
          [id],
        );
      }
      return u.rows[0] ?? null;
    });
    if (r) {
      await this.note('job_finished', r.created_by_name, r.created_by, { job: id, state, reason });
    }
    return r !== null;
  }

  /** pending → running, only while the job runs here. */
  private async claim(jobId: string, deviceId: string, phase: string | null): Promise<boolean> {
    if (this.closing.signal.aborted) return false;
    const r = await this.db.query(
      `UPDATE job_devices SET state = 'running', started_at = now(), phase = $3
       WHERE job_id = $1 AND device_id = $2 AND state = 'pending'
         AND EXISTS (SELECT 1 FROM jobs WHERE id = $1 AND state = 'running' AND runner = $4)`,
      [jobId, deviceId, phase, this.deps.replica],
    );
    return r.rowCount === 1;
  }

  private async result(
    jobId: string,
    deviceId: string,
    state: 'ok' | 'failed',
    detail: string | null,
  ): Promise<void> {
    await this.db.query(
      `UPDATE job_devices SET state = $3, detail = $4, finished_at = now(), phase = NULL
       WHERE job_id = $1 AND device_id = $2 AND state = 'running'`,
      [jobId, deviceId, state, detail?.slice(0, 500) ?? null],
    );
  }

  private caller(deviceId: string, job: JobRow): DeviceCall {
    const user = { id: job.created_by ?? '', name: job.created_by_name ?? 'fleet' };
    return (req) => deviceRequest(this.deps.relay(), deviceId, user, req);
  }

  private async file(job: JobRow): Promise<JobFile | null> {
    if (!job.file_id) return null;
    const r = await this.db.query<{ name: string; size: string }>(
      'SELECT name, size FROM files WHERE id = $1',
      [job.file_id],
    );
    const f = r.rows[0];
    return f ? { name: f.name, size: Number(f.size), path: this.deps.filePath(job.file_id) } : null;
  }

  private async run(id: string, adopted: boolean): Promise<void> {
    const job = (await this.db.query<JobRow>('SELECT * FROM jobs WHERE id = $1', [id])).rows[0];
    if (!job || job.state !== 'running') return;
    if (job.kind === 'action') await this.runActionJob(job, adopted);
    else await this.runRollout(job, adopted);
  }

  private async devices(jobId: string): Promise<DeviceRow[]> {
    return (
      await this.db.query<DeviceRow>('SELECT * FROM job_devices WHERE job_id = $1 ORDER BY ord', [
        jobId,
      ])
    ).rows;
  }

  private async runActionJob(job: JobRow, adopted: boolean): Promise<void> {
    if (adopted) {
      await this.db.query(
        `UPDATE job_devices SET state = 'failed', detail = 'interrupted', finished_at = now()
         WHERE job_id = $1 AND state = 'running'`,
        [job.id],
      );
    }
    const file = await this.file(job);
    const action = job.action as FleetAction;
    const args = job.args as ActionArgs;
    const pending = (await this.devices(job.id)).filter((d) => d.state === 'pending');
    await pool(pending, this.opts.concurrency, async (d) => {
      if (!(await this.claim(job.id, d.device_id, null))) return;
      let error: string | null = null;
      try {
        await runAction(this.caller(d.device_id, job), action, args, file);
      } catch (e) {
        error = message(e);
      }
      await this.result(job.id, d.device_id, error ? 'failed' : 'ok', error);
      await this.note(
        'action',
        job.created_by_name,
        null,
        { job: job.id, action, result: error ? 'failed' : 'ok', ...(error ? { error } : {}) },
        d.device_id,
      );
    });
    if (!this.closing.signal.aborted) await this.finish(job.id, 'done', null);
  }

  private async runRollout(job: JobRow, adopted: boolean): Promise<void> {
    const args = job.args as unknown as RolloutArgs;
    const file = await this.file(job);
    if (!file) {
      await this.finish(job.id, 'failed', 'The package is gone from the fleet');
      return;
    }
    if (adopted) {
      // An upgrade that was never started cannot come back: interrupted. A started one may.
      await this.db.query(
        `UPDATE job_devices SET state = 'failed', detail = 'interrupted', finished_at = now()
         WHERE job_id = $1 AND state = 'running' AND upgrade_at IS NULL`,
        [job.id],
      );
    }
    let stopped = false;
    const failures = async (): Promise<number> =>
      Number(
        (
          await this.db.query<{ n: string }>(
            `SELECT count(*) AS n FROM job_devices WHERE job_id = $1 AND state = 'failed'`,
            [job.id],
          )
        ).rows[0]!.n,
      );
    const stop = async (reason: string): Promise<void> => {
      if (stopped) return;
      stopped = true;
      if (!(await this.finish(job.id, 'stopped', reason))) return;
      await this.note('rollout_stopped', job.created_by_name, job.created_by, {
        job: job.id,
        name: job.name,
        reason,
      });
      await this.deps
        .alert({
          text: `Rollout ${job.name} stopped: ${reason}`,
          job: { id: job.id, name: job.name, reason },
        })
        .catch((err: unknown) => this.deps.log.warn({ err }, 'rollout_stopped alert not raised'));
    };
    const afterDevice = async (): Promise<void> => {
      const n = await failures();
      if (n > args.max_failures) {
        await stop(`${n} device${n === 1 ? '' : 's'} failed (more than ${args.max_failures})`);
      }
    };

    for (let stage = job.stage; stage <= 2 && !stopped; stage++) {
      if (this.closing.signal.aborted) return;
      if (stage !== job.stage) {
        const r = await this.db.query(
          `UPDATE jobs SET stage = $2 WHERE id = $1 AND state = 'running' AND runner = $3`,
          [job.id, stage, this.deps.replica],
        );
        if (!r.rowCount) return;
      }
      const rows = (await this.devices(job.id)).filter((d) => d.stage === stage);
      // adopted devices waiting for health first, then the pending ones
      const tasks = [
        ...rows.filter((d) => d.state === 'running' && d.upgrade_at),
        ...rows.filter((d) => d.state === 'pending'),
      ];
      await pool(tasks, this.opts.concurrency, async (d) => {
        let upgradeAt = d.upgrade_at;
        if (!upgradeAt) {
          if (stopped || !(await this.claim(job.id, d.device_id, 'upload'))) return;
        }
        const call = this.caller(d.device_id, job);
        let error: string | null = null;
        try {
          if (!upgradeAt) {
            await uploadPackage(call, file);
            const r = await this.db.query<{ upgrade_at: Date }>(
              `UPDATE job_devices SET phase = 'health', upgrade_at = now()
               WHERE job_id = $1 AND device_id = $2 RETURNING upgrade_at`,
              [job.id, d.device_id],
            );
            upgradeAt = r.rows[0]!.upgrade_at;
            await startUpgrade(call);
          }
          error = await this.health(call, d.device_id, upgradeAt, args);
        } catch (e) {
          error = message(e);
        }
        if (this.closing.signal.aborted && error === 'stopping') return;
        await this.result(job.id, d.device_id, error ? 'failed' : 'ok', error);
        await this.note(
          'action',
          job.created_by_name,
          null,
          {
            job: job.id,
            action: 'upgrade',
            result: error ? 'failed' : 'ok',
            ...(error ? { error } : {}),
          },
          d.device_id,
        );
        if (error) await afterDevice();
      });
      if (this.closing.signal.aborted || stopped) return;
      const state = (await this.get(job.id))!;
      if (state.state !== 'running') return;
      if (stage === 1 && state.counts.failed > 0) {
        await stop(`stage 1 was not healthy (${state.counts.failed} failed); stage 2 not started`);
        return;
      }
    }
    if (!stopped && !this.closing.signal.aborted) await this.finish(job.id, 'done', null);
  }

  /**
   * Waits until the device's agent said hello after `since` on the package's version and its
   * upgrade status says success; null when healthy, else why not. Woken by the hello NOTIFY.
   */
  private async health(
    call: DeviceCall,
    deviceId: string,
    since: Date,
    args: RolloutArgs,
  ): Promise<string | null> {
    const deadline = since.getTime() + args.health_timeout_s * 1000;
    for (;;) {
      if (this.closing.signal.aborted) return 'stopping';
      const r = await this.db.query<{ version: string; hello_at: Date | null; back: boolean }>(
        `SELECT version, hello_at, (hello_at IS NOT NULL AND hello_at > $2) AS back
         FROM devices WHERE id = $1`,
        [deviceId, since],
      );
      const row = r.rows[0];
      if (!row) return 'the device is no longer bound';
      if (row.back) {
        let status: Awaited<ReturnType<typeof upgradeStatus>> | null = null;
        try {
          status = await upgradeStatus(call);
        } catch {
          // just back and not answering yet: look again
        }
        if (status) {
          const last = status.last_upgrade;
          if (sameVersion(row.version, args.version)) {
            if (last?.result === 'success' && sameVersion(last.to_version, args.version)) {
              return null;
            }
            if (!status.in_progress) {
              return `back on ${row.version} but the upgrade status says ${last?.result ?? 'nothing'}${last?.reason ? `: ${last.reason}` : ''}`;
            }
          } else if (!status.in_progress) {
            return `came back on ${row.version} (rolled back)${last?.reason ? `: ${last.reason}` : ''}`;
          }
        }
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        return `did not come back healthy within ${args.health_timeout_s} s`;
      }
      await this.deps.hellos.wait(
        deviceId,
        Math.min(left, this.opts.healthPollMs),
        this.closing.signal,
      );
    }
  }
}

/** Records an agent's hello (version, time) and wakes the health waits on every replica. */
export async function recordHello(db: Db, deviceId: string, version: string): Promise<void> {
  await db.query(
    `WITH u AS (UPDATE devices SET version = $2, hello_at = now()
                WHERE id = $1 AND revoked_at IS NULL RETURNING id)
     SELECT pg_notify('${HELLO_CHANNEL}', id) FROM u`,
    [deviceId, version.slice(0, 64)],
  );
}

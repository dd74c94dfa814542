/**
 * The jobs' routes (protocol/src/fleet.ts "files, batch actions, rollouts"): `POST actions`,
 * `POST rollouts` (admin), `GET jobs`, `GET jobs/:id`, `POST jobs/:id/cancel`, and the files'
 * (files/files.ts). Devices are named only as the user sees them (access/visibility.ts): an id
 * the user does not see is 404, naming it, before anything runs.
 */
import type { FastifyInstance } from 'fastify';
import {
  FLEET_ACTIONS,
  FLEET_JOB_MAX_DEVICES,
  type FleetAction,
  type FleetAlertEvent,
  type FleetAlertPayload,
} from '@kvm/protocol';
import { visibilityParams, visibleTo } from '../access/visibility';
import type { FleetContext, FleetUser } from '../context';
import type { Db } from '../db/pool';
import { BindWaiters } from '../devices/bind-waiters';
import { DEVICE_ID_RE, UUID_RE } from '../devices/devices';
import { pageLimit } from '../events/events';
import { AdminRequiredError, NotFoundError, ValidatorError } from '../errors';
import { Files, FILES_MAX_BYTES_DEFAULT, registerFileRoutes } from '../files/files';
import { adminOrThrow, bodyOf, ok, queryOf, userOrThrow } from '../http';
import type { Relay } from '../agents/relay';
import { checkActionArgs, type ActionArgs } from './device-calls';
import { HELLO_CHANNEL, JobRunner, recordHello, type JobRunnerOptions } from './runner';

/** What the jobs need of the core (fleet/src/app.ts's FleetCore). */
export interface JobsCore {
  db: Db;
  alerts?: {
    raise(
      event: FleetAlertEvent,
      payload: Omit<FleetAlertPayload, 'event' | 'at'>,
    ): Promise<unknown>;
  };
}

interface Target {
  id: string;
  name: string;
}

/** The devices of a request's `devices` or `group`, as `user` sees them, by name then id. */
async function targetsOf(
  db: Db,
  user: FleetUser,
  b: Record<string, unknown>,
): Promise<{ devices: Target[]; group: string | null }> {
  const params = visibilityParams(user);
  const vis = visibleTo(user, 'd', 1);
  const n = params.length;
  if (b.devices !== undefined && b.group !== undefined) {
    throw new ValidatorError('Give devices or group, not both');
  }
  if (b.group !== undefined) {
    if (typeof b.group !== 'string' || !UUID_RE.test(b.group)) {
      throw new NotFoundError('No such device group');
    }
    // a user names only a group linked to one of its own (GET groups' rule): any other is as
    // unknown as a made-up id, so the answer does not tell that it exists
    const g = await db.query<{ name: string }>(
      `SELECT g.name FROM device_groups g WHERE g.id = $1 AND ($2::uuid IS NULL OR EXISTS (
         SELECT 1 FROM group_links gl JOIN user_group_members ugm ON ugm.group_id = gl.user_group_id
         WHERE gl.device_group_id = g.id AND ugm.account_id = $2))`,
      [b.group, user.role === 'admin' ? null : user.accountId],
    );
    if (!g.rowCount) throw new NotFoundError('No such device group');
    const r = await db.query<Target>(
      `SELECT d.id, d.name FROM device_group_members m JOIN devices d ON d.id = m.device_id
       WHERE m.group_id = $${n + 1} AND d.revoked_at IS NULL AND ${vis}
       ORDER BY d.name, d.id LIMIT ${FLEET_JOB_MAX_DEVICES + 1}`,
      [...params, b.group],
    );
    if (r.rows.length === 0) throw new ValidatorError('The group has no devices you see');
    if (r.rows.length > FLEET_JOB_MAX_DEVICES) {
      throw new ValidatorError(`At most ${FLEET_JOB_MAX_DEVICES} devices`);
    }
    return { devices: r.rows, group: g.rows[0]!.name };
  }
  if (!Array.isArray(b.devices) || b.devices.length === 0) {
    throw new ValidatorError('devices (a list of device ids) or group is required');
  }
  if (b.devices.length > FLEET_JOB_MAX_DEVICES) {
    throw new ValidatorError(`At most ${FLEET_JOB_MAX_DEVICES} devices`);
  }
  const ids = [...new Set(b.devices as unknown[])];
  for (const id of ids) {
    if (typeof id !== 'string' || !DEVICE_ID_RE.test(id)) {
      throw new NotFoundError(`No such device: ${String(id).slice(0, 64)}`, { device: id });
    }
  }
  const r = await db.query<Target>(
    `SELECT d.id, d.name FROM devices d
     WHERE d.id = ANY($${n + 1}::text[]) AND d.revoked_at IS NULL AND ${vis}
     ORDER BY d.name, d.id`,
    [...params, ids],
  );
  const seen = new Set(r.rows.map((x) => x.id));
  const missing = (ids as string[]).find((id) => !seen.has(id));
  if (missing) throw new NotFoundError(`No such device: ${missing}`, { device: missing });
  return { devices: r.rows, group: null };
}

function int(
  b: Record<string, unknown>,
  key: string,
  def: number,
  min: number,
  max: number,
): number {
  const v = b[key];
  if (v === undefined) return def;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new ValidatorError(`${key} must be an integer ${min}-${max}`);
  }
  return v;
}

export type JobsOptions = Partial<JobRunnerOptions>;

export function registerJobRoutes(
  app: FastifyInstance,
  ctx: FleetContext,
  core: JobsCore,
  options: JobsOptions = {},
): { runner: JobRunner; files: Files } {
  const db = core.db;
  const files = new Files(
    db,
    ctx.config.data,
    ctx.config.files?.max_bytes ?? FILES_MAX_BYTES_DEFAULT,
  );
  const hellos = new BindWaiters(ctx.config.database, ctx.log, HELLO_CHANNEL);
  const relay = (): Relay | null => {
    const r = ctx.relay as Partial<Relay> | null;
    return r && typeof r.openStream === 'function' ? (r as Relay) : null;
  };
  const runner = new JobRunner(
    {
      db,
      log: ctx.log.child({ part: 'jobs' }),
      replica: ctx.config.replica,
      relay,
      filePath: (id) => files.pathOf(id),
      event: (kind, f) => ctx.devices.event(kind, f),
      alert: async (payload) => {
        if (core.alerts) await core.alerts.raise('rollout_stopped', payload);
        else ctx.log.warn({ payload }, 'rollout stopped (no alerts configured)');
      },
      hellos,
    },
    options,
  );
  const onHello = (deviceId: string, version: string): void => {
    recordHello(db, deviceId, version).catch((err: unknown) =>
      ctx.log.warn({ err, device: deviceId }, 'hello not recorded'),
    );
  };

  app.addHook('onReady', async () => {
    await hellos.start();
    relay()?.helloListeners.add(onHello);
    runner.start();
    // jobs a replica left (stopped or killed) are taken over as soon as they are stale
    void runner.adopt().catch((err: unknown) => ctx.log.warn({ err }, 'job adoption failed'));
  });
  app.addHook('onClose', async () => {
    relay()?.helloListeners.delete(onHello);
    await runner.close();
    await hellos.close();
  });

  const note = (kind: string, user: FleetUser, detail: Record<string, unknown>): void => {
    ctx.devices
      .event(kind, { accountId: user.accountId, actor: user.username, detail })
      .catch((err: unknown) => ctx.log.warn({ err, kind }, 'event not recorded'));
  };
  void app.register(async (scope) => registerFileRoutes(scope, ctx, files, note));

  app.post('/cloud-basic/v1/actions', async (req) => {
    const user = await userOrThrow(req, ctx);
    const b = bodyOf(req);
    const action = b.action as FleetAction;
    if (!FLEET_ACTIONS.includes(action)) {
      throw new ValidatorError(`action must be one of ${FLEET_ACTIONS.join(', ')}`);
    }
    const rawArgs = b.args ?? {};
    if (typeof rawArgs !== 'object' || rawArgs === null || Array.isArray(rawArgs)) {
      throw new ValidatorError('args must be an object');
    }
    const args = checkActionArgs(action, rawArgs as ActionArgs);
    let fileId: string | null = null;
    if (action === 'msd_mount') {
      const f = await files.get(args.file_id!);
      if (!f) throw new NotFoundError('No such file');
      if (f.kind !== 'image') throw new ValidatorError('args.file_id must be an image');
      fileId = f.id;
    }
    const t = await targetsOf(db, user, b);
    const job = await runner.create(user, {
      kind: 'action',
      action,
      name: `${action} × ${t.devices.length}${t.group ? ` (${t.group})` : ''}`,
      args,
      fileId,
      devices: t.devices.map((d) => ({ ...d, stage: 1 })),
    });
    return ok({ job });
  });

  app.post('/cloud-basic/v1/rollouts', async (req) => {
    const user = await adminOrThrow(req, ctx);
    const b = bodyOf(req);
    const f = typeof b.file_id === 'string' ? await files.get(b.file_id) : null;
    if (!f) throw new NotFoundError('No such file');
    if (f.kind !== 'package' || !f.version) {
      throw new ValidatorError('file_id must be a firmware package');
    }
    const pct = int(b, 'first_stage_percent', 10, 1, 100);
    const maxFailures = int(b, 'max_failures', 0, 0, FLEET_JOB_MAX_DEVICES);
    const healthS = int(b, 'health_timeout_s', 600, 10, 86_400);
    const t = await targetsOf(db, user, b);
    const first = Math.ceil((t.devices.length * pct) / 100);
    const job = await runner.create(user, {
      kind: 'rollout',
      action: 'upgrade',
      name: `${f.version} to ${t.group ? `group ${t.group}` : `${t.devices.length} device${t.devices.length === 1 ? '' : 's'}`}`,
      args: {
        first_stage_percent: pct,
        max_failures: maxFailures,
        health_timeout_s: healthS,
        version: f.version,
      },
      fileId: f.id,
      devices: t.devices.map((d, i) => ({ ...d, stage: i < first ? 1 : 2 })),
    });
    return ok({ job });
  });

  app.get('/cloud-basic/v1/jobs', async (req) => {
    const user = await userOrThrow(req, ctx);
    const q = queryOf(req, ['limit', 'cursor']);
    const limit = pageLimit(q.limit);
    const cursor = q.cursor && UUID_RE.test(q.cursor) ? q.cursor : null;
    if (q.cursor && !cursor) throw new ValidatorError('Bad cursor');
    return ok(await runner.list(user, limit, cursor));
  });

  async function jobFor(user: FleetUser, id: string) {
    const d = UUID_RE.test(id) ? await runner.detail(user, id) : null;
    if (!d) throw new NotFoundError('No such job');
    return d;
  }

  app.get('/cloud-basic/v1/jobs/:id', async (req) => {
    const user = await userOrThrow(req, ctx);
    const { created_by_id: _creator, ...detail } = await jobFor(
      user,
      (req.params as { id: string }).id,
    );
    return ok(detail);
  });

  app.post('/cloud-basic/v1/jobs/:id/cancel', async (req) => {
    const user = await userOrThrow(req, ctx);
    const d = await jobFor(user, (req.params as { id: string }).id);
    if (user.role !== 'admin' && d.created_by_id !== user.accountId) throw new AdminRequiredError();
    await runner.cancel(d.job.id, user);
    return ok({ job: await runner.get(d.job.id) });
  });

  return { runner, files };
}

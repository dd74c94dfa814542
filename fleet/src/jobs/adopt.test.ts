/**
 * A job outlives the replica that ran it: two in-process job runners on one PostgreSQL; A starts
 * a job and stops beating, B adopts it once its heartbeat is stale (one UPDATE ... RETURNING)
 * and goes on. An action's device left running is failed ("interrupted"); a rollout's device
 * whose upgrade was started goes back to waiting for its health, and is not sent the package
 * again.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { FleetFile } from '@kvm/protocol';
import { SESSION_COOKIE } from '../accounts/accounts';
import { waitFor } from '../agents/test-kit';
import type { FleetUser } from '../context';
import { BindWaiters } from '../devices/bind-waiters';
import { makePackage, makeTree } from '../../../server/src/services/upgrade/test-package';
import { HOST, result, signUpAndIn, sql, startKit, type Kit, accountIdOf } from '../test-kit';
import type { StreamOpener } from '../tunnel/client';
import { HELLO_CHANNEL, JobRunner } from './runner';
import { bindDevices, devices } from './test-devices';

let kit: Kit;
let url: string;
let data: string;
let admin: string;
let me: FleetUser;
const runners: JobRunner[] = [];
const waiters: BindWaiters[] = [];

beforeAll(async () => {
  data = await mkdtemp(join(tmpdir(), 'fleet-adopt-'));
  kit = await startKit({ relay: true, config: { data } });
  await kit.app.listen({ host: '127.0.0.1', port: 0 });
  url = `http://127.0.0.1:${(kit.app.server.address() as { port: number }).port}`;
  admin = (await signUpAndIn(kit, 'adoptadmin', 'pw1234')).cookie;
  me = { accountId: await accountIdOf(kit, 'adoptadmin'), username: 'adoptadmin', role: 'admin' };
}, 60_000);

afterAll(async () => {
  for (const d of devices) d.agent?.close();
  for (const w of waiters) await w.close();
  await kit?.close();
  await rm(data, { recursive: true, force: true });
});

// each test's runners stop with it (a runner left scanning would adopt the next test's job)
afterEach(async () => {
  for (const r of runners.splice(0)) await r.close(100);
});

async function runner(replica: string): Promise<JobRunner> {
  const hellos = new BindWaiters(kit.config.database, pino({ level: 'silent' }), HELLO_CHANNEL);
  await hellos.start();
  waiters.push(hellos);
  const r = new JobRunner(
    {
      db: kit.fleet.db,
      log: pino({ level: 'silent' }),
      replica,
      relay: () => kit.fleet.ctx.relay as unknown as StreamOpener,
      filePath: (id) => join(data, 'files', id),
      event: (kind, f) => kit.fleet.devices.event(kind, f),
      alert: async () => undefined,
      hellos,
    },
    { heartbeatMs: 100, staleMs: 800, adoptEveryMs: 100, healthPollMs: 200, concurrency: 1 },
  );
  runners.push(r);
  return r;
}

async function jobRow(id: string) {
  return (
    await sql<{ state: string; runner: string }>(
      kit,
      'SELECT state, runner FROM jobs WHERE id = $1',
      [id],
    )
  )[0]!;
}

async function deviceRows(id: string) {
  return sql<{ device_id: string; state: string; detail: string | null; phase: string | null }>(
    kit,
    'SELECT device_id, state, detail, phase FROM job_devices WHERE job_id = $1 ORDER BY ord',
    [id],
  );
}

describe('job adoption', () => {
  it("an action: B takes over A's stale job, fails the device left running, runs the rest", async () => {
    const devs = await bindDevices(kit, url, admin, 3, 'adopt', [], (d, i) => {
      if (i === 0) d.silentPaths = ['/api/atx'];
    });
    const a = await runner('replica-a');
    const b = await runner('replica-b');
    a.start();
    b.start();
    const job = await a.create(me, {
      kind: 'action',
      action: 'power',
      name: 'power × 3',
      args: {},
      fileId: null,
      devices: devs.map((d) => ({ id: d.id, name: `x-${d.id}`, stage: 1 })),
    });
    await waitFor(
      async () => (await deviceRows(job.id))[0]!.state === 'running',
      10_000,
      'the first device to run',
    );
    // A is gone (its call to the first device never came back); its heartbeat stops
    await a.close(50);
    const end = await waitFor(
      async () => {
        const j = await jobRow(job.id);
        return j.state !== 'running' ? j : null;
      },
      20_000,
      'the job to end on B',
    );
    expect(end).toEqual({ state: 'done', runner: 'replica-b' });
    const rows = await deviceRows(job.id);
    expect(rows.map((r) => [r.state, r.detail])).toEqual([
      ['failed', 'interrupted'],
      ['ok', null],
      ['ok', null],
    ]);
    for (const d of devs.slice(1)) {
      expect(d.calls.filter((c) => c === 'POST /api/atx/click?button=power')).toHaveLength(1);
    }
  }, 60_000);

  it('a rollout: B takes over while the device restarts and waits for its health, without sending the package again', async () => {
    const pkgDir = join(data, 'pkg');
    await makeTree(join(pkgDir, 'tree'));
    await makePackage(pkgDir, ['--gen-key', join(pkgDir, 'k')]);
    const made = await makePackage(pkgDir, [
      ...['--from', join(pkgDir, 'tree'), '--version', 'V0.3.0', '--min-version', 'V0.1.0'],
      ...['--key', join(pkgDir, 'k.key'), '--out', join(pkgDir, 'out')],
    ]);
    const up = await kit.app.inject({
      method: 'PUT',
      url: '/cloud-basic/v1/files/package/fw.pkg',
      headers: {
        host: HOST,
        origin: `https://${HOST}`,
        cookie: `${SESSION_COOKIE}=${admin}`,
        'content-type': 'application/octet-stream',
      },
      payload: await readFile(made.file),
    });
    const file = result<{ file: FleetFile }>(up).file;
    const [dev] = await bindDevices(kit, url, admin, 1, 'adoptroll', [], (d) => {
      d.restartMs = 2500;
    });
    const a = await runner('replica-c');
    const b = await runner('replica-d');
    a.start();
    const job = await a.create(me, {
      kind: 'rollout',
      action: 'upgrade',
      name: 'V0.3.0 to 1 device',
      args: { first_stage_percent: 100, max_failures: 0, health_timeout_s: 30, version: 'V0.3.0' },
      fileId: file.id,
      devices: [{ id: dev!.id, name: 'adoptroll-00', stage: 1 }],
    });
    await waitFor(
      async () => (await deviceRows(job.id))[0]!.phase === 'health',
      20_000,
      'the upgrade to start',
    );
    await a.close(50);
    b.start();
    const end = await waitFor(
      async () => {
        const j = await jobRow(job.id);
        return j.state !== 'running' ? j : null;
      },
      30_000,
      'the rollout to end on B',
    );
    expect(end).toEqual({ state: 'done', runner: 'replica-d' });
    expect((await deviceRows(job.id))[0]).toMatchObject({ state: 'ok', detail: null });
    expect(dev!.calls.filter((c) => c === 'POST /api/upgrade/upload')).toHaveLength(1);
    expect(dev!.version).toBe('0.3.0');
  }, 90_000);
});

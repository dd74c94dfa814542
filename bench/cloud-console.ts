/**
 * The fleet console's figures (issue 26, docs/cloud.md "Tests and figures (part 2)"), measured by
 * `npm run bench -- cloud` after part 1's on the same fleet (both replicas running, part 1's
 * simulated agents stopped):
 *
 * - wall_refresh_s: SIM_DEVICES simulated devices (fleet/src/sim/, in this process, agents on A)
 *   on one wall socket on B (as the console's wall page opens it: session cookie, Origin, one
 *   `watch` of every id) at the fleet's default interval (WALL_DEFAULT_INTERVAL_MS): every
 *   device's picture changed at one instant (the devices' counters moved together), until the
 *   last tile received its new picture. The median of WALL_ROUNDS rounds.
 * - wall_bytes_per_device_per_min: every byte the same socket received (pictures and states) over
 *   WALL_WINDOW_S at the default interval with every picture changing each second (so each
 *   interval brings a new picture of every device: the most a wall costs), per device, per
 *   minute.
 * - device_list_p95_ms / device_search_p95_ms: `GET devices` (its first page, 50 rows) and `GET
 *   devices?q=` (a substring of some names) on B as the admin, LIST_SAMPLES each, with
 *   LIST_DEVICES devices registered (fleet/src/devices/seed.ts tops the table up to that count).
 * - rollout_100_devices_s: a signed package rolled out (`POST rollouts`, default stages: 10 %
 *   first, then the rest; health as the fleet checks it) to ROLLOUT_DEVICES simulated devices,
 *   from the POST until the job is `done`. Each simulated device takes `rebootMs` (SIM_REBOOT_MS)
 *   offline between `upgrade/start` and its agent's return on the new version: that wait is part
 *   of the figure (twice per rollout at least: once per stage).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import {
  WALL_DEFAULT_INTERVAL_MS,
  type FleetDevicePage,
  type FleetJob,
  type FleetJobDetail,
} from '@kvm/protocol';
import type { Cloud } from '../e2e/fixtures/cloud';
import {
  makeFirmware,
  uploadFile,
  type FleetAccount,
  type FleetHttp,
} from '../e2e/fixtures/fleet-http';
import { startSimFleet, type SimFleet } from '../e2e/fixtures/fleet-sims';
import { WallWatch } from '../e2e/fixtures/wall-watch';
import { seedDevices } from '../fleet/src/devices/seed';
import { median, note, percentile, round, sized } from './lib';

const SIM_DEVICES = sized(100, 10);
const WALL_ROUNDS = sized(3, 1);
const WALL_WINDOW_S = sized(60, 10);
const LIST_DEVICES = sized(10_000, 500);
const LIST_SAMPLES = sized(200, 20);
const ROLLOUT_DEVICES = sized(100, 10);
/** How long a simulated device is away for its upgrade's reboot (fleet/src/sim/'s default). */
const SIM_REBOOT_MS = 2000;

export interface ConsoleFigures {
  sim_devices: number;
  wall_refresh_s: number;
  wall_refresh_samples: number;
  wall_interval_ms: number;
  wall_bytes_per_device_per_min: number;
  wall_pictures_per_device_per_min: number;
  list_devices: number;
  device_list_p95_ms: number;
  device_list_samples: number;
  device_search_p95_ms: number;
  device_search_samples: number;
  rollout_devices: number;
  rollout_100_devices_s: number;
  rollout_reboot_ms: number;
}

async function until(what: string, pred: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!pred()) {
    if (performance.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** wall_refresh_s rounds and wall_bytes_per_device_per_min on one socket on B. */
async function wallFigures(
  cloud: Cloud,
  onB: FleetHttp,
  ca: string,
  sims: SimFleet,
): Promise<{ refresh: number[]; bytesPerDevicePerMin: number; picturesPerDevicePerMin: number }> {
  const ids = sims.devices.map((d) => d.id);
  const wall = await WallWatch.open(cloud.b.url, onB.cookie, ca);
  try {
    // the counters stand still: a picture changes only when the bench says so
    sims.freeze();
    wall.send({ t: 'watch', ids });
    const allHave = (since: number) =>
      ids.every((id) => wall.pictures.some((p) => p.id === id && p.at >= since));
    await until('a first picture of every tile', () => allHave(0), 120_000);
    const refresh: number[] = [];
    for (let r = 0; r < WALL_ROUNDS; r += 1) {
      // settle: a full interval with no new picture, then every picture changes at once
      await new Promise((res) => setTimeout(res, WALL_DEFAULT_INTERVAL_MS + 500));
      const t0 = performance.now();
      sims.changeAll();
      await until('every tile refreshed', () => allHave(t0), 10 * WALL_DEFAULT_INTERVAL_MS);
      const last = Math.max(
        ...ids.map((id) => wall.pictures.find((p) => p.id === id && p.at >= t0)!.at),
      );
      refresh.push((last - t0) / 1000);
      note(
        `cloud wall: round ${r + 1}: the last of ${ids.length} tiles ${round(last - t0)} ms after the change`,
      );
    }
    // every picture changing each second: each interval brings a new picture of every tile
    sims.changeEvery(1000);
    await new Promise((res) => setTimeout(res, WALL_DEFAULT_INTERVAL_MS));
    const b0 = wall.bytes;
    const p0 = wall.pictures.length;
    const s0 = sims.devices.reduce((n, d) => n + d.snapshots(), 0);
    const t0 = performance.now();
    await new Promise((res) => setTimeout(res, WALL_WINDOW_S * 1000));
    const minutes = (performance.now() - t0) / 60_000;
    const bytes = wall.bytes - b0;
    const pictures = wall.pictures.length - p0;
    const asked = sims.devices.reduce((n, d) => n + d.snapshots(), 0) - s0;
    note(
      `cloud wall: ${bytes} bytes, ${pictures} pictures (${asked} snapshots answered) in ` +
        `${round(minutes * 60, 1)} s for ${ids.length} devices`,
    );
    return {
      refresh,
      bytesPerDevicePerMin: bytes / ids.length / minutes,
      picturesPerDevicePerMin: pictures / ids.length / minutes,
    };
  } finally {
    wall.close();
  }
}

/** device_list / device_search samples (ms) on B with LIST_DEVICES devices registered. */
async function listFigures(
  cloud: Cloud,
  onB: FleetHttp,
  accountId: string,
): Promise<{ list: number[]; search: number[] }> {
  const pool = new pg.Pool({ connectionString: cloud.pg!.url, max: 2 });
  try {
    const [row] = (await pool.query<{ n: string }>('SELECT count(*) AS n FROM devices')).rows;
    const have = Number(row?.n ?? 0);
    if (have < LIST_DEVICES) await seedDevices(pool, accountId, LIST_DEVICES - have);
    await pool.query('ANALYZE devices');
  } finally {
    await pool.end();
  }
  const first = await onB.api<FleetDevicePage>('GET', 'devices');
  note(
    `cloud list: ${first.total} devices registered, the first page ${first.devices.length} rows`,
  );
  if (first.total < LIST_DEVICES) throw new Error(`only ${first.total} devices listed`);
  const time = async (path: string): Promise<number[]> => {
    const out: number[] = [];
    for (let i = 0; i < LIST_SAMPLES + 3; i += 1) {
      const t = performance.now();
      await onB.api<FleetDevicePage>('GET', path);
      if (i >= 3) out.push(performance.now() - t);
    }
    return out;
  };
  const list = await time('devices');
  // a substring in the middle of the seeded names (`seed-0<n>`): many matches, every one counted
  const q = 'ed-004';
  const hits = await onB.api<FleetDevicePage>('GET', `devices?q=${q}`);
  note(`cloud list: q=${q} matches ${hits.total}`);
  const search = await time(`devices?q=${q}`);
  return { list, search };
}

/** rollout_100_devices_s: POST rollouts to every device of `sims` until the job is done (s). */
async function rolloutFigure(onB: FleetHttp, sims: SimFleet): Promise<number> {
  const work = await mkdtemp(join(tmpdir(), 'kvm-bench-rollout-'));
  try {
    const pkg = await uploadFile(
      onB,
      'package',
      'bench-fw.tar',
      await makeFirmware(work, 'V9.9.2'),
    );
    const t0 = performance.now();
    const { job } = await onB.api<{ job: FleetJob }>('POST', 'rollouts', {
      file_id: pkg.id,
      devices: sims.devices.map((d) => d.id),
    });
    let detail: FleetJobDetail;
    for (;;) {
      detail = await onB.api<FleetJobDetail>('GET', `jobs/${job.id}`);
      if (detail.job.state !== 'running') break;
      if (performance.now() - t0 > 600_000) throw new Error('the rollout did not finish in 600 s');
      await new Promise((r) => setTimeout(r, 100));
    }
    const took = (performance.now() - t0) / 1000;
    if (detail.job.state !== 'done')
      throw new Error(`rollout ${detail.job.state}: ${detail.job.reason ?? ''}`);
    note(
      `cloud rollout: ${sims.devices.length} devices in ${round(took, 2)} s (${JSON.stringify(detail.job.counts)})`,
    );
    return took;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** Every figure of part 2, on `cloud` (both replicas up), as the account of `onB`. */
export async function consoleFigures(
  cloud: Cloud,
  onB: FleetHttp,
  account: FleetAccount & { id: string },
  ca: string,
): Promise<ConsoleFigures> {
  const sims = await startSimFleet({
    url: cloud.a.url,
    ca,
    account,
    count: Math.max(SIM_DEVICES, ROLLOUT_DEVICES),
    rebootMs: SIM_REBOOT_MS,
  });
  try {
    note(`cloud console: ${sims.devices.length} simulated devices online`);
    const wall = await wallFigures(cloud, onB, ca, sims);
    const list = await listFigures(cloud, onB, account.id);
    const rollout = await rolloutFigure(onB, sims);
    return {
      sim_devices: sims.devices.length,
      wall_refresh_s: round(median(wall.refresh), 2),
      wall_refresh_samples: wall.refresh.length,
      wall_interval_ms: WALL_DEFAULT_INTERVAL_MS,
      wall_bytes_per_device_per_min: Math.round(wall.bytesPerDevicePerMin),
      wall_pictures_per_device_per_min: round(wall.picturesPerDevicePerMin, 2),
      list_devices: LIST_DEVICES,
      device_list_p95_ms: round(percentile(list.list, 95), 2),
      device_list_samples: list.list.length,
      device_search_p95_ms: round(percentile(list.search, 95), 2),
      device_search_samples: list.search.length,
      rollout_devices: ROLLOUT_DEVICES,
      rollout_100_devices_s: round(rollout, 2),
      rollout_reboot_ms: SIM_REBOOT_MS,
    };
  } finally {
    await sims.stop();
  }
}

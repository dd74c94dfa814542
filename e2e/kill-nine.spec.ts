/**
 * kill -9 during writes and uploads (issue 9, "Deliver"): the built server (the bundle `npm
 * start` runs) is killed with SIGKILL at seeded random moments while an image uploads and
 * state files are written (set_config, msd set_params, Wake-on-LAN add/remove, logins), then
 * started again on the same data folder. After every restart:
 * - every JSON state file parses and the routes that read them answer 200;
 * - no image is listed complete that was not written whole (size and every byte checked);
 * - no temp file of an atomic write survives the restart's cleanup.
 * The count is bounded for `npm test` (KILLS rounds, well under a minute).
 */
import { readdir, readFile } from 'node:fs/promises';
import { request } from 'node:http';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ServerProcess } from './fixtures/server';
import { Prng } from '../server/src/fuzz/prng';

/** A replayable random stream (the fuzzer's PRNG). */
const seeded = (seed: number): (() => number) => {
  const prng = new Prng(seed);
  return () => prng.next();
};

const KILLS = 12;
/** Concurrent state writers during each round. */
const WRITERS = 4;
const SEED = 0x9e3779b9;
const PASSWORD = 'kill-nine-secret';
const TEMP_NAME = /^\..+\.tmp-[0-9a-f]+$/;

/** Byte `i` of image number `n`: every image's bytes differ, so a mix-up shows. */
const byteOf = (n: number, i: number): number => (i * 31 + n * 17 + (i >>> 12)) & 0xff;

function imageBytes(n: number, from: number, length: number): Buffer {
  const b = Buffer.allocUnsafe(length);
  for (let i = 0; i < length; i++) b[i] = byteOf(n, from + i);
  return b;
}

/** The server under test (the e2e fixture's process) and the calls the suite makes on it. */
class Device {
  token = '';
  constructor(readonly server: ServerProcess) {}

  get url(): string {
    return this.server.url;
  }

  /** Starts the process again on the same port and data folder; waits for "ready". */
  start(): Promise<void> {
    return this.server.launch();
  }

  kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    return this.server.kill(signal);
  }

  async call(
    method: 'GET' | 'POST',
    path: string,
    body?: string,
  ): Promise<{ status: number; json: { ok: boolean; result: Record<string, unknown> } }> {
    const res = await fetch(`${this.url}${path}`, {
      method,
      headers: {
        ...(this.token ? { token: this.token } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body } : {}),
    });
    const text = await res.text();
    return { status: res.status, json: JSON.parse(text) as { ok: boolean; result: never } };
  }

  async login(): Promise<void> {
    const res = await fetch(`${this.url}/api/auth/login`, {
      method: 'POST',
      body: new URLSearchParams({ user: 'admin', passwd: PASSWORD }),
    });
    expect(res.status).toBe(200);
    this.token = ((await res.json()) as { result: { token: string } }).result.token;
  }

  /**
   * Streams image `n` (`size` bytes) in 64 KiB pieces, resting 2 ms every 256 KiB (so a kill
   * lands mid-body); resolves true on a 200 answer (the image is on disk), false when the
   * server died under it. `sent` counts the bytes handed to the socket.
   */
  upload(n: number, size: number, progress: { sent: number }): Promise<boolean> {
    return new Promise((resolve) => {
      const req = request(`${this.url}/api/msd/write?image=k${n}.iso`, {
        method: 'POST',
        headers: {
          token: this.token,
          'content-type': 'application/octet-stream',
          'content-length': String(size),
        },
      });
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode === 200));
        res.on('error', () => resolve(false));
      });
      req.on('error', () => resolve(false));
      const piece = 64 * 1024;
      const more = (): void => {
        while (progress.sent < size) {
          const len = Math.min(piece, size - progress.sent);
          const ok = req.write(imageBytes(n, progress.sent, len));
          progress.sent += len;
          if (!ok) {
            req.once('drain', more);
            return;
          }
          if (progress.sent % (4 * piece) === 0) {
            setTimeout(more, 2);
            return;
          }
        }
        req.end();
      };
      more();
    });
  }
}

/** Every file under `dir` (links not followed), as paths relative to it. */
async function walk(dir: string, root = dir): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await walk(path, root)));
    else if (e.isFile()) out.push(relative(root, path));
  }
  return out;
}

/** State writes, one after another, until the server dies. */
async function writeState(device: Device, random: () => number, stop: { now: boolean }) {
  for (let i = 0; !stop.now; i++) {
    const pick = Math.floor(random() * 4);
    try {
      if (pick === 0) {
        const config = { language: random() < 0.5 ? 'en' : 'zh', theme_mode: i % 3, n: i };
        await device.call('POST', '/api/system/set_config', JSON.stringify(config));
      } else if (pick === 1) {
        await device.call('POST', `/api/msd/set_params?cdrom=${i % 2}`);
      } else if (pick === 2) {
        const mac = `02:00:00:00:00:${(i % 200).toString(16).padStart(2, '0')}`;
        await device.call('POST', `/api/wol/add?name=pc${i}&mac=${mac}`);
      } else {
        await device.login();
      }
    } catch {
      return; // the server is gone
    }
  }
}

describe('kill -9 during writes and uploads', () => {
  let device: Device | null = null;

  afterAll(async () => {
    await device?.server.dispose();
  });

  it(`leaves no torn state, no false complete image, no temp file (${KILLS} kills)`, async () => {
    const random = seeded(SEED);
    device = new Device(await ServerProcess.start());
    const dataDir = device.server.dataDir;
    const init = await fetch(
      `${device.url}/api/init/init?password=${encodeURIComponent(PASSWORD)}`,
    );
    expect(init.status).toBe(200);
    await device.login();

    /** Image number → its size, for every upload begun. */
    const begun = new Map<number, number>();
    /** Uploads answered 200: durable, they must be complete after any kill. */
    const acknowledged = new Set<number>();
    let killedMidUpload = 0;
    /** Temp files the kills left (what the restarts had to clean), for the log. */
    let tempsLeftByKills = 0;
    for (let round = 0; round < KILLS; round++) {
      const size = (1 + Math.floor(random() * 12)) * 1024 * 1024 + Math.floor(random() * 4096);
      begun.set(round, size);
      const progress = { sent: 0 };
      const stop = { now: false };
      let answered = false;
      const uploaded = device.upload(round, size, progress).then((ok) => {
        answered = ok;
        if (ok) acknowledged.add(round);
      });
      // several writers at once: more of the kills land inside an atomic write
      const writes = Promise.all(
        Array.from({ length: WRITERS }, () =>
          writeState(device!, seeded(random() * 2 ** 32), stop),
        ),
      );
      // Most kills land when a seeded share of the body went out (mid-upload, while state is
      // written too); the others after a seeded delay, often after the upload's answer.
      const share = random();
      if (share < 0.85) {
        const deadline = Date.now() + 10_000;
        while (progress.sent < share * size && !answered && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 1));
        }
      } else {
        await new Promise((r) => setTimeout(r, 5 + Math.floor(random() * 400)));
      }
      const finishedBefore = answered;
      await device.kill('SIGKILL');
      stop.now = true;
      await Promise.all([uploaded, writes]);
      if (!finishedBefore) killedMidUpload++;

      tempsLeftByKills += (await walk(dataDir)).filter((f) =>
        TEMP_NAME.test(f.split('/').pop() ?? ''),
      ).length;
      await device.start();
      await checkNoTemps(dataDir);
      await checkJsonFiles(dataDir);
      await device.login();
      for (const path of ['/api/system/get_config', '/api/wol/devices', '/api/msd']) {
        expect((await device.call('GET', path)).status, path).toBe(200);
      }
      await checkImages(device, dataDir, begun, acknowledged);
    }
    // the seed puts most kills inside an upload; the suite is about those
    expect(killedMidUpload).toBeGreaterThan(KILLS / 2);
    console.log(
      JSON.stringify({
        kills: KILLS,
        killed_mid_upload: killedMidUpload,
        // temp files the kills left behind; the next start removed every one (checkNoTemps)
        temps_left_by_kills: tempsLeftByKills,
      }),
    );
    await device.kill('SIGTERM');
  }, 55_000);
});

/** No temp file of an atomic write anywhere (a write in flight may finish: looked at twice). */
async function checkNoTemps(dataDir: string): Promise<void> {
  const temps = (await walk(dataDir)).filter((f) => TEMP_NAME.test(f.split('/').pop() ?? ''));
  if (temps.length === 0) return;
  await new Promise((r) => setTimeout(r, 500));
  const left = new Set(
    (await walk(dataDir)).filter((f) => TEMP_NAME.test(f.split('/').pop() ?? '')),
  );
  expect(temps.filter((f) => left.has(f))).toEqual([]);
}

async function checkJsonFiles(dataDir: string): Promise<void> {
  const files = (await walk(dataDir)).filter(
    (f) => f.endsWith('.json') && !f.startsWith('msd/images/'),
  );
  expect(files.length).toBeGreaterThan(0);
  for (const f of files) {
    const text = await readFile(join(dataDir, f), 'utf8');
    expect(() => JSON.parse(text), `${f}: ${text.slice(0, 80)}`).not.toThrow();
  }
}

async function checkImages(
  device: Device,
  dataDir: string,
  begun: Map<number, number>,
  acknowledged: Set<number>,
): Promise<void> {
  const state = (await device.call('GET', '/api/msd')).json.result as {
    storage: { images: Record<string, { complete: boolean; size: number }> };
  };
  for (const [name, info] of Object.entries(state.storage.images)) {
    const n = Number(/^k(\d+)\.iso$/.exec(name)?.[1] ?? Number.NaN);
    expect(begun.has(n), `unexpected image ${name}`).toBe(true);
    if (!info.complete) continue;
    // complete: every byte of what the client sent is there, and nothing else
    expect(info.size, name).toBe(begun.get(n));
    const bytes = await readFile(join(dataDir, 'msd', 'images', name));
    expect(bytes.equals(imageBytes(n, 0, info.size)), `${name} content`).toBe(true);
  }
  for (const n of acknowledged) {
    expect(state.storage.images[`k${n}.iso`]?.complete, `k${n}.iso was answered 200`).toBe(true);
  }
}

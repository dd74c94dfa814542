import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RawFrame } from '../drivers/video/types';
import { readProcArgv, waitForExit } from '../process/supervisor';
import {
  ffmpegArgs,
  H264Encoder,
  maxInFlight,
  type EncoderOptions,
  type EncoderSettings,
} from './encoder';
import type { AccessUnit } from './types';

const SETTINGS: EncoderSettings = {
  width: 64,
  height: 48,
  format: 'yuv420p',
  fps: 30,
  bitrateKbps: 200,
  gop: 10,
  processing: 'low_latency_first',
};

let dir: string;
const encoders: H264Encoder[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kvm-encoder-'));
});
afterEach(async () => {
  await Promise.all(encoders.splice(0).map((e) => e.stop()));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A stand-in for ffmpeg: a shell script that gets ffmpeg's arguments. */
async function fakeFfmpeg(name: string, body: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, `#!/bin/sh\n${body}\n`);
  await chmod(path, 0o755);
  return path;
}

function encoder(opts: EncoderOptions = {}, settings = SETTINGS): H264Encoder {
  let seq = 0;
  const enc = new H264Encoder(settings, () => seq++, opts);
  encoders.push(enc);
  return enc;
}

let frameNo = 0;
function frame(over: Partial<RawFrame> = {}): RawFrame {
  const { width, height } = { ...SETTINGS, ...over };
  frameNo += 1;
  return {
    width,
    height,
    format: 'yuv420p',
    data: Buffer.alloc((width * height * 3) / 2, frameNo & 0xff),
    capturedAt: 1000 + frameNo,
    ...over,
  };
}

const poll = { timeout: 10_000, interval: 20 };

describe('H264Encoder', () => {
  it('encodes every frame into one unit, in order, key frame first', async () => {
    const enc = encoder();
    const units: AccessUnit[] = [];
    enc.on('unit', (u) => units.push(u));
    expect(enc.write(frame())).toBe('offline'); // not started
    await enc.start();
    expect(enc.running).toBe(true);
    const captured: number[] = [];
    for (let i = 0; i < 12; i += 1) {
      // one frame at a time: the in-flight gate is not what this test is about
      await expect.poll(() => enc.framesInFlight, poll).toBe(0);
      const f = frame();
      captured.push(f.capturedAt);
      expect(enc.write(f)).toBe('written');
    }
    await expect.poll(() => units.length, poll).toBe(12);
    expect(units[0]?.key).toBe(true);
    expect(units[10]?.key).toBe(true); // gop 10
    expect(units.map((u) => u.seq)).toEqual([...Array(12).keys()]);
    expect(units.map((u) => u.capturedAt)).toEqual(captured);
    expect(enc.write(frame({ width: 32 }))).toBe('mismatch');
  });

  it('gives each written frame back to its source once the pipe has taken it', async () => {
    const enc = encoder();
    await enc.start();
    let released = 0;
    for (let i = 0; i < 3; i += 1) {
      await expect.poll(() => enc.framesInFlight, poll).toBe(0);
      expect(enc.write(frame({ release: () => (released += 1) }))).toBe('written');
    }
    await expect.poll(() => released, poll).toBe(3);
  });

  it('encodes a source of odd width and height (padded to even)', async () => {
    const odd = { ...SETTINGS, width: 65, height: 49, format: 'bgr0' as const };
    expect(ffmpegArgs(odd).join(' ')).toContain('-vf pad=66:50');
    expect(ffmpegArgs(SETTINGS)).not.toContain('-vf');
    const enc = encoder({}, odd);
    const units: AccessUnit[] = [];
    const exits: Array<number | null> = [];
    enc.on('unit', (u) => units.push(u));
    enc.on('exit', (info) => exits.push(info.code));
    await enc.start();
    for (let i = 0; i < 3; i += 1) {
      await expect.poll(() => enc.framesInFlight, poll).toBe(0);
      const f = frame({
        width: 65,
        height: 49,
        format: 'bgr0',
        data: Buffer.alloc(65 * 49 * 4, i),
      });
      expect(enc.write(f)).toBe('written');
    }
    await expect.poll(() => units.length, poll).toBe(3);
    expect(units[0]?.key).toBe(true);
    expect(exits).toEqual([]);
  });

  it('drops frames past maxInFlight as busy', async () => {
    // reads its input, never answers: every frame stays in flight
    const binary = await fakeFfmpeg('silent', 'exec cat >/dev/null');
    const enc = encoder({ binary });
    await enc.start();
    const results = Array.from({ length: 10 }, () => enc.write(frame()));
    const max = maxInFlight(SETTINGS.fps);
    expect(results.filter((r) => r === 'written')).toHaveLength(max);
    expect(results.slice(max).every((r) => r === 'busy')).toBe(true);
  });

  it('bounds the bytes in flight as well as the frames', async () => {
    const binary = await fakeFfmpeg('silent-2', 'exec cat >/dev/null');
    const big = { ...SETTINGS, width: 640, height: 480 }; // 460,800 bytes a frame
    const enc = encoder({ binary, maxInFlightBytes: 1024 * 1024 }, big);
    await enc.start();
    const results = Array.from({ length: 4 }, () => enc.write(frame({ width: 640, height: 480 })));
    expect(results).toEqual(['written', 'written', 'busy', 'busy']);
    // one frame always goes, however big
    const huge = encoder({ binary, maxInFlightBytes: 1000 }, big);
    await huge.start();
    expect(huge.write(frame({ width: 640, height: 480 }))).toBe('written');
    expect(huge.write(frame({ width: 640, height: 480 }))).toBe('busy');
  });

  it('stops ffmpeg without SIGKILL and leaves no process behind', async () => {
    const enc = encoder();
    const exits: Array<NodeJS.Signals | null> = [];
    enc.on('exit', (info) => exits.push(info.signal));
    await enc.start();
    const pid = enc.pid as number;
    await expect.poll(async () => (await readProcArgv(pid))?.[0], poll).toMatch(/ffmpeg$/);
    enc.write(frame());
    await enc.stop();
    expect(await waitForExit(pid, 5000)).toBe(true);
    // stdin closed first: ffmpeg ends on its own, no wait for the SIGKILL timeout
    expect(exits).toHaveLength(1);
    expect(exits[0]).not.toBe('SIGKILL');
    expect(enc.running).toBe(false);
    await enc.stop(); // idempotent
  });

  it('restarts a dying ffmpeg with backoff, and not after stop', async () => {
    const binary = await fakeFfmpeg('dies', 'echo "boom" >&2; exit 1');
    const enc = encoder({ binary, backoff: { initialMs: 20, maxMs: 80 } });
    const delays: number[] = [];
    const stderr: string[] = [];
    const codes: Array<number | null> = [];
    enc.on('restarting', (ms) => delays.push(ms));
    enc.on('exit', (info, text) => {
      codes.push(info.code);
      stderr.push(text);
    });
    await enc.start();
    await expect.poll(() => delays.length, poll).toBeGreaterThanOrEqual(4);
    expect(delays.slice(0, 4)).toEqual([20, 40, 80, 80]);
    expect(stderr[0]).toContain('boom');
    expect(codes.every((c) => c === 1)).toBe(true);
    await enc.stop();
    const n = delays.length;
    await new Promise((r) => setTimeout(r, 200));
    expect(delays.length).toBe(n);
  });

  it('kills and restarts an ffmpeg that takes frames and never answers', async () => {
    const binary = await fakeFfmpeg('hangs', 'exec cat >/dev/null');
    const enc = encoder({ binary, stallMs: 200, backoff: { initialMs: 20 } });
    const faults: string[] = [];
    const lost: number[] = [];
    const pids: number[] = [];
    enc.on('fault', (r) => faults.push(r));
    enc.on('exit', (_i, _s, n) => lost.push(n));
    enc.on('started', (pid) => pids.push(pid));
    await enc.start();
    expect(enc.write(frame())).toBe('written');
    expect(enc.write(frame())).toBe('written');
    await expect.poll(() => pids.length, poll).toBe(2);
    expect(faults[0]).toMatch(/no output/);
    expect(lost).toEqual([2]);
    expect(await waitForExit(pids[0] as number, 5000)).toBe(true);
  });

  it('kills and restarts an ffmpeg whose output is not FLV', async () => {
    const binary = await fakeFfmpeg('garbage', 'head -c 4096 /dev/urandom; exec cat >/dev/null');
    const enc = encoder({ binary, backoff: { initialMs: 20 } });
    const faults: string[] = [];
    const units: AccessUnit[] = [];
    enc.on('fault', (r) => faults.push(r));
    enc.on('unit', (u) => units.push(u));
    await enc.start();
    await expect.poll(() => faults.length, poll).toBeGreaterThanOrEqual(2);
    expect(faults[0]).toMatch(/not FLV/);
    expect(units).toEqual([]);
  });

  it('keeps retrying a missing ffmpeg with backoff instead of throwing', async () => {
    const enc = encoder({ binary: join(dir, 'no-such-ffmpeg'), backoff: { initialMs: 20 } });
    const errors: Error[] = [];
    enc.on('spawnError', (e) => errors.push(e));
    await enc.start();
    expect(enc.write(frame())).toBe('offline');
    await expect.poll(() => errors.length, poll).toBeGreaterThanOrEqual(2);
    expect(errors[0]?.message).toMatch(/not found/);
  });
});

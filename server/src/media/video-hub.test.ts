import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Logger } from '../log';
import type { RawFrame, VideoSource, VideoSourceState } from '../drivers/video/types';
import { readProcArgv, waitForExit } from '../process/supervisor';
import { maxInFlight } from './encoder';
import type { AccessUnit } from './types';
import { VideoHub, type HubParams, type VideoHubOptions } from './video-hub';

const W = 64;
const H = 48;
const PARAMS: HubParams = { bitrateKbps: 200, gop: 10, fps: 30, processing: 'low_latency_first' };
const poll = { timeout: 10_000, interval: 20 };

/** A source the test drives by hand: frames arrive when `push()` says so. */
class FakeSource implements VideoSource {
  readonly name = 'fake';
  state: VideoSourceState = { online: true, signal: true, width: W, height: H };
  onFrame: ((f: RawFrame) => void) | null = null;
  fps = 0;
  /** Frames handed back (RawFrame.release) once each. */
  released = 0;
  private frameNo = 0;
  private listeners = new Set<(s: VideoSourceState) => void>();
  getState(): VideoSourceState {
    return { ...this.state };
  }
  onState(l: (s: VideoSourceState) => void): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }
  /** A new state, told to the listeners as a driver does. */
  setState(next: Partial<VideoSourceState>): void {
    this.state = { ...this.state, ...next };
    for (const l of this.listeners) l(this.getState());
  }
  async startCapture(onFrame: (f: RawFrame) => void, fps: number): Promise<void> {
    this.onFrame = onFrame;
    this.fps = fps;
  }
  async stopCapture(): Promise<void> {
    this.onFrame = null;
  }
  async init(): Promise<void> {}
  async dispose(): Promise<void> {}
  /** One frame, different from the last (noise a little, so units are not all tiny). */
  get pushed(): number {
    return this.frameNo;
  }
  push(width = W, height = H): boolean {
    if (!this.onFrame) return false;
    this.frameNo += 1;
    const data = Buffer.alloc((width * height * 3) / 2, this.frameNo & 0xff);
    for (let i = 0; i < 64; i += 1) data[(this.frameNo * 97 + i * 31) % data.length] = i * 7;
    let lent = true;
    const release = (): void => {
      if (lent) this.released += 1;
      lent = false;
    };
    this.onFrame({
      width,
      height,
      format: 'yuv420p',
      data,
      capturedAt: performance.now(),
      release,
    });
    return true;
  }
}

class RecordingLog implements Logger {
  lines: Array<{ level: string; msg: string; obj: object }> = [];
  info(obj: object, msg = ''): void {
    this.lines.push({ level: 'info', msg, obj });
  }
  warn(obj: object, msg = ''): void {
    this.lines.push({ level: 'warn', msg, obj });
  }
  error(obj: object, msg = ''): void {
    this.lines.push({ level: 'error', msg, obj });
  }
  debug(obj: object, msg = ''): void {
    this.lines.push({ level: 'debug', msg, obj });
  }
  has(level: string, msg: RegExp): boolean {
    return this.lines.some((l) => l.level === level && msg.test(l.msg));
  }
}

let dir: string;
const hubs: VideoHub[] = [];
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kvm-hub-'));
});
afterEach(async () => {
  await Promise.all(hubs.splice(0).map((h) => h.dispose()));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A source that says its frames' layout, as QEMU's and the testbed's do. */
class FormatSource extends FakeSource {
  readonly pixelFormat = 'yuv420p' as const;
}

function hub(opts: VideoHubOptions = {}, params = PARAMS, source = new FakeSource()) {
  const log = new RecordingLog();
  const h = new VideoHub(source, params, log, { lingerMs: 60_000, ...opts });
  hubs.push(h);
  return { h, source, log };
}

/** Pushes frames until `done()` (one per tick, so ffmpeg keeps up), at most `max`. */
async function feed(
  source: FakeSource,
  done: () => boolean,
  max = 1000,
  width = W,
  height = H,
): Promise<void> {
  for (let i = 0; i < max && !done(); i += 1) {
    source.push(width, height);
    await new Promise((r) => setTimeout(r, 10));
  }
  if (!done()) throw new Error('condition not reached while feeding frames');
}

const alive = async (pid: number): Promise<boolean> => (await readProcArgv(pid)) !== null;

/** Each viewer's stream: starts on a key unit and never skips a sequence number. */
function expectWhole(units: AccessUnit[]): void {
  expect(units[0]?.key).toBe(true);
  for (let i = 1; i < units.length; i += 1) {
    expect(units[i]!.seq - units[i - 1]!.seq).toBe(1);
  }
}

describe('VideoHub', () => {
  it('streams to a viewer and gives a late viewer the cached GOP at once', async () => {
    const { h, source } = hub();
    const first: AccessUnit[] = [];
    h.subscribe((u) => first.push(u));
    expect(source.onFrame).not.toBeNull(); // the viewer started the capture
    expect(source.fps).toBe(30);
    await feed(source, () => first.length >= 14);
    expectWhole(first);
    const late: AccessUnit[] = [];
    h.subscribe((u) => late.push(u));
    // the cached GOP arrived inside subscribe(): from the last key unit to the newest one
    expect(late.length).toBeGreaterThan(0);
    expect(late.at(-1)).toBe(first.at(-1));
    expectWhole(late);
    expect(h.getStats().viewers).toBe(2);
    expect(h.totals().units).toBe(first.length);
  });

  it('hands a viewer the cached GOP again on its asking, with the same encoder', async () => {
    const { h, source } = hub();
    const first: AccessUnit[] = [];
    const viewer = (u: AccessUnit): number => first.push(u);
    h.subscribe(viewer);
    await feed(source, () => first.length >= 14);
    const pid = h.encoderPid;
    const before = first.length;
    expect(h.replayGop(viewer)).toBe(true);
    const again = first.slice(before);
    expect(again.length).toBeGreaterThan(0);
    expectWhole(again);
    expect(again.at(-1)).toBe(first[before - 1]);
    expect(h.encoderPid).toBe(pid);
    // a function that is not a viewer is handed nothing
    expect(h.replayGop(() => undefined)).toBe(false);
  });

  it('drops an oversized GOP whole: a late viewer gets a key frame, never a gap', async () => {
    // 4 units at most in the cache, GOP of 10: every GOP overflows
    const { h, source } = hub({ gopCache: { maxBytes: 1 << 20, maxUnits: 4 } });
    const first: AccessUnit[] = [];
    h.subscribe((u) => first.push(u));
    await feed(source, () => first.length >= 7);
    await expect.poll(() => h.getDrops().gop_cache_overflow, poll).toBeGreaterThan(0);
    const pid = h.encoderPid;
    const late: AccessUnit[] = [];
    const lateViewer = (u: AccessUnit): number => late.push(u);
    h.subscribe(lateViewer);
    expect(late).toEqual([]); // nothing rather than a GOP with a hole
    expect(h.replayGop(lateViewer)).toBe(false); // and no replay of one either
    // ...and the hub asked for a key frame at once (an encoder restart) instead of waiting
    await feed(source, () => late.length >= 3);
    expect(h.encoderPid).not.toBe(pid);
    expectWhole(late);
  });

  it('counts frames a busy encoder cannot take', async () => {
    // reads frames, never answers: the in-flight gate fills
    const binary = join(dir, 'silent');
    await writeFile(binary, '#!/bin/sh\nexec cat >/dev/null\n');
    await chmod(binary, 0o755);
    const { h, source } = hub({ ffmpeg: binary, encoder: { stallMs: 60_000 } });
    h.subscribe(() => undefined);
    source.push(); // starts the encoder; the frame is held until ffmpeg runs
    await expect.poll(() => h.encoderPid, poll).not.toBeNull();
    for (let i = 0; i < 20; i += 1) {
      source.push();
      // each small frame is wholly in the pipe a tick later (PIPE_FRAMES)
      await new Promise((r) => setImmediate(r));
    }
    // the held frame plus maxInFlight - 1 of these went in; the rest were dropped
    expect(h.getDrops().source_busy).toBe(20 - (maxInFlight(PARAMS.fps) - 1));
    expect(h.totals()).toMatchObject({ frames: 21, units: 0, dropped: h.getDrops().source_busy });
  });

  it('while the pipe takes a frame, keeps only the newest for it: no queue of older ones', async () => {
    const { h, source } = hub();
    const units: AccessUnit[] = [];
    h.subscribe((u) => units.push(u));
    await feed(source, () => units.length >= 2);
    // what was fed before has come out: nothing else is in ffmpeg
    await vi.waitFor(() => {
      const t = h.totals();
      expect(t.units + t.dropped).toBe(source.pushed);
    }, poll);
    const busyBefore = h.getDrops().source_busy;
    const releasedBefore = source.released;
    const unitsBefore = h.totals().units;
    // a burst within one tick: the first goes into the pipe, each next replaces the waiting one
    for (let i = 0; i < 6; i += 1) source.push();
    expect(h.getDrops().source_busy - busyBefore).toBe(4);
    expect(source.released - releasedBefore).toBe(4);
    // the newest is written once the pipe has taken the first: two of the six come out
    await vi.waitFor(() => expect(h.totals().units).toBe(unitsBefore + 2), poll);
    await vi.waitFor(() => expect(source.released).toBe(source.pushed), poll);
    await new Promise((r) => setTimeout(r, 200));
    expect(h.totals().units).toBe(unitsBefore + 2);
    expect(h.getDrops().encoder_offline).toBe(0);
  });

  it('restarts a killed ffmpeg under the supervisor and streams again', async () => {
    const { h, source, log } = hub({ encoder: { backoff: { initialMs: 20 } } });
    const units: AccessUnit[] = [];
    h.subscribe((u) => units.push(u));
    await feed(source, () => units.length >= 3);
    const pid = h.encoderPid as number;
    process.kill(pid, 'SIGKILL');
    await feed(source, () => h.encoderPid !== null && h.encoderPid !== pid);
    const before = units.length;
    await feed(source, () => units.length >= before + 3);
    // the restarted ffmpeg begins with a key frame
    expect(units.slice(before).find((u) => u.key)).toBe(units[before]);
    expect(log.has('warn', /encoder exited/)).toBe(true);
    expect(await waitForExit(pid, 5000)).toBe(true);
  });

  it('survives a missing ffmpeg: logs, counts, no crash', async () => {
    const { h, source, log } = hub({
      ffmpeg: join(dir, 'no-such-ffmpeg'),
      encoder: { backoff: { initialMs: 20 } },
    });
    h.subscribe(() => undefined);
    await feed(source, () => log.has('error', /cannot start/) && h.getDrops().encoder_offline > 2);
    expect(h.getStats().encoderOnline).toBe(false);
  });

  it('a key frame request leaves a starting ffmpeg alone (its first unit is one), and restarts one that gave units', async () => {
    // an ffmpeg that is slow to start, as a real one linking its libraries on a busy machine
    const slow = join(dir, 'slow-ffmpeg');
    await writeFile(slow, '#!/bin/sh\nsleep 2\nexec ffmpeg "$@"\n');
    await chmod(slow, 0o755);
    const { h, source, log } = hub({ ffmpeg: slow });
    const units: AccessUnit[] = [];
    h.subscribe((u) => units.push(u));
    source.push();
    await expect.poll(() => h.encoderPid, poll).not.toBeNull();
    const starting = h.encoderPid;
    h.requestKeyFrame(); // the WebRTC viewer's ask once DTLS is up
    expect(units).toHaveLength(0);
    expect(h.encoderPid).toBe(starting);
    expect(log.has('info', /restarting encoder/)).toBe(false);
    await feed(source, () => units.length >= 2);
    expect(units[0]?.key).toBe(true);
    expect(h.encoderPid).toBe(starting);
    h.requestKeyFrame(); // mid-GOP: only a new ffmpeg makes a key frame
    expect(h.encoderPid).toBeNull();
    expect(log.has('info', /restarting encoder/)).toBe(true);
  });

  it('a viewer that throws costs only itself', async () => {
    const { h, source, log } = hub();
    const good: AccessUnit[] = [];
    let calls = 0;
    h.subscribe(() => {
      calls += 1;
      throw new Error('transport bug');
    });
    h.subscribe((u) => good.push(u));
    await feed(source, () => good.length >= 15);
    expect(calls).toBe(1); // unsubscribed after its first throw
    expectWhole(good);
    expect(log.has('warn', /viewer failed/)).toBe(true);
    expect(h.getStats().viewers).toBe(1);
  });

  it('stops ffmpeg after the linger time, restarts it for the next viewer', async () => {
    const { h, source } = hub({ lingerMs: 50 });
    const units: AccessUnit[] = [];
    const off = h.subscribe((u) => units.push(u));
    await feed(source, () => units.length >= 2);
    const pid = h.encoderPid as number;
    off();
    await expect.poll(() => h.encoderPid, poll).toBeNull();
    expect(source.onFrame).toBeNull();
    expect(await waitForExit(pid, 5000)).toBe(true);
    const again: AccessUnit[] = [];
    h.subscribe((u) => again.push(u));
    await feed(source, () => again.length >= 2);
    expect(again[0]?.key).toBe(true);
  });

  it('keeps a started ffmpeg after the linger, and the next viewer’s encoder is that one', async () => {
    const { h, source, log } = hub({ lingerMs: 50 });
    const units: AccessUnit[] = [];
    const off = h.subscribe((u) => units.push(u));
    await feed(source, () => units.length >= 2);
    const first = h.encoderPid as number;
    off();
    await expect.poll(() => h.encoderPid, poll).toBeNull();
    await expect.poll(() => h.sparePid, poll).not.toBeNull();
    const spare = h.sparePid as number;
    expect(spare).not.toBe(first);
    expect(await waitForExit(first, 5000)).toBe(true);
    expect(await alive(spare)).toBe(true);
    const again: AccessUnit[] = [];
    h.subscribe((u) => again.push(u));
    await feed(source, () => again.length >= 3);
    expect(h.encoderPid).toBe(spare);
    expect(h.sparePid).toBeNull();
    expectWhole(again);
    const starts = log.lines.filter((l) => l.msg === 'encoder starting');
    expect(starts.map((l) => (l.obj as { spare: boolean }).spare)).toEqual([false, true]);
    await h.dispose();
    expect(await waitForExit(spare, 5000)).toBe(true);
  });

  it('starts the first spare before any viewer when the source says its pixel format', async () => {
    const source = new FormatSource();
    source.state = { online: true, signal: false, width: 0, height: 0 };
    const { h, log } = hub({ primeMs: 20 }, PARAMS, source);
    // no picture: no settings to start one with
    await new Promise((r) => setTimeout(r, 100));
    expect(h.sparePid).toBeNull();
    source.setState({ signal: true, width: W, height: H });
    await expect.poll(() => h.sparePid, poll).not.toBeNull();
    const first = h.sparePid as number;
    // a new size while nobody watches: a spare of that size instead
    source.setState({ width: W * 2, height: H * 2 });
    await expect.poll(() => h.sparePid !== null && h.sparePid !== first, poll).toBe(true);
    expect(await waitForExit(first, 5000)).toBe(true);
    // new parameters too
    const second = h.sparePid as number;
    expect((await readProcArgv(second))?.join(' ')).toContain(`${W * 2}x${H * 2}`);
    h.setParams({ ...PARAMS, bitrateKbps: 300 });
    await expect.poll(() => h.sparePid !== null && h.sparePid !== second, poll).toBe(true);
    const third = h.sparePid as number;
    expect((await readProcArgv(third))?.join(' ')).toContain('-b:v 300k');
    // the first viewer's encoder is that spare
    const units: AccessUnit[] = [];
    h.subscribe((u) => units.push(u));
    await feed(source, () => units.length >= 2, 1000, W * 2, H * 2);
    expect(h.encoderPid).toBe(third);
    expectWhole(units);
    const starts = log.lines.filter((l) => l.msg === 'encoder starting');
    expect(starts.map((l) => (l.obj as { spare: boolean }).spare)).toEqual([true]);

    // told not to keep spares: none before the first viewer either
    const off = hub({ primeMs: 20, spareEncoder: false }, PARAMS, new FormatSource());
    await new Promise((r) => setTimeout(r, 150));
    expect(off.h.sparePid).toBeNull();
  });

  it('starts at most one spare per primeMs: a flurry of sizes gets one, of the last size', async () => {
    const source = new FormatSource();
    const { h } = hub({ primeMs: 1500 }, PARAMS, source);
    await expect.poll(() => h.sparePid, poll).not.toBeNull();
    const first = h.sparePid as number;
    // a guest's boot: three modes in a row, right after that spare
    source.setState({ width: W * 2, height: H * 2 });
    source.setState({ width: W * 3, height: H * 3 });
    source.setState({ width: W * 4, height: H * 4 });
    expect(h.sparePid).toBe(first);
    await expect.poll(() => h.sparePid !== null && h.sparePid !== first, poll).toBe(true);
    expect((await readProcArgv(h.sparePid as number))?.join(' ')).toContain(`${W * 4}x${H * 4}`);
    expect(await waitForExit(first, 5000)).toBe(true);
  });

  it('starts no spare when told not to; a spare of other settings is stopped, not used', async () => {
    const off = hub({ lingerMs: 50, spareEncoder: false });
    const stop = off.h.subscribe(() => undefined);
    await feed(off.source, () => off.h.encoderPid !== null);
    stop();
    await expect.poll(() => off.h.encoderPid, poll).toBeNull();
    expect(off.h.sparePid).toBeNull();

    const { h, source } = hub({ lingerMs: 50 });
    const unsubscribe = h.subscribe(() => undefined);
    await feed(source, () => h.encoderPid !== null);
    unsubscribe();
    await expect.poll(() => h.sparePid, poll).not.toBeNull();
    const spare = h.sparePid as number;
    h.setParams({ ...PARAMS, bitrateKbps: 300 });
    h.subscribe(() => undefined);
    await feed(source, () => h.encoderPid !== null);
    expect(h.encoderPid).not.toBe(spare);
    expect(await waitForExit(spare, 5000)).toBe(true);
    expect((await readProcArgv(h.encoderPid as number))?.join(' ')).toContain('-b:v 300k');
  });

  it('does not keep a spare that dies', async () => {
    const { h, source } = hub({ lingerMs: 50, encoder: { backoff: { initialMs: 10 } } });
    const off = h.subscribe(() => undefined);
    await feed(source, () => h.encoderPid !== null);
    off();
    await expect.poll(() => h.sparePid, poll).not.toBeNull();
    process.kill(h.sparePid as number, 'SIGKILL');
    await expect.poll(() => h.sparePid, poll).toBeNull();
    // the next viewer starts an encoder as before
    const units: AccessUnit[] = [];
    h.subscribe((u) => units.push(u));
    await feed(source, () => units.length >= 2);
    expect(units[0]?.key).toBe(true);
  });

  it('leaves no ffmpeg behind on dispose, nor after a parameter change', async () => {
    const { h, source } = hub();
    const units: AccessUnit[] = [];
    h.subscribe((u) => units.push(u));
    await feed(source, () => units.length >= 2);
    const first = h.encoderPid as number;
    h.setParams({ ...PARAMS, bitrateKbps: 300 });
    await feed(source, () => h.encoderPid !== null && h.encoderPid !== first);
    const second = h.encoderPid as number;
    expect(await waitForExit(first, 5000)).toBe(true);
    expect(await alive(second)).toBe(true);
    expect((await readProcArgv(second))?.join(' ')).toContain('-b:v 300k');
    await h.dispose();
    expect(await waitForExit(second, 5000)).toBe(true);
    expect(h.encoderPid).toBeNull();
  });

  it('a source flipping its size every frame cannot make an ffmpeg per frame', async () => {
    const { h, source, log } = hub({ encoderStartMinMs: 60_000 });
    h.subscribe(() => undefined);
    for (let i = 0; i < 50; i += 1) source.push(i % 2 ? W : W / 2, i % 2 ? H : H / 2);
    // the first frame started one, the second retired it (wrong size), and the other 48 had
    // to wait: each was held and replaced by the next, counted as dropped
    expect(log.lines.filter((l) => l.msg === 'encoder starting')).toHaveLength(1);
    expect(log.lines.filter((l) => /restarting encoder/.test(l.msg))).toHaveLength(1);
    expect(h.getDrops().encoder_offline).toBe(49);
    expect(h.encoderPid).toBeNull();
  });

  it('a source that fails to change its rate does not take the process down', async () => {
    const { h, source, log } = hub();
    const units: AccessUnit[] = [];
    h.subscribe((u) => units.push(u));
    await feed(source, () => units.length >= 1);
    source.startCapture = () => Promise.reject(new Error('device gone'));
    h.setParams({ ...PARAMS, fps: 10 });
    await expect.poll(() => log.has('warn', /refused the frame rate/), poll).toBe(true);
  });

  it('stops ffmpeg even when the source fails to stop', async () => {
    const { h, source, log } = hub({ lingerMs: 20 });
    const units: AccessUnit[] = [];
    const off = h.subscribe((u) => units.push(u));
    await feed(source, () => units.length >= 1);
    const pid = h.encoderPid as number;
    source.stopCapture = () => Promise.reject(new Error('device gone'));
    off();
    await expect.poll(() => log.has('warn', /failed to stop/), poll).toBe(true);
    expect(await waitForExit(pid, 5000)).toBe(true);
  });

  it('counts what transports report, and nothing else', async () => {
    const { h } = hub();
    h.reportDrop('viewer_lagging');
    h.reportDrop('viewer_lagging', 5);
    h.reportDrop('viewer_lagging', Number.NaN);
    h.reportDrop('viewer_lagging', -3);
    h.reportDrop('source_busy' as 'viewer_lagging', 7);
    expect(h.getDrops()).toEqual({
      source_busy: 0,
      encoder_offline: 0,
      encoder_restart: 0,
      gop_cache_overflow: 0,
      viewer_lagging: 6,
    });
  });
});

describe('VideoHub frame buffers', () => {
  it('hands back every frame it does not keep: held ones replaced while ffmpeg starts, and the rest', async () => {
    const { h, source } = hub();
    const units: AccessUnit[] = [];
    h.subscribe((u) => units.push(u));
    // ffmpeg is still starting: each frame replaces the held one, which goes back at once
    for (let i = 0; i < 5; i += 1) source.push();
    expect(source.released).toBe(4);
    await feed(source, () => units.length >= 3);
    await h.dispose();
    await vi.waitFor(() => expect(source.released).toBe(source.pushed), poll);
  });
});

describe('VideoHub raw frames (the JPEG path)', () => {
  it('captures for a raw subscriber without starting the H.264 encoder, and stops after', async () => {
    const { h, source } = hub({ lingerMs: 50 });
    const got: RawFrame[] = [];
    const off = h.subscribeRaw((f) => {
      got.push(f);
      f.release?.();
    });
    await vi.waitFor(() => expect(source.onFrame).not.toBeNull(), poll);
    for (let i = 0; i < 5; i += 1) source.push();
    expect(got).toHaveLength(5);
    expect(h.encoderPid).toBeNull();
    off();
    await vi.waitFor(() => expect(source.onFrame).toBeNull(), poll);
  });

  it('shares one frame between consumers: back to the source once, after the last', async () => {
    const { h, source } = hub();
    const a: RawFrame[] = [];
    const b: RawFrame[] = [];
    h.subscribeRaw((f) => a.push(f));
    h.subscribeRaw((f) => b.push(f));
    await vi.waitFor(() => expect(source.onFrame).not.toBeNull(), poll);
    let released = 0;
    source.onFrame!({
      width: W,
      height: H,
      format: 'yuv420p',
      data: Buffer.alloc((W * H * 3) / 2, 7),
      capturedAt: performance.now(),
      release: () => (released += 1),
    });
    a[0]!.release?.();
    a[0]!.release?.(); // a second release of one share counts once
    expect(released).toBe(0);
    b[0]!.release?.();
    expect(released).toBe(1);
    expect(h.encoderPid).toBeNull();
  });

  it('unsubscribes a raw subscriber that throws, and capture goes on for the encoder', async () => {
    const { h, source, log } = hub();
    h.subscribe(() => undefined);
    h.subscribeRaw(() => {
      throw new Error('boom');
    });
    await vi.waitFor(() => expect(source.onFrame).not.toBeNull(), poll);
    source.push();
    expect(h.rawSubscribers).toBe(0);
    expect(log.has('warn', /raw frame subscriber failed/)).toBe(true);
  });
});

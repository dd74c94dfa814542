/**
 * The video hub with an `ffmpeg-input` source (drivers/video/types.ts): ffmpeg's own test
 * pattern (`-re -f lavfi -i testsrc`) stands in for a capture device, read by the encoder's
 * ffmpeg at its own rate the way `-f v4l2 -i /dev/video0` will be. drivers/video/file.test.ts
 * runs the same path with a file.
 */
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SILENT_LOGGER } from '../log';
import type { RawFrame, VideoInput, VideoSource, VideoSourceState } from '../drivers/video/types';
import { readProcArgv, waitForExit } from '../process/supervisor';
import { NalType, nalType, parseSps, splitNalUnits } from './annexb';
import { ffmpegArgs, H264Encoder } from './encoder';
import { decoderArgs, yuv420pSize } from './h264-decoder';
import { JpegHub } from './jpeg-hub';
import { jpegSize, type Jpeg } from './jpeg';
import type { AccessUnit } from './types';
import { VideoHub, type HubParams, type VideoHubOptions } from './video-hub';

const PARAMS: HubParams = { bitrateKbps: 200, gop: 15, fps: 30, processing: 'low_latency_first' };
const poll = { timeout: 20_000, interval: 25 };

/** A capture device stand-in: ffmpeg's test pattern, paced at `rate` like a live input. */
class PatternSource implements VideoSource {
  readonly name = 'pattern';
  state: VideoSourceState;
  rate = 30;
  /** startCapture calls: an input source is never asked for frames. */
  captureCalls = 0;
  private readonly listeners = new Set<(s: VideoSourceState) => void>();
  constructor(width = 96, height = 64) {
    this.state = { online: true, signal: true, width, height };
  }
  getState(): VideoSourceState {
    return { ...this.state };
  }
  input(): VideoInput {
    const { width, height } = this.state;
    return {
      kind: 'ffmpeg-input',
      args: ['-re', '-f', 'lavfi', '-i', `testsrc=size=${width}x${height}:rate=${this.rate}`],
      width,
      height,
      fps: this.rate,
    };
  }
  set(state: Partial<VideoSourceState>): void {
    this.state = { ...this.state, ...state };
    for (const l of [...this.listeners]) l(this.getState());
  }
  onState(l: (s: VideoSourceState) => void): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }
  async startCapture(): Promise<void> {
    this.captureCalls += 1;
  }
  async stopCapture(): Promise<void> {
    this.captureCalls += 1;
  }
  async init(): Promise<void> {}
  async dispose(): Promise<void> {}
}

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

function hub(source = new PatternSource(), opts: VideoHubOptions = {}, params = PARAMS) {
  const h = new VideoHub(source, params, SILENT_LOGGER, {
    lingerMs: 60_000,
    encoderStartMinMs: 0,
    ...opts,
  });
  cleanup.push(() => h.dispose());
  return { h, source };
}

function spsSize(unit: AccessUnit): { width: number; height: number } {
  const sps = splitNalUnits(unit.data).find((n) => nalType(n) === NalType.sps);
  const { width, height } = parseSps(sps!);
  return { width, height };
}

const gone = async (pid: number): Promise<boolean> => waitForExit(pid, 5000);

describe('VideoHub with an ffmpeg-input source (real ffmpeg)', () => {
  it('the encoder reads the input itself: units of its size, never a frame asked for', async () => {
    const { h, source } = hub();
    const units: AccessUnit[] = [];
    h.subscribe((u) => units.push(u));
    await expect.poll(() => units.length, poll).toBeGreaterThanOrEqual(20);
    expect(units[0]!.key).toBe(true);
    expect(spsSize(units[0]!)).toEqual({ width: 96, height: 64 });
    // the GOP of the params: a key unit every 15
    expect(units.slice(0, 20).filter((u) => u.key)).toHaveLength(2);
    expect(units[15]!.key).toBe(true);
    expect(source.captureCalls).toBe(0);
    const argv = (await readProcArgv(h.encoderPid!))!.join(' ');
    expect(argv).toContain('-nostdin -re -f lavfi -i testsrc=size=96x64:rate=30 -an -sn');
    expect(argv).not.toContain('pipe:0');
    // each unit is a captured frame; nothing was dropped on the way in
    expect(h.totals()).toMatchObject({ dropped: 0 });
    expect(h.totals().frames).toBe(h.totals().units);
    await expect.poll(() => h.getStats().capturedFps, poll).toBeGreaterThan(0);
    expect(h.getStats().encoderOnline).toBe(true);
  });

  it('a raw subscriber alone gets decoded frames; the decoder stops when it leaves, the encoder after its linger', async () => {
    const { h } = hub(new PatternSource(), { lingerMs: 100 });
    const frames: RawFrame[] = [];
    const off = h.subscribeRaw((f) => frames.push(f));
    await expect.poll(() => frames.length, poll).toBeGreaterThanOrEqual(5);
    const f = frames.at(-1)!;
    expect(f).toMatchObject({ width: 96, height: 64, format: 'yuv420p' });
    expect(f.data.length).toBe(yuv420pSize(96, 64));
    expect(f.capturedAt).toBeLessThanOrEqual(performance.now());
    // a live picture: the pattern's counter changes the frames
    expect(frames.at(-1)!.data.equals(frames.at(-5)!.data)).toBe(false);
    const encoder = h.encoderPid!;
    const decoder = h.decoderPid!;
    expect(decoder).not.toBeNull();
    off();
    expect(h.decoderPid).toBeNull();
    expect(await gone(decoder)).toBe(true);
    await expect.poll(() => h.encoderPid, poll).toBeNull();
    expect(await gone(encoder)).toBe(true);
  });

  it('a late raw subscriber gets the newest picture, not the cached GOP from its start', async () => {
    const { h } = hub();
    const units: AccessUnit[] = [];
    h.subscribe((u) => units.push(u));
    // well into a GOP of 15: the cache holds several units
    await expect.poll(() => units.length >= 10 && !units.at(-1)!.key, poll).toBe(true);
    const newest = units.at(-1)!;
    const cached = units.findLast((u) => u.key)!;
    expect(newest).not.toBe(cached); // the cache has older units than the newest
    const frames: RawFrame[] = [];
    h.subscribeRaw((f) => frames.push(f));
    await expect.poll(() => frames.length, poll).toBeGreaterThanOrEqual(1);
    // decoded from the cached GOP on (its references), handed on from the newest unit on
    expect(frames[0]!.capturedAt).toBeGreaterThanOrEqual(newest.capturedAt);
  });

  it('snapshots and MJPEG work from the decoded frames', async () => {
    const { h } = hub();
    const jpeg = new JpegHub(h, SILENT_LOGGER, { warmMs: 60_000 });
    cleanup.push(() => jpeg.dispose());
    const snap = await jpeg.snapshot();
    expect(snap).not.toBeNull();
    expect(jpegSize(snap!.data)).toEqual({ width: 96, height: 64 });
    const pictures: Jpeg[] = [];
    const off = jpeg.stream((j) => pictures.push(j));
    await expect.poll(() => pictures.length, poll).toBeGreaterThanOrEqual(10);
    off();
  });

  it('an odd size is padded for x264 and cropped back for raw frames', async () => {
    const { h } = hub(new PatternSource(95, 63));
    const units: AccessUnit[] = [];
    const frames: RawFrame[] = [];
    h.subscribe((u) => units.push(u));
    h.subscribeRaw((f) => frames.push(f));
    await expect.poll(() => frames.length, poll).toBeGreaterThanOrEqual(2);
    expect(spsSize(units[0]!)).toEqual({ width: 96, height: 64 });
    expect(frames[0]).toMatchObject({ width: 95, height: 63 });
    expect(frames[0]!.data.length).toBe(yuv420pSize(95, 63));
  });

  it('a new size from the source: a new encoder (after the old one is gone) and a new decoder', async () => {
    const { h, source } = hub();
    const units: AccessUnit[] = [];
    const frames: RawFrame[] = [];
    h.subscribe((u) => units.push(u));
    h.subscribeRaw((f) => frames.push(f));
    await expect.poll(() => frames.length, poll).toBeGreaterThanOrEqual(2);
    const [encoder, decoder] = [h.encoderPid!, h.decoderPid!];
    source.set({ width: 128, height: 96 });
    await expect.poll(() => frames.at(-1)?.width, poll).toBe(128);
    expect(frames.at(-1)!.height).toBe(96);
    expect(spsSize(units.findLast((u) => u.key)!)).toEqual({ width: 128, height: 96 });
    expect(await gone(encoder)).toBe(true);
    expect(await gone(decoder)).toBe(true);
  });

  it('offline stops the encoder, online starts it again with a key frame', async () => {
    const { h, source } = hub();
    const units: AccessUnit[] = [];
    h.subscribe((u) => units.push(u));
    await expect.poll(() => units.length, poll).toBeGreaterThanOrEqual(2);
    const encoder = h.encoderPid!;
    source.set({ online: false, signal: false });
    expect(h.encoderPid).toBeNull();
    expect(await gone(encoder)).toBe(true);
    const before = units.length;
    source.set({ online: true, signal: true });
    await expect.poll(() => units.length, poll).toBeGreaterThan(before + 1);
    expect(units[before]!.key).toBe(true);
  });

  it('an input of no size starts nothing (no encoder, no decoder of 0-byte frames)', async () => {
    const said: string[] = [];
    const log = { ...SILENT_LOGGER, info: (_: object, msg = '') => void said.push(msg) };
    const h = new VideoHub(new PatternSource(0, 0), PARAMS, log, { encoderStartMinMs: 0 });
    cleanup.push(() => h.dispose());
    h.subscribe(() => undefined);
    h.subscribeRaw(() => undefined);
    // the hub decides at once, in subscribe: nothing to wait for
    expect(said).not.toContain('encoder starting');
    expect([h.encoderPid, h.decoderPid]).toEqual([null, null]);
  });

  it('leaves no ffmpeg behind on dispose', async () => {
    const { h } = hub();
    const frames: RawFrame[] = [];
    h.subscribe(() => undefined);
    h.subscribeRaw((f) => frames.push(f));
    await expect.poll(() => frames.length, poll).toBeGreaterThanOrEqual(1);
    const pids = [h.encoderPid!, h.decoderPid!];
    await h.dispose();
    for (const pid of pids) expect(await gone(pid)).toBe(true);
    expect([h.encoderPid, h.decoderPid]).toEqual([null, null]);
  });
});

describe('input command lines', () => {
  const input = {
    kind: 'ffmpeg-input' as const,
    args: ['-f', 'v4l2', '-framerate', '60', '-i', '/dev/video0'],
    width: 1280,
    height: 720,
    fps: 60,
  };
  const settings = { ...PARAMS, width: 1280, height: 720, input };

  it('the encoder reads the input, with no stdin, and drops to the hub rate above it', () => {
    const args = ffmpegArgs(settings);
    const at = args.indexOf('-c:v');
    expect(args.slice(0, at)).toEqual([
      ...['-hide_banner', '-loglevel', 'error', '-nostats', '-nostdin'],
      ...['-f', 'v4l2', '-framerate', '60', '-i', '/dev/video0', '-an', '-sn'],
      ...['-vf', 'fps=30'],
    ]);
    // what follows is the frames path's encoder, the same for both kinds
    const frames = ffmpegArgs({ ...PARAMS, width: 1280, height: 720, format: 'yuv420p' });
    expect(args.slice(at)).toEqual(frames.slice(frames.indexOf('-c:v')));
    // at or below the hub's rate every frame passes; odd sizes are padded
    expect(ffmpegArgs({ ...settings, fps: 60 })).toContain('passthrough');
    const odd = ffmpegArgs({ ...settings, width: 1279, height: 719 });
    expect(odd.slice(odd.indexOf('-vf'), odd.indexOf('-vf') + 2)).toEqual([
      '-vf',
      'fps=30,pad=1280:720',
    ]);
  });

  it('the decoder reads H.264 on stdin and writes tightly packed yuv420p', () => {
    const args = decoderArgs(95, 63);
    expect(args.slice(args.indexOf('-f'), args.indexOf('-f') + 4)).toEqual([
      '-f',
      'h264',
      '-i',
      'pipe:0',
    ]);
    expect(args).toContain('crop=95:63:0:0');
    expect(decoderArgs(96, 64)).not.toContain('-vf');
    expect(yuv420pSize(96, 64)).toBe(96 * 64 * 1.5);
    expect(yuv420pSize(95, 63)).toBe(95 * 63 + 2 * 48 * 32);
  });
});

describe('H264Encoder reading an input', () => {
  it('an ffmpeg that gives no unit for stallMs after its start is killed and restarted', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kvm-input-enc-'));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    const binary = join(dir, 'mute-ffmpeg');
    await writeFile(binary, '#!/bin/sh\nexec sleep 60\n');
    await chmod(binary, 0o755);
    const input = {
      kind: 'ffmpeg-input' as const,
      args: ['-i', 'x'],
      width: 8,
      height: 8,
      fps: 30,
    };
    const enc = new H264Encoder({ ...PARAMS, width: 8, height: 8, input }, () => 0, {
      binary,
      stallMs: 300,
      backoff: { initialMs: 20 },
    });
    cleanup.push(() => enc.stop());
    const faults: string[] = [];
    const started: number[] = [];
    enc.on('fault', (r) => faults.push(r));
    enc.on('started', (pid) => started.push(pid));
    await enc.start();
    // no frame was ever written: the input-reading ffmpeg hangs by giving nothing
    await expect.poll(() => faults.length, poll).toBeGreaterThanOrEqual(1);
    expect(faults[0]).toMatch(/no output for \d+ ms/);
    await expect.poll(() => started.length, poll).toBeGreaterThanOrEqual(2);
    expect(await gone(started[0]!)).toBe(true);
    expect(
      enc.write({ width: 8, height: 8, format: 'yuv420p', data: Buffer.alloc(96), capturedAt: 0 }),
    ).toBe('mismatch');
  });
});

import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildConfig } from '../../config';
import { SILENT_LOGGER } from '../../log';
import { NalType, nalType, parseSps, splitNalUnits } from '../../media/annexb';
import { ffmpegOnce, jpegSize } from '../../media/jpeg';
import { JpegHub } from '../../media/jpeg-hub';
import type { AccessUnit } from '../../media/types';
import { VideoHub } from '../../media/video-hub';
import { readProcArgv, waitForExit } from '../../process/supervisor';
import { createDrivers } from '../factory';
import { FileVideo, ffprobeBeside, parseProbe } from './file';
import type { VideoSourceState } from './types';

const run = promisify(execFile);
const poll = { timeout: 20_000, interval: 25 };
const PARAMS = { bitrateKbps: 300, gop: 50, fps: 30, processing: 'low_latency_first' as const };

let dir: string;
let clip: string;
const cleanup: Array<() => Promise<void>> = [];

/** A clip of ffmpeg's test pattern: `seconds` long, `size`, `rate` fps, H.264 in MP4. */
async function makeClip(name: string, size: string, rate: number, seconds = 1): Promise<string> {
  const path = join(dir, name);
  await run('ffmpeg', [
    ...['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi'],
    ...['-i', `testsrc=size=${size}:rate=${rate}`, '-t', String(seconds)],
    ...['-pix_fmt', 'yuv420p', '-c:v', 'libx264', '-preset', 'ultrafast', path],
  ]);
  return path;
}

async function fileVideo(path: string): Promise<FileVideo> {
  const v = new FileVideo({ path, log: SILENT_LOGGER });
  cleanup.push(() => v.dispose());
  await v.init();
  return v;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kvm-file-video-'));
  clip = await makeClip('clip.mp4', '160x120', 25);
});
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('FileVideo', () => {
  it('is online with a signal at the probed size, and hands ffmpeg the file to loop', async () => {
    const v = await fileVideo(clip);
    expect(v.getState()).toEqual({ online: true, signal: true, width: 160, height: 120 });
    expect(v.reason).toBeNull();
    expect(v.input()).toEqual({
      kind: 'ffmpeg-input',
      args: ['-re', '-stream_loop', '-1', '-i', `file:${clip}`],
      width: 160,
      height: 120,
      fps: 25,
    });
  });

  it('a missing file: offline with the reason, nothing thrown', async () => {
    const seen: VideoSourceState[] = [];
    const v = new FileVideo({ path: join(dir, 'nope.mp4') });
    v.onState((s) => seen.push(s));
    await expect(v.init()).resolves.toBeUndefined();
    expect(v.getState()).toEqual({ online: false, signal: false, width: 0, height: 0 });
    expect(v.reason).toMatch(/nope\.mp4: No such file or directory/);
    expect(seen).toEqual([]); // it never was online
  });

  it('no file set (video.file null): offline, says so', async () => {
    const v = new FileVideo({ path: null });
    await v.init();
    expect(v.getState().online).toBe(false);
    expect(v.reason).toBe('no video file is set (video.file)');
  });

  it('a file that is not a video, or has no picture: offline with the reason', async () => {
    const text = join(dir, 'notes.txt');
    await writeFile(text, 'not a video at all\n');
    const notVideo = await fileVideo(text);
    expect(notVideo.getState().online).toBe(false);
    expect(notVideo.reason).toMatch(/Invalid data/);

    const sound = join(dir, 'tone.wav');
    await run('ffmpeg', [
      ...['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi'],
      ...['-i', 'sine=frequency=440:duration=0.2', sound],
    ]);
    const noPicture = await fileVideo(sound);
    expect(noPicture.getState().online).toBe(false);
    expect(noPicture.reason).toBe('the file has no video stream');
  });

  it('a name ffmpeg would take for a protocol is a file name', async () => {
    const v = await fileVideo(join(dir, 'concat:clip.mp4|clip.mp4'));
    expect(v.getState().online).toBe(false);
    expect(v.reason).toMatch(/No such file/);
  });

  it('video.type file in the config builds it from video.file', async () => {
    const paths = { dataDir: '/nonexistent/data', webDir: '/nonexistent/web', keymapsDirs: [] };
    const config = buildConfig({ target: 'testbed', video: { type: 'file', file: clip } }, paths);
    const drivers = await createDrivers(config, SILENT_LOGGER);
    cleanup.push(() => drivers.dispose());
    expect(drivers.video).toBeInstanceOf(FileVideo);
    await drivers.video.init();
    expect(drivers.video.getState()).toMatchObject({ online: true, width: 160, height: 120 });
  });

  it('reads ffprobe answers and finds ffprobe beside ffmpeg', () => {
    expect(
      parseProbe('{"streams":[{"width":8,"height":6,"avg_frame_rate":"30000/1001"}]}'),
    ).toEqual({ width: 8, height: 6, fps: 29.97 });
    expect(parseProbe('{"streams":[{"width":8,"height":6,"avg_frame_rate":"0/0"}]}')).toEqual({
      width: 8,
      height: 6,
      fps: 30,
    });
    expect(parseProbe('{"streams":[]}')).toBe('the file has no video stream');
    expect(parseProbe('{"streams":[{"width":0,"height":6}]}')).toBe(
      'the video stream has no picture size',
    );
    expect(parseProbe('garbage')).toMatch(/not JSON/);
    expect(ffprobeBeside('ffmpeg')).toBe('ffprobe');
    expect(ffprobeBeside('/opt/ff/bin/ffmpeg')).toBe('/opt/ff/bin/ffprobe');
    expect(ffprobeBeside('/usr/bin/ffmpeg-6')).toBe('/usr/bin/ffprobe-6');
    expect(ffprobeBeside('/usr/local/bin/avconv')).toBe('ffprobe');
  });
});

describe('FileVideo in the video hub (real ffmpeg)', () => {
  async function hubOf(path: string, snapshotTimeoutMs = 10_000) {
    const source = await fileVideo(path);
    const hub = new VideoHub(source, PARAMS, SILENT_LOGGER, {
      lingerMs: 60_000,
      encoderStartMinMs: 0,
    });
    const jpeg = new JpegHub(hub, SILENT_LOGGER, { warmMs: 60_000, snapshotTimeoutMs });
    cleanup.push(async () => {
      await jpeg.dispose();
      await hub.dispose();
    });
    return { source, hub, jpeg };
  }

  it('streams H.264 of the probed size, gives a key frame on demand and a snapshot, leaves no ffmpeg', async () => {
    const { hub, jpeg } = await hubOf(clip);
    const units: AccessUnit[] = [];
    hub.subscribe((u) => units.push(u));
    await expect.poll(() => units.length, poll).toBeGreaterThanOrEqual(10);

    const got = units.slice();
    // real access units: a key unit first, with an SPS of the file's size
    expect(got[0]!.key).toBe(true);
    const sps = splitNalUnits(got[0]!.data).find((n) => nalType(n) === NalType.sps);
    expect(parseSps(sps!)).toMatchObject({ width: 160, height: 120 });
    // ...that a decoder takes: every unit so far, as one stream
    const decoded = await ffmpegOnce(
      'ffmpeg',
      ['-f', 'h264', '-i', 'pipe:0', '-f', 'framemd5', 'pipe:1'],
      Buffer.concat(got.map((u) => u.data)),
    );
    expect(decoded.toString().match(/^0,/gm)?.length).toBe(got.length);
    const first = hub.encoderPid!;
    expect((await readProcArgv(first))?.join(' ')).toContain(`-stream_loop -1 -i file:${clip}`);
    expect(hub.totals().frames).toBe(hub.totals().units); // ffmpeg captured: a unit is a frame

    // a key frame on demand: a new encoder, which begins with one
    const before = units.length;
    hub.requestKeyFrame();
    await expect.poll(() => units.slice(before).some((u) => u.key), poll).toBe(true);
    const second = hub.encoderPid!;
    expect(second).not.toBe(first);
    expect(await waitForExit(first, 5000)).toBe(true);

    // a snapshot: decoded from the hub's H.264, a JPEG of the file's size
    const snap = await jpeg.snapshot();
    expect(snap).not.toBeNull();
    expect(jpegSize(snap!.data)).toEqual({ width: 160, height: 120 });
    const gray = await ffmpegOnce(
      'ffmpeg',
      [
        '-f',
        'image2pipe',
        '-c:v',
        'mjpeg',
        '-i',
        'pipe:0',
        '-f',
        'rawvideo',
        '-pix_fmt',
        'gray',
        'pipe:1',
      ],
      snap!.data,
    );
    expect(gray.length).toBe(160 * 120);
    // the test pattern, not a flat picture
    expect(new Set(gray).size).toBeGreaterThan(16);
    const decoder = hub.decoderPid!;
    const jpegEncoder = jpeg.encoderPid!;
    expect(decoder).not.toBeNull();

    await jpeg.dispose();
    await hub.dispose();
    for (const pid of [second, decoder, jpegEncoder])
      expect(await waitForExit(pid, 5000)).toBe(true);
    expect(hub.encoderPid).toBeNull();
    expect(hub.decoderPid).toBeNull();
  });

  it('an unplayable file: no encoder, a snapshot gets nothing, no crash', async () => {
    const { hub, jpeg } = await hubOf(join(dir, 'gone.mp4'), 300);
    hub.subscribe(() => undefined);
    expect(hub.encoderPid).toBeNull();
    expect(await jpeg.snapshot()).toBeNull();
    expect(hub.encoderPid).toBeNull();
    expect(hub.decoderPid).toBeNull();
  });
});

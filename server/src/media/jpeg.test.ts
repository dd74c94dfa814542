import { afterEach, describe, expect, it, vi } from 'vitest';
import { SILENT_LOGGER } from '../log';
import type { RawFrame, VideoSource, VideoSourceState } from '../drivers/video/types';
import { readProcArgv } from '../process/supervisor';
import {
  JpegSplitter,
  jpegArgs,
  jpegSize,
  makePreview,
  placeholderPixels,
  previewBox,
  qscaleOf,
  type Jpeg,
} from './jpeg';
import { JpegHub } from './jpeg-hub';
import { VideoHub } from './video-hub';

const poll = { timeout: 10_000, interval: 20 };

/** A minimal JPEG-shaped byte string: SOI, one segment, a scan with stuffing and RST, EOI. */
function fakeJpeg(fill: number): Buffer {
  return Buffer.from([
    0xff,
    0xd8,
    0xff,
    0xe0,
    0x00,
    0x04,
    0xff,
    0xd9, // APP0 whose payload holds FF D9
    0xff,
    0xda,
    0x00,
    0x02,
    fill,
    0xff,
    0x00,
    0xff,
    0xd3,
    fill,
    0xff,
    0xd9,
  ]);
}

describe('JpegSplitter', () => {
  it('cuts pictures back to back, whole or fed byte by byte', () => {
    const stream = Buffer.concat([fakeJpeg(1), fakeJpeg(2), fakeJpeg(3)]);
    const whole: Buffer[] = [];
    new JpegSplitter((j) => whole.push(j)).push(stream);
    expect(whole).toEqual([fakeJpeg(1), fakeJpeg(2), fakeJpeg(3)]);
    const bytes: Buffer[] = [];
    const s = new JpegSplitter((j) => bytes.push(j));
    for (const b of stream) s.push(Buffer.from([b]));
    expect(bytes).toEqual(whole);
  });

  it('refuses output that is not JPEG', () => {
    expect(() => new JpegSplitter(() => undefined).push(Buffer.from('FLV\x01'))).toThrow();
  });
});

describe('JPEG helpers', () => {
  it("maps kvmd's quality to qscale and builds the command line", () => {
    expect(qscaleOf(100)).toBe(2);
    expect(qscaleOf(80)).toBe(6);
    expect(qscaleOf(1)).toBe(22);
    const args = jpegArgs({ width: 1280, height: 720, format: 'bgr0', quality: 80 });
    expect(args).toEqual(expect.arrayContaining(['-pix_fmt', 'bgr0', '-s', '1280x720']));
    expect(args.slice(-4)).toEqual(['image2pipe', '-flush_packets', '1', 'pipe:1']);
  });

  it("sizes kvmd's preview box", () => {
    expect(previewBox(1280, 720, 0, 0)).toEqual({ width: 256, height: 144 });
    expect(previewBox(1280, 720, 640, 0)).toEqual({ width: 640, height: 720 });
    expect(previewBox(1280, 720, 5000, 5000)).toBeNull();
  });
});

/** A source that renders a counter into the luma plane at the asked rate. */
class TickSource implements VideoSource {
  readonly name = 'tick';
  private timer: NodeJS.Timeout | null = null;
  starts = 0;
  constructor(
    readonly width = 320,
    readonly height = 240,
  ) {}
  getState(): VideoSourceState {
    return { online: true, signal: true, width: this.width, height: this.height };
  }
  onState(): () => void {
    return () => undefined;
  }
  async startCapture(onFrame: (f: RawFrame) => void): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.starts += 1;
    let n = 0;
    this.timer = setInterval(() => {
      n += 1;
      const data = Buffer.alloc((this.width * this.height * 3) / 2, 128);
      data.fill(n * 16, 0, this.width * 8);
      onFrame({
        width: this.width,
        height: this.height,
        format: 'yuv420p',
        data,
        capturedAt: performance.now(),
      });
    }, 20);
  }
  async stopCapture(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
  get capturing(): boolean {
    return this.timer !== null;
  }
  async init(): Promise<void> {}
  async dispose(): Promise<void> {
    await this.stopCapture();
  }
}

const params = { bitrateKbps: 200, gop: 10, fps: 30, processing: 'low_latency_first' as const };
let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

function setup(warmMs = 300) {
  const source = new TickSource();
  const video = new VideoHub(source, params, SILENT_LOGGER, { lingerMs: 100 });
  const jpeg = new JpegHub(video, SILENT_LOGGER, { warmMs });
  cleanup.push(async () => {
    await jpeg.dispose();
    await video.dispose();
  });
  return { source, video, jpeg };
}

describe('JpegHub (real ffmpeg)', () => {
  it('takes a snapshot with nobody watching, then stops capture and ffmpeg', async () => {
    const { source, video, jpeg } = setup();
    const snap = await jpeg.snapshot();
    expect(snap).not.toBeNull();
    expect(jpegSize(snap!.data)).toEqual({ width: 320, height: 240 });
    expect(video.encoderPid).toBeNull(); // no H.264 for a snapshot
    const pid = jpeg.encoderPid!;
    expect(pid).toBeGreaterThan(0);
    await vi.waitFor(() => expect(source.capturing).toBe(false), poll);
    await vi.waitFor(async () => expect(await readProcArgv(pid)).toBeNull(), poll);
    expect(jpeg.encoderPid).toBeNull();
  });

  it('never encodes every frame for snapshots alone', async () => {
    const { jpeg } = setup(2_000);
    let encoded = 0;
    jpeg.on('jpeg', () => (encoded += 1));
    await jpeg.snapshot();
    await new Promise((r) => setTimeout(r, 300)); // ~15 frames go by
    expect(encoded).toBe(1);
    const second = await jpeg.snapshot();
    expect(second).not.toBeNull();
    expect(encoded).toBe(2);
  });

  it('streams every frame while a client watches, and stops when it leaves', async () => {
    const { source, jpeg } = setup(100);
    const got: Jpeg[] = [];
    const off = jpeg.stream((j) => got.push(j));
    await vi.waitFor(() => expect(got.length).toBeGreaterThanOrEqual(10), poll);
    expect(new Set(got.map((j) => j.data.toString('base64'))).size).toBeGreaterThan(1);
    off();
    await vi.waitFor(() => expect(source.capturing).toBe(false), poll);
  });

  it('makes a scaled preview', async () => {
    const { jpeg } = setup();
    const snap = await jpeg.snapshot();
    const small = await makePreview('ffmpeg', snap!.data, { width: 64, height: 64 }, 50);
    expect(jpegSize(small)).toEqual({ width: 64, height: 48 });
    const black = await jpeg.placeholderJpeg(100, 50);
    expect(jpegSize(black)).toEqual({ width: 100, height: 50 });
  });

  it("draws ustreamer's offline text, centred, white on black", () => {
    const w = 640;
    const h = 360;
    const px = placeholderPixels(w, h);
    const lit = (y0: number, y1: number) => {
      let n = 0;
      for (let y = y0; y < y1; y += 1)
        for (let x = 0; x < w; x += 1) n += px[y * w + x]! > 0 ? 1 : 0;
      return n;
    };
    // the text in the middle band, nothing at the top or bottom
    expect(lit(h / 2 - 20, h / 2 + 20)).toBeGreaterThan(500);
    expect(lit(0, h / 4)).toBe(0);
    expect(lit((3 * h) / 4, h)).toBe(0);
    // a tiny picture still works
    expect(placeholderPixels(8, 4).length).toBe(32);
  });
});

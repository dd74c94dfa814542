/**
 * The JPEG path: raw frames of the video hub -> JPEG pictures, for kvmd's snapshot
 * (`/api/streamer/snapshot`) and ustreamer's HTTP surface (`/streamer/stream` MJPEG,
 * `/streamer/snapshot`). One long-lived ffmpeg (`-c:v mjpeg -f image2pipe`) under the
 * Supervisor, like the H.264 encoder, started on demand and stopped when unused:
 * - while MJPEG clients watch, every frame the source delivers is encoded (dropped while the
 *   encoder is behind), and each JPEG goes to every client;
 * - for snapshots alone, the hub's frames are only kept (the newest one): a snapshot encodes
 *   that one frame, so a client polling snapshots never makes the server encode 30 a second.
 *   Capture and ffmpeg stay warm for `warmMs` after the last snapshot (a poller's next one
 *   costs one encode, about 10 ms at 720p) and then stop.
 */
import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { glyph, GLYPH_H, GLYPH_W } from '../graphics/font';
import { rawInputArgs } from './encoder';
import type { PixelFormat, RawFrame } from '../drivers/video/types';
import { Supervisor, type BackoffOptions } from '../process/supervisor';

/** One encoded picture and its timings (ustreamer's X-UStreamer-* headers). */
export interface Jpeg {
  data: Buffer;
  width: number;
  height: number;
  /** false for the "no live video" placeholder */
  online: boolean;
  /** capture time of the frame, performance.now() ms */
  capturedAt: number;
  /** when the frame went into ffmpeg and when its JPEG came out, performance.now() ms */
  encodeBeginAt: number;
  encodeEndAt: number;
}

export interface JpegSettings {
  width: number;
  height: number;
  format: PixelFormat;
  /** kvmd's JPEG quality, 1..100 */
  quality: number;
}

/** kvmd's quality 1..100 (PIL/libjpeg scale) to ffmpeg's mjpeg qscale 2..31. */
export function qscaleOf(quality: number): number {
  const q = Math.round((100 - Math.max(1, Math.min(100, quality))) / 5) + 2;
  return Math.max(2, Math.min(31, q));
}

/** The long-lived encoder's command line (pure, unit-tested). */
export function jpegArgs(s: JpegSettings): string[] {
  return [
    // the rate is nominal: every frame passes through as it comes
    ...rawInputArgs(s.format, s.width, s.height, 30),
    '-c:v',
    'mjpeg',
    // frame threads hold a picture back until later frames come in: a lone snapshot frame
    // would never come out
    '-threads',
    '1',
    // full-range 4:2:0, what every JPEG decoder expects
    '-pix_fmt',
    'yuvj420p',
    '-q:v',
    String(qscaleOf(s.quality)),
    '-f',
    'image2pipe',
    '-flush_packets',
    '1',
    'pipe:1',
  ];
}

/** A JPEG larger than this in ffmpeg's output is a broken stream (8K at q2 is ~20 MB). */
export const MAX_JPEG_BYTES = 48 * 1024 * 1024;

/**
 * Cuts ffmpeg's image2pipe output (JPEGs back to back) into pictures by walking the markers:
 * segment lengths up to the scan, then the entropy-coded data to the next marker that is not
 * a stuffed 0xFF00 or a restart marker, up to EOI.
 */
export class JpegSplitter {
  private buf: Buffer = Buffer.alloc(0);
  /** where the walk resumes: the next marker, or inside scan data */
  private pos = 0;
  private inScan = false;

  constructor(private readonly onJpeg: (jpeg: Buffer) => void) {}

  push(chunk: Buffer): void {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    if (this.buf.length > MAX_JPEG_BYTES) throw new Error('JPEG too large');
    for (;;) {
      const end = this.walk();
      if (end < 0) return;
      const jpeg = this.buf.subarray(0, end);
      this.buf = this.buf.subarray(end);
      this.pos = 0;
      this.inScan = false;
      this.onJpeg(Buffer.from(jpeg));
    }
  }

  /** The end offset of the first complete JPEG, or -1 when more data is needed. */
  private walk(): number {
    const b = this.buf;
    if (this.pos === 0) {
      if (b.length < 2) return -1;
      if (b[0] !== 0xff || b[1] !== 0xd8) throw new Error('not a JPEG');
      this.pos = 2;
    }
    for (;;) {
      if (this.inScan) {
        let i = this.pos;
        for (; i + 1 < b.length; i++) {
          if (b[i] !== 0xff) continue;
          const m = b[i + 1]!;
          if (m === 0x00 || (m >= 0xd0 && m <= 0xd7) || m === 0xff) continue;
          break;
        }
        if (i + 1 >= b.length) {
          this.pos = i;
          return -1;
        }
        this.pos = i;
        this.inScan = false;
      }
      const p = this.pos;
      if (p + 2 > b.length) return -1;
      if (b[p] !== 0xff) throw new Error('bad JPEG marker');
      const m = b[p + 1]!;
      if (m === 0xff) {
        this.pos = p + 1; // fill byte
        continue;
      }
      if (m === 0xd9) return p + 2;
      if ((m >= 0xd0 && m <= 0xd7) || m === 0x01 || m === 0xd8) {
        this.pos = p + 2;
        continue;
      }
      if (p + 4 > b.length) return -1;
      const len = b.readUInt16BE(p + 2);
      if (p + 2 + len > b.length) return -1;
      this.pos = p + 2 + len;
      if (m === 0xda) this.inScan = true;
    }
  }
}

export type JpegWriteResult = 'written' | 'busy' | 'offline' | 'mismatch';

/** Frames in ffmpeg at once; more are dropped (the newest one wins at the next write). */
const JPEG_MAX_IN_FLIGHT = 2;

export interface JpegEncoderOptions {
  binary?: string;
  backoff?: BackoffOptions;
  stopTimeoutMs?: number;
}

/** One ffmpeg/mjpeg for one size, format and quality. */
export class JpegEncoder extends EventEmitter<{ jpeg: [Jpeg]; started: []; exited: [] }> {
  private readonly supervisor: Supervisor;
  private splitter: JpegSplitter | null = null;
  private inFlight: Array<{ capturedAt: number; writtenAt: number }> = [];

  constructor(
    readonly settings: JpegSettings,
    opts: JpegEncoderOptions = {},
  ) {
    super();
    this.supervisor = new Supervisor({
      name: 'ffmpeg-jpeg',
      command: opts.binary ?? 'ffmpeg',
      args: jpegArgs(settings),
      stdin: 'pipe',
      stdout: 'data',
      stopTimeoutMs: opts.stopTimeoutMs ?? 2000,
      backoff: { initialMs: 500, maxMs: 10_000, healthyMs: 10_000, ...opts.backoff },
      retryFirstSpawn: true,
      keepLines: 20,
    });
    this.supervisor.on('started', () => {
      this.inFlight = [];
      this.splitter = new JpegSplitter((data) => this.onJpeg(data));
      this.emit('started');
    });
    this.supervisor.on('data', (chunk) => {
      try {
        this.splitter?.push(chunk);
      } catch {
        this.splitter = null;
        this.supervisor.kill('SIGKILL');
      }
    });
    this.supervisor.on('exited', () => {
      this.inFlight = [];
      this.splitter = null;
      this.emit('exited');
    });
  }

  get running(): boolean {
    return this.supervisor.state === 'running' && this.splitter !== null;
  }

  get pid(): number | null {
    return this.supervisor.pid;
  }

  get framesInFlight(): number {
    return this.inFlight.length;
  }

  recentOutput(): string[] {
    return this.supervisor.recentOutput();
  }

  async start(): Promise<void> {
    await this.supervisor.ensureStarted();
  }

  /** Hands a frame to ffmpeg; the caller keeps ownership (the pipe's callback releases). */
  write(frame: RawFrame, release?: () => void): JpegWriteResult {
    const s = this.settings;
    if (frame.width !== s.width || frame.height !== s.height || frame.format !== s.format)
      return 'mismatch';
    const stdin = this.supervisor.stdin;
    if (!stdin || !this.running) return 'offline';
    if (this.inFlight.length >= JPEG_MAX_IN_FLIGHT) return 'busy';
    this.inFlight.push({ capturedAt: frame.capturedAt, writtenAt: performance.now() });
    stdin.write(frame.data, release);
    return 'written';
  }

  async stop(): Promise<void> {
    this.supervisor.stdin?.destroy();
    await this.supervisor.ensureStopped();
  }

  private onJpeg(data: Buffer): void {
    const f = this.inFlight.shift();
    const now = performance.now();
    this.emit('jpeg', {
      data,
      width: this.settings.width,
      height: this.settings.height,
      online: true,
      capturedAt: f?.capturedAt ?? now,
      encodeBeginAt: f?.writtenAt ?? now,
      encodeEndAt: now,
    });
  }
}

/**
 * Runs one short ffmpeg with `input` on stdin and returns its stdout (previews, the
 * placeholder): argument arrays only, a time limit and an output cap.
 */
export function ffmpegOnce(
  binary: string,
  args: string[],
  input: Buffer,
  timeoutMs = 10_000,
  maxOut = MAX_JPEG_BYTES,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, ['-hide_banner', '-loglevel', 'error', '-nostats', ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    let size = 0;
    let err = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stdout.on('data', (c: Buffer) => {
      size += c.length;
      if (size > maxOut) child.kill('SIGKILL');
      else out.push(c);
    });
    child.stderr.on('data', (c: Buffer) => {
      if (err.length < 2000) err += c.toString();
    });
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      if (code === 0 && size > 0 && size <= maxOut) resolve(Buffer.concat(out));
      else reject(new Error(`ffmpeg failed (${code ?? 'killed'}): ${err.trim().slice(-300)}`));
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(input);
  });
}

/**
 * kvmd's preview box (StreamerSnapshot.make_preview): both 0 means a fifth of each side;
 * otherwise each side is capped by the picture's own (0: not limited). null: the box holds the
 * whole picture, the snapshot itself is the preview.
 */
export function previewBox(
  width: number,
  height: number,
  maxWidth: number,
  maxHeight: number,
): { width: number; height: number } | null {
  let w: number;
  let h: number;
  if (maxWidth === 0 && maxHeight === 0) {
    w = Math.floor(width / 5);
    h = Math.floor(height / 5);
  } else {
    w = Math.min(maxWidth || width, width);
    h = Math.min(maxHeight || height, height);
  }
  if (w === width && h === height) return null;
  return { width: Math.max(1, w), height: Math.max(1, h) };
}

/** A scaled copy of a JPEG inside the box, aspect kept (PIL's thumbnail). */
export function makePreview(
  binary: string,
  jpeg: Buffer,
  box: { width: number; height: number },
  quality: number,
): Promise<Buffer> {
  return ffmpegOnce(
    binary,
    [
      '-f',
      'image2pipe',
      '-c:v',
      'mjpeg',
      '-i',
      'pipe:0',
      '-vf',
      `scale=w=${box.width}:h=${box.height}:force_original_aspect_ratio=decrease:force_divisible_by=1`,
      '-frames:v',
      '1',
      '-c:v',
      'mjpeg',
      '-pix_fmt',
      'yuvj420p',
      '-q:v',
      String(qscaleOf(quality)),
      '-f',
      'image2pipe',
      'pipe:1',
    ],
    jpeg,
  );
}

/** A black picture of the given size: ustreamer's "no live video" frame, without the text. */
/** ustreamer's offline picture says so; ours in the testbed's 5x7 font, centred, white on black. */
export const PLACEHOLDER_TEXT = 'NO LIVE VIDEO';

/** The placeholder's gray pixels: PLACEHOLDER_TEXT scaled to about a third of the width. */
export function placeholderPixels(width: number, height: number): Buffer {
  const pixels = Buffer.alloc(width * height);
  const cellW = GLYPH_W + 1;
  const textW = PLACEHOLDER_TEXT.length * cellW - 1;
  const scale = Math.max(
    1,
    Math.min(Math.floor(width / 3 / textW), Math.floor(height / 4 / GLYPH_H)),
  );
  const x0 = Math.floor((width - textW * scale) / 2);
  const y0 = Math.floor((height - GLYPH_H * scale) / 2);
  [...PLACEHOLDER_TEXT].forEach((ch, i) => {
    glyph(ch).forEach((bits, row) => {
      for (let col = 0; col < GLYPH_W; col += 1) {
        if (!(bits & (1 << (GLYPH_W - 1 - col)))) continue;
        for (let dy = 0; dy < scale; dy += 1) {
          const y = y0 + row * scale + dy;
          if (y < 0 || y >= height) continue;
          const x = x0 + (i * cellW + col) * scale;
          if (x < 0 || x + scale > width) continue;
          pixels.fill(255, y * width + x, y * width + x + scale);
        }
      }
    });
  });
  return pixels;
}

export function makePlaceholder(binary: string, width: number, height: number): Promise<Buffer> {
  return ffmpegOnce(
    binary,
    [
      '-f',
      'rawvideo',
      '-pix_fmt',
      'gray',
      '-s',
      `${width}x${height}`,
      '-i',
      'pipe:0',
      '-frames:v',
      '1',
      '-c:v',
      'mjpeg',
      '-pix_fmt',
      'yuvj420p',
      '-f',
      'image2pipe',
      'pipe:1',
    ],
    placeholderPixels(width, height),
  );
}

/** The width and height in a JPEG's frame header (SOF0-SOF3), or null when there is none. */
export function jpegSize(data: Buffer): { width: number; height: number } | null {
  if (data.length < 4 || data[0] !== 0xff || data[1] !== 0xd8) return null;
  let p = 2;
  while (p + 4 <= data.length) {
    if (data[p] !== 0xff) return null;
    const m = data[p + 1]!;
    if (m === 0xff) {
      p += 1;
      continue;
    }
    const len = data.readUInt16BE(p + 2);
    if (m >= 0xc0 && m <= 0xc3 && p + 9 <= data.length) {
      return { height: data.readUInt16BE(p + 5), width: data.readUInt16BE(p + 7) };
    }
    if (m === 0xda) return null;
    p += 2 + len;
  }
  return null;
}

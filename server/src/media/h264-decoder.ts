/**
 * Raw frames of an `ffmpeg-input` source (a device or a file the encoder's ffmpeg reads itself)
 * for the hub's raw subscribers: the JPEG path (snapshots, MJPEG) and the OCR. The picture never
 * passes through this process, and a capture device has one reader, so the hub decodes its own
 * H.264: one ffmpeg (`-f h264 -i pipe:0 ... -f rawvideo -pix_fmt yuv420p pipe:1`) under the
 * Supervisor, like the encoders, running while a raw subscriber is there.
 *
 * - A decoder starts at a key unit: everything before the first one is not written.
 * - Each unit is followed by an access unit delimiter, so ffmpeg's H.264 parser sees the unit
 *   end at once (a raw Annex B stream shows it only when the next unit starts, a frame later);
 *   one thread and `low_delay`, so every unit comes out as one frame, in order: the capture
 *   times of the units in flight are a FIFO the frames take theirs from.
 * - At most DECODER_MAX_IN_FLIGHT live units are in ffmpeg; past that a unit is not taken
 *   ('busy') and the decoder waits for the next key unit (a unit cannot be skipped alone).
 *   Units written with `deliver: false` (the GOP cache's older units, which a new decoder
 *   needs as references) are decoded and their frames dropped, so a subscriber never gets a
 *   picture older than the newest one there was.
 * - An ffmpeg that hangs (units in, no frame out for `stallMs`) or dies is replaced with backoff.
 */
import { EventEmitter } from 'node:events';
import type { RawFrame } from '../drivers/video/types';
import { Supervisor, type BackoffOptions } from '../process/supervisor';
import type { AccessUnit } from './types';

/** An access unit delimiter (NAL type 9, any slice types). */
const AUD = Buffer.from([0, 0, 0, 1, 0x09, 0xf0]);

/** Live units in ffmpeg at once: far above one decode (ms), far below a visible delay. */
export const DECODER_MAX_IN_FLIGHT = 8;
const DECODER_STALL_MS = 5_000;

/** Bytes of one tightly packed yuv420p frame (odd sizes round the chroma planes up). */
export function yuv420pSize(width: number, height: number): number {
  return width * height + 2 * Math.ceil(width / 2) * Math.ceil(height / 2);
}

/** The decoder's command line (pure, unit-tested); odd sizes are cropped back from the pad. */
export function decoderArgs(width: number, height: number): string[] {
  const crop = width % 2 || height % 2 ? ['-vf', `crop=${width}:${height}:0:0`] : [];
  return [
    '-hide_banner',
    '-loglevel',
    'error',
    '-nostats',
    '-threads',
    '1',
    '-flags',
    'low_delay',
    // start decoding at once: the stream's size is in the first unit's SPS
    '-probesize',
    '32',
    '-analyzeduration',
    '0',
    '-f',
    'h264',
    '-i',
    'pipe:0',
    '-an',
    '-sn',
    '-fps_mode',
    'passthrough',
    ...crop,
    '-f',
    'rawvideo',
    '-pix_fmt',
    'yuv420p',
    'pipe:1',
  ];
}

export type DecoderWriteResult =
  /** in ffmpeg; its frame will follow */
  | 'written'
  /** not taken: DECODER_MAX_IN_FLIGHT units are in ffmpeg (the decoder now waits for a key) */
  | 'busy'
  /** not taken: no ffmpeg runs right now, or the unit is not a key unit and one is awaited */
  | 'offline';

export interface DecoderOptions {
  binary?: string;
  backoff?: BackoffOptions;
  stopTimeoutMs?: number;
  stallMs?: number;
}

export class H264Decoder extends EventEmitter<{ frame: [RawFrame]; started: [] }> {
  private readonly supervisor: Supervisor;
  private readonly frameBytes: number;
  private readonly stallMs: number;
  private inFlight: Array<{ capturedAt: number; writtenAt: number; deliver: boolean }> = [];
  private live = 0;
  private needKey = true;
  /** The frame being read from stdout and how much of it is there. */
  private pending: Buffer;
  private filled = 0;
  private stallTimer: NodeJS.Timeout | null = null;

  constructor(
    readonly width: number,
    readonly height: number,
    opts: DecoderOptions = {},
  ) {
    super();
    this.frameBytes = yuv420pSize(width, height);
    this.pending = Buffer.allocUnsafe(this.frameBytes);
    this.stallMs = opts.stallMs ?? DECODER_STALL_MS;
    this.supervisor = new Supervisor({
      name: 'ffmpeg-decoder',
      command: opts.binary ?? 'ffmpeg',
      args: decoderArgs(width, height),
      stdin: 'pipe',
      stdout: 'data',
      stopTimeoutMs: opts.stopTimeoutMs ?? 2000,
      backoff: { initialMs: 500, maxMs: 10_000, healthyMs: 10_000, ...opts.backoff },
      retryFirstSpawn: true,
      keepLines: 20,
    });
    this.supervisor.on('started', () => {
      this.reset();
      this.emit('started');
    });
    this.supervisor.on('data', (chunk) => this.onData(chunk));
    this.supervisor.on('exited', () => this.reset());
  }

  get running(): boolean {
    return this.supervisor.state === 'running';
  }

  get pid(): number | null {
    return this.supervisor.pid;
  }

  /** The decoder takes only a key unit next (just started, or it fell behind). */
  get waitingForKey(): boolean {
    return this.needKey;
  }

  async start(): Promise<void> {
    if (!this.stallTimer) {
      this.stallTimer = setInterval(() => this.checkStall(), Math.min(1000, this.stallMs / 2));
      this.stallTimer.unref();
    }
    await this.supervisor.ensureStarted();
  }

  /**
   * Hands a unit to ffmpeg. `deliver: false`: decode it (a reference for the next ones) but
   * drop its frame; such units do not count against the in-flight bound.
   */
  write(unit: AccessUnit, deliver = true): DecoderWriteResult {
    const stdin = this.supervisor.stdin;
    if (!stdin || !this.running) return 'offline';
    if (this.needKey && !unit.key) return 'offline';
    if (deliver && this.live >= DECODER_MAX_IN_FLIGHT) {
      this.needKey = true;
      return 'busy';
    }
    this.needKey = false;
    this.inFlight.push({ capturedAt: unit.capturedAt, writtenAt: performance.now(), deliver });
    if (deliver) this.live += 1;
    stdin.write(unit.data);
    stdin.write(AUD);
    return 'written';
  }

  async stop(): Promise<void> {
    if (this.stallTimer) clearInterval(this.stallTimer);
    this.stallTimer = null;
    this.supervisor.stdin?.destroy();
    await this.supervisor.ensureStopped();
  }

  private reset(): void {
    this.inFlight = [];
    this.live = 0;
    this.needKey = true;
    this.filled = 0;
  }

  private onData(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      const n = Math.min(chunk.length - at, this.frameBytes - this.filled);
      chunk.copy(this.pending, this.filled, at, at + n);
      this.filled += n;
      at += n;
      if (this.filled < this.frameBytes) return;
      this.filled = 0;
      const unit = this.inFlight.shift();
      if (unit && !unit.deliver) continue; // its buffer is the next frame's
      if (unit) this.live -= 1;
      const data = this.pending;
      this.pending = Buffer.allocUnsafe(this.frameBytes);
      this.emit('frame', {
        width: this.width,
        height: this.height,
        format: 'yuv420p',
        data,
        capturedAt: unit?.capturedAt ?? performance.now(),
      });
    }
  }

  private checkStall(): void {
    const oldest = this.inFlight[0];
    if (!oldest || !this.running) return;
    if (performance.now() - oldest.writtenAt > this.stallMs) this.supervisor.kill('SIGKILL');
  }
}

/**
 * One ffmpeg/libx264 encoder: raw frames in on stdin (a `frames` source), or the source's own
 * input read by ffmpeg (an `ffmpeg-input` source: a device, a file), H.264 access units out
 * (FLV-framed on stdout, see flv-reader.ts). Constrained Baseline, zerolatency (no B-frames, no lookahead),
 * so every frame written comes back as one access unit, in order: the capture times of the
 * frames in flight are a FIFO the units take theirs from.
 *
 * The process runs under the Supervisor (process/supervisor.ts) like QEMU: one backoff
 * policy, idempotent start/stop, setpriv's parent-death signal and the exit hook, so no
 * ffmpeg outlives the server. An ffmpeg that dies, hangs (frames in, nothing out for
 * `stallMs`) or writes something that is not FLV is killed and restarted with backoff.
 */
import { EventEmitter } from 'node:events';
import type { VideoProcessing } from '@kvm/protocol';
import type { FfmpegInput, PixelFormat, RawFrame } from '../drivers/video/types';
import { Supervisor, type BackoffOptions, type ExitInfo } from '../process/supervisor';
import { FlvReader } from './flv-reader';
import { x265OutputArgs } from './hevc-encoder';
import { NutReader } from './hevc-nut-reader';
import { bitrateArgs, keyframeParams, presetArgs } from './rate-control';
import { traceStage } from '../process/stage-trace';
import type { AccessUnit } from './types';

interface EncodingSettings {
  width: number;
  height: number;
  fps: number;
  bitrateKbps: number;
  /** Frames between key frames; 0 = only the first. */
  gop: number;
  processing: VideoProcessing;
  /** Output codec: H.264 (FLV out) unless 'h265' (libx265, NUT out: hevc-encoder.ts). */
  codec?: 'h264' | 'h265';
}

/** Raw frames of `format` on stdin. */
export interface FrameEncoderSettings extends EncodingSettings {
  format: PixelFormat;
  input?: never;
}

/** ffmpeg reads the source's input itself (`width`/`height`/`fps` are the input's). */
export interface InputEncoderSettings extends EncodingSettings {
  input: FfmpegInput;
  format?: never;
}

export type EncoderSettings = FrameEncoderSettings | InputEncoderSettings;

/**
 * Frames written but not yet out of the encoder above which new frames are dropped rather
 * than queued: about 150 ms worth (at least 4), so a busy moment of the machine costs no frame
 * while a slow encoder never builds up latency.
 */
export function maxInFlight(fps: number): number {
  return Math.max(4, Math.round(fps * 0.15));
}

/**
 * Bytes of frames in flight above which a new frame is dropped too (one frame always goes):
 * the frame count alone would let a guest's huge mode (8K BGRX is 130 MB a frame) queue
 * gigabytes in stdin. 64 MiB holds 8 frames of 1080p BGRX.
 */
export const MAX_IN_FLIGHT_BYTES = 64 * 1024 * 1024;

/**
 * ffmpeg's input side for raw frames on stdin, shared by the H.264 encoder and the JPEG path:
 * quiet, `format` pixels of `width`x`height`, video only, every frame passed through as it comes.
 */
export function rawInputArgs(format: string, width: number, height: number, fps: number): string[] {
  return [
    '-hide_banner',
    '-loglevel',
    'error',
    '-nostats',
    '-f',
    'rawvideo',
    '-pix_fmt',
    format,
    '-s',
    `${width}x${height}`,
    '-framerate',
    String(fps),
    '-i',
    'pipe:0',
    '-an',
    '-sn',
    '-fps_mode',
    'passthrough',
  ];
}

/**
 * ffmpeg's input side for an `ffmpeg-input` source: quiet, no console reads, the source's own
 * input options, video only. Above the hub's rate the `fps` filter drops to it; otherwise every
 * frame of the input passes through as it comes (as for raw frames).
 */
function sourceInputArgs(input: FfmpegInput, fps: number): { args: string[]; filters: string[] } {
  const cap = input.fps > fps;
  return {
    args: [
      '-hide_banner',
      '-loglevel',
      'error',
      '-nostats',
      '-nostdin',
      ...input.args,
      '-an',
      '-sn',
      ...(cap ? [] : ['-fps_mode', 'passthrough']),
    ],
    filters: cap ? [`fps=${fps}`] : [],
  };
}

/**
 * The ffmpeg command line (pure, unit-tested). SPEC 3 video processing maps to x264 presets:
 * quality_first = veryfast (better picture per bit), low_latency_first = ultrafast with a
 * half-second VBV buffer (smaller key-frame bursts, less queueing on the network).
 */
export function ffmpegArgs(s: EncoderSettings): string[] {
  // libx264 refuses 4:2:0 with an odd width or height ("width not divisible by 2") and a
  // guest may set any mode: one black column/row of padding keeps every pixel of the screen.
  const even = (n: number): number => n + (n % 2);
  const pad = s.width % 2 || s.height % 2 ? [`pad=${even(s.width)}:${even(s.height)}`] : [];
  const input = s.input
    ? sourceInputArgs(s.input, s.fps)
    : { args: rawInputArgs(s.format, s.width, s.height, s.fps), filters: [] };
  const filters = [...input.filters, ...pad];
  const head = [...input.args, ...(filters.length > 0 ? ['-vf', filters.join(',')] : [])];
  if (s.codec === 'h265') return [...head, ...x265OutputArgs(s)];
  return [
    ...head,
    '-c:v',
    'libx264',
    ...presetArgs(s),
    '-profile:v',
    'baseline',
    '-pix_fmt',
    'yuv420p',
    ...bitrateArgs(s),
    '-x264-params',
    keyframeParams(s, 'infinite'),
    '-flush_packets',
    '1',
    '-f',
    'flv',
    'pipe:1',
  ];
}

/** What became of a frame handed to `write()`. */
export type WriteResult =
  /** in the encoder; its unit will follow */
  | 'written'
  /** dropped: `maxInFlight` frames are already in the encoder */
  | 'busy'
  /** not taken: no ffmpeg runs right now (starting, or waiting to restart) */
  | 'offline'
  /** not taken: the frame's size or format is not the encoder's (or it reads its own input) */
  | 'mismatch';

export interface EncoderOptions {
  /** The ffmpeg executable (config `video.ffmpeg`). */
  binary?: string;
  /** Restart policy of a dying ffmpeg. */
  backoff?: BackoffOptions;
  /**
   * Frames in flight this long with no unit out (an input-reading ffmpeg: no unit for this long
   * since it started or since its last one): ffmpeg hangs, it is killed and restarted.
   */
  stallMs?: number;
  /** SIGTERM, then SIGKILL after this. */
  stopTimeoutMs?: number;
  /** See MAX_IN_FLIGHT_BYTES. */
  maxInFlightBytes?: number;
}

/** 0.5 s doubling to 10 s; 10 s of running resets it (a healthy encoder). */
export const ENCODER_BACKOFF: Required<BackoffOptions> = {
  initialMs: 500,
  maxMs: 10_000,
  healthyMs: 10_000,
};
/** Far above any frame's encoding time (ms even at 1080p), far below a viewer giving up. */
export const ENCODER_STALL_MS = 5_000;

export class H264Encoder extends EventEmitter<{
  unit: [AccessUnit];
  /** A frame's last byte went into ffmpeg's pipe: the pipe takes the next one now. */
  piped: [];
  /** A new ffmpeg runs (first start or restart): it takes frames now. */
  started: [pid: number];
  /** ffmpeg ended; `lost` frames were written to it and never came out. */
  exit: [info: ExitInfo, stderr: string, lost: number];
  restarting: [delayMs: number, attempt: number];
  spawnError: [error: Error];
  /** ffmpeg is being killed: it hung, or its output was not FLV. */
  fault: [reason: string];
}> {
  private readonly supervisor: Supervisor;
  private reader: FlvReader | NutReader | null = null;
  /** Frames in ffmpeg, oldest first: capture time for the unit, write time for the stall check. */
  private inFlight: Array<{ capturedAt: number; writtenAt: number; bytes: number }> = [];
  private inFlightBytes = 0;
  /** Frames whose last byte is not in ffmpeg's pipe yet (their write callback is to come). */
  private piping = 0;
  /** A new ffmpeg: the old one's write callbacks no longer count in `piping`. */
  private pipeGeneration = 0;
  private readonly stallMs: number;
  private readonly maxInFlightBytes: number;
  private stallTimer: NodeJS.Timeout | null = null;
  /** When the running ffmpeg started or last gave a unit (the stall check of an input source). */
  private lastOutputAt = 0;
  /** Units the running ffmpeg gave out (0: its first, a key frame, is still to come). */
  private unitsOut = 0;
  written = 0;

  constructor(
    readonly settings: EncoderSettings,
    private readonly nextSeq: () => number,
    opts: EncoderOptions = {},
  ) {
    super();
    this.stallMs = opts.stallMs ?? ENCODER_STALL_MS;
    this.maxInFlightBytes = opts.maxInFlightBytes ?? MAX_IN_FLIGHT_BYTES;
    this.supervisor = new Supervisor({
      name: 'ffmpeg',
      command: opts.binary ?? 'ffmpeg',
      args: ffmpegArgs(settings),
      stdin: settings.input ? 'ignore' : 'pipe',
      stdout: 'data',
      stopTimeoutMs: opts.stopTimeoutMs ?? 2000,
      backoff: { ...ENCODER_BACKOFF, ...opts.backoff },
      retryFirstSpawn: true,
      keepLines: 20,
    });
    this.supervisor.on('started', (pid) => {
      this.inFlight = [];
      this.inFlightBytes = 0;
      this.piping = 0;
      this.pipeGeneration += 1;
      this.lastOutputAt = performance.now();
      this.unitsOut = 0;
      const onUnit = (u: { data: Buffer; key: boolean }): void => this.onFlvUnit(u.data, u.key);
      this.reader = settings.codec === 'h265' ? new NutReader(onUnit) : new FlvReader(onUnit);
      this.emit('started', pid);
    });
    this.supervisor.on('data', (chunk) => {
      const reader = this.reader;
      if (!reader) return;
      try {
        reader.push(chunk);
      } catch (err) {
        this.fault(`output is not FLV: ${(err as Error).message}`);
      }
    });
    this.supervisor.on('exited', (info) => {
      const lost = this.inFlight.length;
      this.inFlight = [];
      this.inFlightBytes = 0;
      this.piping = 0;
      this.pipeGeneration += 1;
      this.reader = null;
      this.emit('exit', info, this.supervisor.recentOutput().join('\n'), lost);
    });
    this.supervisor.on('restarting', (ms, attempt) => this.emit('restarting', ms, attempt));
    this.supervisor.on('spawnError', (err) => this.emit('spawnError', err));
  }

  /** ffmpeg runs and takes frames. */
  get running(): boolean {
    return this.supervisor.state === 'running';
  }

  /**
   * ffmpeg runs and has given out no unit yet: its first is a key frame (every new ffmpeg
   * starts with one), so a key frame request needs no restart. A restart then would throw
   * away the start this one has made: 450-630 ms of ffmpeg's own start, the spare's whole gain.
   */
  get keyFrameComing(): boolean {
    return this.running && this.unitsOut === 0;
  }

  /** The ffmpeg process, or null. */
  get pid(): number | null {
    return this.supervisor.pid;
  }

  /** Frames written to the running ffmpeg that have not come out yet. */
  get framesInFlight(): number {
    return this.inFlight.length;
  }

  /**
   * Frames written to the running ffmpeg whose last byte is not in its pipe yet: ffmpeg has not
   * read the frame before (a whole frame overfills the pipe). A frame written now would wait
   * behind them; `piped` says when that changes.
   */
  get framesPiping(): number {
    return this.piping;
  }

  /** Starts ffmpeg (idempotent); resolves once it runs or waits to be retried. */
  async start(): Promise<void> {
    if (!this.stallTimer) {
      this.stallTimer = setInterval(() => this.checkStall(), Math.min(1000, this.stallMs / 2));
      this.stallTimer.unref();
    }
    await this.supervisor.ensureStarted();
  }

  /** Hands a frame to the encoder; anything but 'written' means it was not taken. */
  write(frame: RawFrame): WriteResult {
    const s = this.settings;
    if (
      s.input ||
      frame.width !== s.width ||
      frame.height !== s.height ||
      frame.format !== s.format
    )
      return 'mismatch';
    const stdin = this.supervisor.stdin;
    if (!stdin || !this.running || !this.reader) return 'offline';
    // The in-flight count is the only gate: a whole frame (1.4 MB at 720p) always overfills
    // ffmpeg's stdin (libuv's child stdio is a unix socket pair: ~200 KiB in flight, the
    // kernel's net.core.wmem_default), so stdin reports 'need drain' after every write and
    // cannot be the signal.
    const bytes = frame.data.length;
    if (this.inFlight.length >= maxInFlight(s.fps)) return 'busy';
    if (this.inFlight.length > 0 && this.inFlightBytes + bytes > this.maxInFlightBytes)
      return 'busy';
    this.inFlight.push({ capturedAt: frame.capturedAt, writtenAt: performance.now(), bytes });
    this.inFlightBytes += bytes;
    this.written += 1;
    // the pipe holds the buffer until the callback (called on failure too): then it is free
    traceStage('encoder-in', frame.capturedAt);
    const generation = this.pipeGeneration;
    this.piping += 1;
    stdin.write(frame.data, () => {
      traceStage('piped', frame.capturedAt);
      frame.release?.();
      if (generation !== this.pipeGeneration) return;
      this.piping -= 1;
      this.emit('piped');
    });
    return 'written';
  }

  /** Stops ffmpeg (stdin's frames are lost: see `framesInFlight`) and any pending restart. */
  async stop(): Promise<void> {
    if (this.stallTimer) clearInterval(this.stallTimer);
    this.stallTimer = null;
    // ffmpeg blocked in a read of stdin acts on SIGTERM only after that read: without the
    // end of its input first, every stop would wait out stopTimeoutMs and end in SIGKILL.
    this.supervisor.stdin?.destroy();
    await this.supervisor.ensureStopped();
  }

  private onFlvUnit(data: Buffer, key: boolean): void {
    const done = this.inFlight.shift();
    if (done) this.inFlightBytes -= done.bytes;
    const now = performance.now();
    this.lastOutputAt = now;
    this.unitsOut += 1;
    // an input source's frames were never here: a unit is dated when it comes out
    const capturedAt = done?.capturedAt ?? now;
    traceStage('unit', capturedAt);
    this.emit('unit', {
      data,
      key,
      seq: this.nextSeq(),
      capturedAt,
      pts90k: Math.round(capturedAt * 90) >>> 0,
    });
  }

  private checkStall(): void {
    if (!this.running) return;
    const since = this.settings.input ? this.lastOutputAt : this.inFlight[0]?.writtenAt;
    if (since === undefined) return;
    const waited = performance.now() - since;
    if (waited > this.stallMs) this.fault(`no output for ${Math.round(waited)} ms`);
  }

  private fault(reason: string): void {
    this.reader = null; // nothing more from this process counts
    if (this.supervisor.kill('SIGKILL')) this.emit('fault', reason);
  }
}

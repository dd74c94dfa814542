/**
 * One ffmpeg/libx264 process: raw frames in on stdin, H.264 access units out (FLV-framed on
 * stdout, see flv-reader.ts). Constrained Baseline, zerolatency (no B-frames, no lookahead),
 * so every frame written comes back as one access unit, in order: the capture times of the
 * frames in flight are a FIFO the units take theirs from.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { EventEmitter } from 'node:events';
import type { Readable, Writable } from 'node:stream';
import type { VideoProcessing } from '@kvm/protocol';
import type { PixelFormat, RawFrame } from '../drivers/video/types';
import { FlvReader } from './flv-reader';
import type { AccessUnit } from './types';

export interface EncoderSettings {
  width: number;
  height: number;
  format: PixelFormat;
  fps: number;
  bitrateKbps: number;
  /** Frames between key frames; 0 = only the first. */
  gop: number;
  processing: VideoProcessing;
}

/**
 * Frames written but not yet out of the encoder above which new frames are dropped rather
 * than queued: about 150 ms worth (at least 4), so a busy moment of the machine costs no frame
 * while a slow encoder never builds up latency.
 */
export function maxInFlight(fps: number): number {
  return Math.max(4, Math.round(fps * 0.15));
}

/**
 * The ffmpeg command line (pure, unit-tested). SPEC 3 video processing maps to x264 presets:
 * quality_first = veryfast (better picture per bit), low_latency_first = ultrafast with a
 * half-second VBV buffer (smaller key-frame bursts, less queueing on the network).
 */
export function ffmpegArgs(s: EncoderSettings): string[] {
  const lowLatency = s.processing === 'low_latency_first';
  const bufsize = Math.max(50, Math.round(lowLatency ? s.bitrateKbps / 2 : s.bitrateKbps));
  const keyint = s.gop > 0 ? String(s.gop) : 'infinite';
  return [
    '-hide_banner',
    '-loglevel',
    'error',
    '-nostats',
    '-f',
    'rawvideo',
    '-pix_fmt',
    s.format,
    '-s',
    `${s.width}x${s.height}`,
    '-framerate',
    String(s.fps),
    '-i',
    'pipe:0',
    '-an',
    '-sn',
    '-fps_mode',
    'passthrough',
    '-c:v',
    'libx264',
    '-preset',
    lowLatency ? 'ultrafast' : 'veryfast',
    '-tune',
    'zerolatency',
    '-profile:v',
    'baseline',
    '-pix_fmt',
    'yuv420p',
    '-b:v',
    `${s.bitrateKbps}k`,
    '-maxrate',
    `${s.bitrateKbps}k`,
    '-bufsize',
    `${bufsize}k`,
    '-x264-params',
    `keyint=${keyint}:min-keyint=${s.gop > 0 ? s.gop : 1}:scenecut=0:repeat-headers=1:rc-lookahead=0`,
    '-flush_packets',
    '1',
    '-f',
    'flv',
    'pipe:1',
  ];
}

export class H264Encoder extends EventEmitter<{
  unit: [AccessUnit];
  exit: [code: number | null, stderr: string];
}> {
  private child: ChildProcessByStdio<Writable, Readable, Readable> | null = null;
  private readonly inFlight: number[] = [];
  private stderr = '';
  dropped = 0;
  written = 0;

  constructor(
    readonly settings: EncoderSettings,
    private nextSeq: () => number,
    private readonly binary = 'ffmpeg',
  ) {
    super();
  }

  get running(): boolean {
    return this.child !== null;
  }

  start(): void {
    if (this.child) return;
    const child = spawn(this.binary, ffmpegArgs(this.settings), {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.child = child;
    const reader = new FlvReader((u) => {
      const capturedAt = this.inFlight.shift() ?? performance.now();
      this.emit('unit', {
        data: u.data,
        key: u.key,
        seq: this.nextSeq(),
        capturedAt,
        pts90k: Math.round(capturedAt * 90) >>> 0,
      });
    });
    child.stdout.on('data', (chunk: Buffer) => {
      try {
        reader.push(chunk);
      } catch (err) {
        this.stderr += `\n${(err as Error).message}`;
        child.kill('SIGKILL');
      }
    });
    child.stderr.on('data', (c: Buffer) => {
      this.stderr = (this.stderr + c.toString()).slice(-4000);
    });
    child.stdin.on('error', () => undefined); // EPIPE when ffmpeg dies: 'exit' reports it
    child.once('exit', (code) => {
      this.child = null;
      this.inFlight.length = 0;
      this.emit('exit', code, this.stderr);
    });
  }

  /** Hands a frame to the encoder; false when it was dropped (encoder behind or wrong size). */
  write(frame: RawFrame): boolean {
    const child = this.child;
    const s = this.settings;
    if (!child || frame.width !== s.width || frame.height !== s.height || frame.format !== s.format)
      return false;
    // The in-flight count is the only gate: a whole frame (1.4 MB at 720p) always overfills the
    // 64 KiB pipe, so stdin reports 'need drain' after every write and cannot be the signal.
    if (this.inFlight.length >= maxInFlight(s.fps)) {
      this.dropped += 1;
      return false;
    }
    this.inFlight.push(frame.capturedAt);
    this.written += 1;
    child.stdin.write(frame.data);
    return true;
  }

  /** Ends the process: stdin closed, then SIGTERM, then SIGKILL. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.stdin.destroy();
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
    await exited;
    clearTimeout(timer);
  }
}

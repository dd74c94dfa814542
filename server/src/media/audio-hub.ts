/**
 * The remote computer's sound as Opus for every browser listening (issue 14): one ffmpeg
 * while at least one subscriber, the driver's capture (and its `feed` on stdin) encoded by
 * libopus in 20 ms low-delay frames, one Ogg page per packet on stdout (media/ogg.ts takes
 * them apart). Each viewer's peer packetises the same packets with its own SSRC
 * (media/opus-rtp.ts).
 *
 * - Stops `graceMs` after the last subscriber leaves (a page reload does not restart it).
 * - ffmpeg runs under the Supervisor: one process at most, restarted with backoff when it
 *   dies, killed when it writes nothing for `stallMs`. A capture the driver cannot give now
 *   (the VM is off) is asked again every second while someone listens.
 * - Subscribers are called synchronously with each packet and must not queue it (the peers
 *   send over UDP): a stalled browser never grows memory here.
 */
import { EventEmitter } from 'node:events';
import type { AudioCapture, AudioDriver } from '../drivers/audio/types';
import type { Logger } from '../log';
import { Supervisor, type BackoffOptions } from '../process/supervisor';
import { OggOpusReader } from './ogg';
import { opusPacketSamples } from './opus-rtp';

export interface AudioPacket {
  /** One Opus packet. */
  data: Buffer;
  /** Its duration in 48 kHz samples (from its TOC byte). */
  samples: number;
  /** performance.now() when it came out of ffmpeg. */
  at: number;
  /** The first packet of a new ffmpeg run: the sound had a gap before it. */
  resume: boolean;
}

export interface AudioHubOptions {
  ffmpeg?: string;
  /** Opus bitrate in kbit/s. */
  bitrateKbps?: number;
  graceMs?: number;
  stallMs?: number;
  backoff?: BackoffOptions;
}

export const AUDIO_BITRATE_KBPS = 96;
const DEFAULT_GRACE_MS = 2000;
const DEFAULT_STALL_MS = 5000;
const CAPTURE_RETRY_MS = 1000;
/** Subscribers at most: peers are bounded by the Janus plugin already (16). */
const MAX_SUBSCRIBERS = 64;

/** ffmpeg's command line around the driver's capture (pure, unit-tested). */
/**
 * ffmpeg input options of a live sound stream (the capture, the microphone's Ogg): start at
 * once (nothing to probe in a raw, pulse or Ogg Opus input) and buffer nothing.
 */
export const LOW_DELAY_INPUT: readonly string[] = [
  '-fflags',
  'nobuffer',
  '-flags',
  'low_delay',
  '-probesize',
  '32',
  '-analyzeduration',
  '0',
];

export function audioHubArgs(
  capture: readonly string[],
  bitrateKbps = AUDIO_BITRATE_KBPS,
): string[] {
  return [
    '-hide_banner',
    '-loglevel',
    'error',
    '-nostats',
    ...LOW_DELAY_INPUT,
    ...capture,
    '-vn',
    '-ac',
    '2',
    '-ar',
    '48000',
    '-c:a',
    'libopus',
    '-application',
    'lowdelay',
    '-frame_duration',
    '20',
    '-b:a',
    `${bitrateKbps}k`,
    // one Ogg page per packet, written at once
    '-page_duration',
    '20000',
    '-flush_packets',
    '1',
    '-f',
    'ogg',
    'pipe:1',
  ];
}

export class AudioHub extends EventEmitter<{ listeners: [count: number]; running: [boolean] }> {
  private readonly subscribers = new Set<(p: AudioPacket) => void>();
  private supervisor: Supervisor | null = null;
  private reader = new OggOpusReader();
  private stopFeed: (() => void) | null = null;
  private resumeNext = true;
  private lastOutputAt = 0;
  private graceTimer: NodeJS.Timeout | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private stallTimer: NodeJS.Timeout | null = null;
  private disposed = false;
  /** The previous ffmpeg is being stopped: a new one waits for it (never two at once). */
  private stopping: Promise<void> | null = null;
  /** Packets sent to subscribers since the start. */
  packets = 0;

  constructor(
    private readonly driver: AudioDriver,
    private readonly log: Logger,
    private readonly opts: AudioHubOptions = {},
  ) {
    super();
  }

  get subscriberCount(): number {
    return this.subscribers.size;
  }

  /** ffmpeg runs now. */
  get running(): boolean {
    return this.supervisor?.state === 'running';
  }

  /** The ffmpeg process, or null (tests check that at most one runs). */
  get pid(): number | null {
    return this.supervisor?.pid ?? null;
  }

  /** Receives every packet from now on until the returned function is called. */
  subscribe(fn: (p: AudioPacket) => void): () => void {
    if (this.disposed) return () => undefined;
    if (this.subscribers.size >= MAX_SUBSCRIBERS) throw new Error('too many audio listeners');
    const wrapped = (p: AudioPacket): void => fn(p);
    this.subscribers.add(wrapped);
    this.clearGrace();
    this.emit('listeners', this.subscribers.size);
    this.ensureRunning();
    return () => {
      if (!this.subscribers.delete(wrapped)) return;
      this.emit('listeners', this.subscribers.size);
      if (this.subscribers.size === 0) this.scheduleStop();
    };
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    this.subscribers.clear();
    this.clearGrace();
    await this.stop();
  }

  private ensureRunning(): void {
    if (this.supervisor || this.stopping || this.disposed || this.retryTimer) return;
    const capture = this.driver.capture();
    if (!capture) {
      this.retryTimer = setTimeout(() => {
        this.retryTimer = null;
        if (this.subscribers.size > 0) this.ensureRunning();
      }, CAPTURE_RETRY_MS);
      this.retryTimer.unref();
      return;
    }
    this.supervisor = this.makeSupervisor(capture);
    this.stallTimer = setInterval(() => this.checkStall(), 1000);
    this.stallTimer.unref();
    this.supervisor.ensureStarted().catch((err: unknown) => {
      this.log.warn({ err: String(err) }, 'audio: encoder did not start');
    });
  }

  private makeSupervisor(capture: AudioCapture): Supervisor {
    const sup = new Supervisor({
      name: 'ffmpeg-audio',
      command: this.opts.ffmpeg ?? 'ffmpeg',
      args: audioHubArgs(capture.args, this.opts.bitrateKbps),
      stdin: capture.feed ? 'pipe' : 'ignore',
      stdout: 'data',
      stopTimeoutMs: 1000,
      backoff: { initialMs: 500, maxMs: 10_000, healthyMs: 10_000, ...this.opts.backoff },
      retryFirstSpawn: true,
      keepLines: 20,
    });
    sup.on('started', (pid) => {
      this.reader = new OggOpusReader();
      this.resumeNext = true;
      this.lastOutputAt = performance.now();
      if (capture.feed && sup.stdin) this.stopFeed = capture.feed(sup.stdin);
      this.log.debug({ pid }, 'audio: encoder started');
      this.emit('running', true);
    });
    sup.on('data', (chunk) => this.onData(chunk));
    sup.on('exited', (info) => {
      this.stopFeed?.();
      this.stopFeed = null;
      if (!info.expected) {
        this.log.warn(
          { code: info.code, signal: info.signal, stderr: sup.recentOutput().join('\n') },
          'audio: encoder exited',
        );
      }
      this.emit('running', false);
    });
    return sup;
  }

  private onData(chunk: Buffer): void {
    const at = performance.now();
    this.lastOutputAt = at;
    for (const data of this.reader.push(chunk)) {
      const samples = opusPacketSamples(data);
      if (samples === null) continue;
      const packet: AudioPacket = { data, samples, at, resume: this.resumeNext };
      this.resumeNext = false;
      this.packets += 1;
      for (const fn of this.subscribers) {
        try {
          fn(packet);
        } catch (err) {
          this.log.warn({ err: String(err) }, 'audio: subscriber failed');
        }
      }
    }
  }

  private checkStall(): void {
    const sup = this.supervisor;
    if (!sup || sup.state !== 'running') return;
    const stallMs = this.opts.stallMs ?? DEFAULT_STALL_MS;
    if (performance.now() - this.lastOutputAt > stallMs) {
      this.log.warn({ stallMs }, 'audio: encoder writes nothing, restarting it');
      this.lastOutputAt = performance.now();
      sup.kill();
    }
  }

  private scheduleStop(): void {
    this.clearGrace();
    this.graceTimer = setTimeout(() => {
      this.graceTimer = null;
      if (this.subscribers.size === 0) void this.stop();
    }, this.opts.graceMs ?? DEFAULT_GRACE_MS);
    this.graceTimer.unref();
  }

  private clearGrace(): void {
    if (this.graceTimer) clearTimeout(this.graceTimer);
    this.graceTimer = null;
  }

  private stop(): Promise<void> {
    if (!this.stopping) {
      this.stopping = this.stopNow().finally(() => {
        this.stopping = null;
        // a subscriber that came while this one stopped gets a fresh encoder
        if (this.subscribers.size > 0 && !this.disposed) this.ensureRunning();
      });
    }
    return this.stopping;
  }

  private async stopNow(): Promise<void> {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    if (this.stallTimer) clearInterval(this.stallTimer);
    this.stallTimer = null;
    const sup = this.supervisor;
    this.supervisor = null;
    if (!sup) return;
    this.stopFeed?.();
    this.stopFeed = null;
    // end of input: ffmpeg flushes and exits at once (SIGTERM follows otherwise)
    sup.stdin?.end();
    await sup.ensureStopped();
    sup.removeAllListeners();
  }
}

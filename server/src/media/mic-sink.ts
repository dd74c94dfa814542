/**
 * The browser's microphone to the remote computer (issue 14): Opus RTP from a peer →
 * depacketised (media/opus-rtp.ts) → one Ogg page per packet (media/ogg.ts) → ffmpeg's
 * decoder → the driver's playback (a PulseAudio source the VM records from; the testbed's
 * measured pipe).
 *
 * - One sender at a time: the newest takes over and the one it replaced is ignored from then
 *   on (until its peer closes); two microphones are never mixed. What the replaced sender sent
 *   before the takeover is already in the decoder and still plays, ahead of the new sender's
 *   sound (one decoder, one stream in order).
 * - ffmpeg starts with the first packet and stops `idleMs` after the last one, or at once
 *   when the sending peer closes.
 * - Bounded: packets wait in memory only while ffmpeg starts (at most `MAX_PENDING`), and a
 *   packet for an ffmpeg whose stdin already holds `maxQueueBytes` is dropped and counted.
 */
import { EventEmitter } from 'node:events';
import { PassThrough } from 'node:stream';
import { AUDIO_FORMAT } from '@kvm/protocol';
import type { AudioDriver, AudioPlayback } from '../drivers/audio/types';
import type { Logger } from '../log';
import { Supervisor } from '../process/supervisor';
import { LOW_DELAY_INPUT } from './audio-hub';
import { OggOpusWriter } from './ogg';
import { depacketize, opusPacketSamples } from './opus-rtp';

export interface MicSinkOptions {
  ffmpeg?: string;
  idleMs?: number;
  maxQueueBytes?: number;
}

export interface MicSinkStats {
  /** Packets written to the decoder. */
  packets: number;
  /** Packets dropped: the decoder's stdin was full, or too many waited for it to start. */
  dropped: number;
  /** Packets refused: not RTP, not Opus, or from a sender that was taken over. */
  refused: number;
}

const DEFAULT_IDLE_MS = 2000;
/** About 4 s of a 32 kbit/s microphone: a decoder this far behind is stalled. */
const DEFAULT_MAX_QUEUE_BYTES = 16 * 1024;
/** Packets held while ffmpeg starts (1 s of 20 ms packets). */
const MAX_PENDING = 50;
/**
 * Of those, what the new decoder gets: what arrived within this many ms of the newest (sound
 * that waited longer would only add its wait to the delay).
 */
const START_BACKLOG_MS = 60;
/** Senders remembered as taken over; peers are bounded far below this. */
const MAX_REPLACED = 64;

/** The packets that arrived within `windowMs` of the newest one (pure). */
export function freshBacklog<T extends { at: number }>(held: readonly T[], windowMs: number): T[] {
  const newest = held.at(-1)?.at ?? 0;
  return held.filter((p) => p.at >= newest - windowMs);
}

/** ffmpeg's command line: Ogg Opus on stdin, decoded with no buffering, to `playback` (pure). */
export function micSinkArgs(playback: readonly string[]): string[] {
  return [
    '-hide_banner',
    '-loglevel',
    'error',
    '-nostats',
    ...LOW_DELAY_INPUT,
    '-f',
    'ogg',
    '-i',
    'pipe:0',
    '-vn',
    '-flush_packets',
    '1',
    ...playback,
  ];
}

export class MicSink extends EventEmitter<{ active: [boolean] }> {
  private current: string | null = null;
  private readonly replaced = new Set<string>();
  private supervisor: Supervisor | null = null;
  private writer: OggOpusWriter | null = null;
  private pending: { data: Buffer; samples: number; at: number }[] = [];
  private idleTimer: NodeJS.Timeout | null = null;
  private serial = 0;
  private disposed = false;
  /** The previous decoder is being stopped: a new one waits for it (never two at once). */
  private stopping: Promise<void> | null = null;
  readonly stats: MicSinkStats = { packets: 0, dropped: 0, refused: 0 };

  constructor(
    private readonly driver: AudioDriver,
    private readonly log: Logger,
    private readonly opts: MicSinkOptions = {},
  ) {
    super();
  }

  /** A microphone is being played to the remote computer now. */
  get active(): boolean {
    return this.current !== null;
  }

  /** The sender whose sound plays, or null. */
  get sender(): string | null {
    return this.current;
  }

  /** The decoder's process, or null. */
  get pid(): number | null {
    return this.supervisor?.pid ?? null;
  }

  /** One RTP packet of the microphone of `sender` (a peer's key). */
  push(sender: string, rtp: Buffer): void {
    if (this.disposed) return;
    const view = depacketize(rtp);
    if (!view || view.payloadType !== AUDIO_FORMAT.payloadType || this.replaced.has(sender)) {
      this.stats.refused += 1;
      return;
    }
    const samples = opusPacketSamples(view.payload);
    if (samples === null) {
      this.stats.refused += 1;
      return;
    }
    if (this.current !== sender) {
      if (!this.takeOver(sender)) {
        this.stats.refused += 1;
        return;
      }
    }
    this.armIdle();
    if (!this.supervisor && !this.stopping) this.start();
    this.write(Buffer.from(view.payload), samples);
  }

  /** The peer of `sender` closed: its sound stops now. */
  senderGone(sender: string): void {
    this.replaced.delete(sender);
    if (this.current === sender) void this.stop();
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    await this.stop();
  }

  private takeOver(sender: string): boolean {
    if (!this.driver.playback()) return false;
    if (this.current !== null) {
      if (this.replaced.size >= MAX_REPLACED) this.replaced.clear();
      this.replaced.add(this.current);
      this.log.info({ from: this.current, to: sender }, 'audio: another microphone takes over');
    }
    const was = this.current !== null;
    this.current = sender;
    if (!was) this.emit('active', true);
    return true;
  }

  private write(data: Buffer, samples: number): void {
    const stdin = this.supervisor?.state === 'running' ? this.supervisor.stdin : null;
    const writer = this.writer;
    if (!stdin || !writer) {
      if (this.pending.length >= MAX_PENDING) {
        this.stats.dropped += 1;
        return;
      }
      this.pending.push({ data, samples, at: performance.now() });
      return;
    }
    if (stdin.writableLength > (this.opts.maxQueueBytes ?? DEFAULT_MAX_QUEUE_BYTES)) {
      this.stats.dropped += 1;
      return;
    }
    this.stats.packets += 1;
    stdin.write(writer.packet(data, samples));
  }

  private start(): void {
    const playback = this.driver.playback();
    if (!playback) return;
    const sup = this.makeSupervisor(playback);
    this.supervisor = sup;
    sup.ensureStarted().catch((err: unknown) => {
      this.log.warn({ err: String(err) }, 'audio: microphone decoder did not start');
    });
  }

  private makeSupervisor(playback: AudioPlayback): Supervisor {
    const sup = new Supervisor({
      name: 'ffmpeg-mic',
      command: this.opts.ffmpeg ?? 'ffmpeg',
      args: micSinkArgs(playback.args),
      stdin: 'pipe',
      stdout: 'data',
      stopTimeoutMs: 1000,
      backoff: { initialMs: 500, maxMs: 5000, healthyMs: 10_000 },
      retryFirstSpawn: true,
      keepLines: 20,
    });
    // this decoder's own output stream: a later decoder never closes it
    let drain: { stream: PassThrough; stop: () => void } | null = null;
    const closeDrain = (): void => {
      drain?.stop();
      drain?.stream.end();
      drain = null;
    };
    sup.on('started', (pid) => {
      this.log.debug({ pid }, 'audio: microphone decoder started');
      closeDrain();
      if (playback.drain) {
        const stream = new PassThrough();
        drain = { stream, stop: playback.drain(stream) };
      }
      // each decoder (a restarted one too) gets a new logical stream from its headers on
      const writer = new OggOpusWriter((++this.serial * 0x9e3779b1) >>> 0);
      this.writer = writer;
      const stdin = sup.stdin;
      if (!stdin) return;
      stdin.write(writer.headers());
      // only the freshest packets: what piled up while ffmpeg started would stay queued ahead of
      // the live sound for as long as the microphone runs (bench/audio.ts: mic_latency_ms 231
      // in a run whose decoder took long to start, 127 in others)
      const held = this.pending.splice(0);
      const fresh = freshBacklog(held, START_BACKLOG_MS);
      this.stats.dropped += held.length - fresh.length;
      for (const p of fresh) {
        this.stats.packets += 1;
        stdin.write(writer.packet(p.data, p.samples));
      }
    });
    sup.on('data', (chunk) => drain?.stream.write(chunk));
    sup.on('exited', (info) => {
      if (this.supervisor === sup) this.writer = null;
      closeDrain();
      if (!info.expected) {
        this.log.warn(
          { code: info.code, signal: info.signal, stderr: sup.recentOutput().join('\n') },
          'audio: microphone decoder exited',
        );
      }
    });
    return sup;
  }

  private armIdle(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      void this.stop();
    }, this.opts.idleMs ?? DEFAULT_IDLE_MS);
    this.idleTimer.unref();
  }

  private stop(): Promise<void> {
    if (!this.stopping) {
      this.stopping = this.stopNow().finally(() => {
        this.stopping = null;
        // packets of a sender that began while the old decoder stopped: start a new one
        if (this.current !== null && !this.supervisor && !this.disposed) this.start();
      });
    }
    return this.stopping;
  }

  private async stopNow(): Promise<void> {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    const was = this.current !== null;
    this.current = null;
    this.pending = [];
    this.writer = null;
    const sup = this.supervisor;
    this.supervisor = null;
    if (was) this.emit('active', false);
    if (!sup) return;
    sup.stdin?.end();
    await sup.ensureStopped();
    sup.removeAllListeners();
  }
}

/**
 * JPEG pictures from the video hub's raw frames (jpeg.ts has the encoder): MJPEG clients get
 * every picture while they watch, snapshots get the newest frame encoded once. Capture and the
 * encoder run only while one of them needs it, and a few seconds after (warm for the next
 * snapshot of a poller); then both stop.
 */
import { EventEmitter } from 'node:events';
import type { Logger } from '../log';
import type { RawFrame } from '../drivers/video/types';
import {
  JpegEncoder,
  makePlaceholder,
  type Jpeg,
  type JpegEncoderOptions,
  type JpegSettings,
} from './jpeg';
import type { VideoHub } from './video-hub';

export interface JpegHubOptions {
  ffmpeg?: string;
  /** kvmd's stream quality, 1..100 */
  quality?: number;
  /** How long capture and ffmpeg stay up after the last snapshot (no MJPEG client). */
  warmMs?: number;
  /** A snapshot that gets no picture within this answers null (kvmd's snapshot_timeout). */
  snapshotTimeoutMs?: number;
  encoder?: Omit<JpegEncoderOptions, 'binary'>;
}

/** kvmd's default stream quality. */
export const DEFAULT_JPEG_QUALITY = 80;
const WARM_MS = 5_000;
const SNAPSHOT_TIMEOUT_MS = 5_000;
/** Snapshots waiting at once; they share one encode, so this only bounds the list. */
const MAX_SNAPSHOT_WAITERS = 64;

/**
 * The newest frame and who holds its buffer: this hub (as the newest) and ffmpeg's pipe
 * while it writes it. The source gets the buffer back when both let go.
 */
class Held {
  private refs = 1;
  constructor(readonly frame: RawFrame) {}
  ref(): () => void {
    this.refs += 1;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.unref();
    };
  }
  unref(): void {
    this.refs -= 1;
    if (this.refs === 0) this.frame.release?.();
  }
}

type Waiter = { resolve: (j: Jpeg | null) => void; timer: NodeJS.Timeout };

export class JpegHub extends EventEmitter<{ jpeg: [Jpeg] }> {
  private encoder: JpegEncoder | null = null;
  private offRaw: (() => void) | null = null;
  private streamers = 0;
  private warmTimer: NodeJS.Timeout | null = null;
  /** The newest raw frame, kept (not released) until a newer one comes. */
  private latest: Held | null = null;
  /** The newest picture and the capture time of the frame it is made of. */
  private lastJpeg: Jpeg | null = null;
  private waiters: Waiter[] = [];
  /**
   * The capture time of the frame the waiting snapshots get (it is in ffmpeg): the first
   * picture of it or a newer frame answers every waiter. null: none asked for yet.
   */
  private snapshotFor: number | null = null;
  private readonly retiring = new Set<Promise<void>>();
  private placeholder: { key: string; data: Promise<Buffer> } | null = null;
  private quality: number;
  private disposed = false;
  /** Frames the encoder could not take while MJPEG clients watched (busy). */
  dropped = 0;

  constructor(
    private readonly hub: VideoHub,
    private readonly log: Logger,
    private readonly opts: JpegHubOptions = {},
  ) {
    super();
    this.quality = opts.quality ?? DEFAULT_JPEG_QUALITY;
  }

  get ffmpeg(): string {
    return this.opts.ffmpeg ?? 'ffmpeg';
  }

  /** The running ffmpeg, or null (tests check none is left). */
  get encoderPid(): number | null {
    return this.encoder?.pid ?? null;
  }

  /** Raw frames flow to this path right now (capture runs for it). */
  get active(): boolean {
    return this.offRaw !== null;
  }

  get streaming(): boolean {
    return this.streamers > 0;
  }

  setQuality(quality: number): void {
    if (quality === this.quality) return;
    this.quality = quality;
    this.restart('quality changed');
  }

  /** An MJPEG client: every picture while it watches. Returns the unsubscribe. */
  stream(onJpeg: (jpeg: Jpeg) => void): () => void {
    this.on('jpeg', onJpeg);
    this.streamers += 1;
    this.ensureActive();
    let gone = false;
    return () => {
      if (gone) return;
      gone = true;
      this.off('jpeg', onJpeg);
      this.streamers -= 1;
      this.idle();
    };
  }

  /**
   * A picture of the current screen: a fresh encode of the newest frame (or the newest
   * picture when it is of that frame already); null when none comes in time.
   */
  snapshot(): Promise<Jpeg | null> {
    if (this.disposed || this.waiters.length >= MAX_SNAPSHOT_WAITERS) return Promise.resolve(null);
    this.ensureActive();
    this.idle(); // restarts the warm timer
    const last = this.lastJpeg;
    if (last && this.latest && last.capturedAt >= this.latest.frame.capturedAt) {
      return Promise.resolve(last);
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w.timer !== timer);
        // nothing came of that frame (ffmpeg restarted, busy): the next snapshot tries anew
        if (this.waiters.length === 0) this.snapshotFor = null;
        resolve(null);
      }, this.opts.snapshotTimeoutMs ?? SNAPSHOT_TIMEOUT_MS);
      timer.unref();
      this.waiters.push({ resolve, timer });
      this.pump();
    });
  }

  /** The "no live video" picture for a screen of this size (cached per size). */
  placeholderJpeg(width: number, height: number): Promise<Buffer> {
    const w = width > 0 && width <= 8192 ? width : 640;
    const h = height > 0 && height <= 8192 ? height : 480;
    const key = `${w}x${h}`;
    if (this.placeholder?.key !== key) {
      const data = makePlaceholder(this.ffmpeg, w, h);
      data.catch(() => {
        if (this.placeholder?.data === data) this.placeholder = null;
      });
      this.placeholder = { key, data };
    }
    return this.placeholder.data;
  }

  /** kvmd's streamer reset: a new ffmpeg with the next frame. */
  reset(): void {
    this.restart('reset');
  }

  private ensureActive(): void {
    if (this.disposed) return;
    if (this.warmTimer) clearTimeout(this.warmTimer);
    this.warmTimer = null;
    if (!this.offRaw) this.offRaw = this.hub.subscribeRaw(this.onFrame);
  }

  /** Nobody streams: stop after the warm delay (snapshots restart it). */
  private idle(): void {
    if (this.streamers > 0 || this.disposed) return;
    if (this.warmTimer) clearTimeout(this.warmTimer);
    this.warmTimer = setTimeout(() => {
      this.warmTimer = null;
      if (this.streamers > 0) return;
      if (this.waiters.length > 0)
        this.idle(); // a snapshot still waits: again later
      else this.stopAll();
    }, this.opts.warmMs ?? WARM_MS);
    this.warmTimer.unref();
  }

  private stopAll(): void {
    this.offRaw?.();
    this.offRaw = null;
    this.setLatest(null);
    this.lastJpeg = null;
    const enc = this.encoder;
    this.encoder = null;
    this.snapshotFor = null;
    if (enc) this.retire(enc);
  }

  private restart(reason: string): void {
    const enc = this.encoder;
    if (!enc) return;
    this.log.info({ reason }, 'restarting JPEG encoder');
    this.encoder = null;
    this.snapshotFor = null;
    this.lastJpeg = null;
    this.retire(enc);
    this.pump();
  }

  private retire(enc: JpegEncoder): void {
    enc.removeAllListeners();
    const done = enc
      .stop()
      .catch((err: unknown) => this.log.warn({ err }, 'JPEG encoder did not stop cleanly'));
    this.retiring.add(done);
    void done.finally(() => this.retiring.delete(done));
  }

  private setLatest(frame: RawFrame | null): void {
    const old = this.latest;
    this.latest = frame ? new Held(frame) : null;
    old?.unref();
  }

  private onFrame = (frame: RawFrame): void => {
    if (this.disposed) {
      frame.release?.();
      return;
    }
    this.setLatest(frame);
    if (this.streamers > 0) this.encodeLatest();
    else this.pump();
  };

  /** Snapshots waiting and nothing in ffmpeg for them yet: the newest frame goes in. */
  private pump(): void {
    if (this.waiters.length === 0 || this.snapshotFor !== null || !this.latest) return;
    this.encodeLatest();
  }

  private encodeLatest(): void {
    const held = this.latest;
    if (!held) return;
    const frame = held.frame;
    let enc = this.encoder;
    const s = enc?.settings;
    if (
      !enc ||
      s!.width !== frame.width ||
      s!.height !== frame.height ||
      s!.format !== frame.format ||
      s!.quality !== this.quality
    ) {
      if (enc) this.retire(enc);
      enc = this.startEncoder({
        width: frame.width,
        height: frame.height,
        format: frame.format,
        quality: this.quality,
      });
    }
    if (!enc.running) return; // 'started' pumps again
    // the pipe holds the buffer until written; the frame stays ours as `latest` too
    const write = (): boolean => {
      const unref = held.ref();
      const result = enc.write(frame, unref);
      if (result !== 'written') unref();
      if (result === 'busy' && this.streamers > 0) this.dropped += 1;
      return result === 'written';
    };
    if (!write()) return;
    if (this.waiters.length > 0 && this.snapshotFor === null) this.snapshotFor = frame.capturedAt;
  }

  private startEncoder(settings: JpegSettings): JpegEncoder {
    const enc = new JpegEncoder(settings, {
      ...this.opts.encoder,
      ...(this.opts.ffmpeg !== undefined ? { binary: this.opts.ffmpeg } : {}),
    });
    this.encoder = enc;
    this.snapshotFor = null;
    enc.on('jpeg', (jpeg) => this.onJpeg(jpeg));
    enc.on('started', () => {
      if (this.streamers > 0) this.encodeLatest();
      else this.pump();
    });
    enc.on('exited', () => {
      this.snapshotFor = null;
    });
    enc.start().catch((err: unknown) => this.log.error({ err }, 'JPEG encoder cannot start'));
    this.log.info(settings, 'JPEG encoder starting');
    return enc;
  }

  private onJpeg(jpeg: Jpeg): void {
    if (this.lastJpeg && jpeg.capturedAt <= this.lastJpeg.capturedAt && this.streamers === 0) {
      return; // an older frame than the last picture (never expected: one frame in, one out)
    }
    this.lastJpeg = jpeg;
    if (this.snapshotFor !== null && jpeg.capturedAt >= this.snapshotFor) {
      this.snapshotFor = null;
      const waiters = this.waiters;
      this.waiters = [];
      for (const w of waiters) {
        clearTimeout(w.timer);
        w.resolve(jpeg);
      }
    }
    this.emit('jpeg', jpeg);
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    if (this.warmTimer) clearTimeout(this.warmTimer);
    for (const w of this.waiters) {
      clearTimeout(w.timer);
      w.resolve(null);
    }
    this.waiters = [];
    this.removeAllListeners();
    this.stopAll();
    await Promise.all([...this.retiring]);
  }
}

/**
 * The video pipeline of one device: source -> encoder -> viewers. It is the VideoFeed every
 * transport subscribes to. The encoder runs while somebody watches (a viewer, or an event
 * socket client with `stream=1`, which warms it up before the viewer arrives) and a while
 * after (so a page reload does not restart it), is shared by all viewers, and is restarted
 * with backoff when ffmpeg dies. A GOP cache (units since the last key frame) gives a new
 * viewer a picture at once.
 */
import { EventEmitter } from 'node:events';
import type { VideoProcessing } from '@kvm/protocol';
import type { RawFrame, VideoSource, VideoSourceState } from '../drivers/video/types';
import { NalType, nalType, splitNalUnits } from './annexb';
import { H264Encoder, type EncoderSettings } from './encoder';
import type { AccessUnit, VideoFeed } from './types';

export interface HubParams {
  bitrateKbps: number;
  gop: number;
  fps: number;
  processing: VideoProcessing;
}

export interface HubStats {
  /** bits per second over the last full second */
  bitrate: number;
  /** units per second over the last full second */
  fps: number;
  /** frames the source delivered in the last second */
  capturedFps: number;
  encoderOnline: boolean;
  viewers: number;
  droppedFrames: number;
  profileLevelId: string;
}

interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

/** How long the encoder keeps running after the last viewer left. */
const LINGER_MS = 15_000;
/** At most one forced key frame (encoder restart) in this window. */
const KEY_REQUEST_MIN_MS = 2_000;
/** GOP cache bound, so a huge GOP cannot eat memory. */
const GOP_CACHE_MAX_BYTES = 16 * 1024 * 1024;

export class VideoHub extends EventEmitter<{ stats: [HubStats] }> implements VideoFeed {
  private readonly viewers = new Set<(unit: AccessUnit) => void>();
  private warmers = 0;
  private encoder: H264Encoder | null = null;
  private gop: AccessUnit[] = [];
  private gopBytes = 0;
  private seq = 0;
  private lingerTimer: NodeJS.Timeout | null = null;
  private restartTimer: NodeJS.Timeout | null = null;
  private backoffMs = 500;
  private lastKeyRequest = 0;
  private capturing = false;
  private profile = '42e01f';
  private window = { bytes: 0, units: 0, frames: 0, start: performance.now() };
  private stats: HubStats;
  private readonly statsTimer: NodeJS.Timeout;
  private readonly offSource: () => void;
  private disposed = false;
  /** Running totals since start: frames from the source, units out of the encoder. */
  private readonly counts = { frames: 0, units: 0 };

  constructor(
    private readonly source: VideoSource,
    private params: HubParams,
    private readonly log: Logger,
    private readonly ffmpeg = 'ffmpeg',
  ) {
    super();
    this.stats = {
      bitrate: 0,
      fps: 0,
      capturedFps: 0,
      encoderOnline: false,
      viewers: 0,
      droppedFrames: 0,
      profileLevelId: this.profile,
    };
    this.offSource = source.onState((s) => this.onSourceState(s));
    this.statsTimer = setInterval(() => this.rollStats(), 1000);
    this.statsTimer.unref();
  }

  get profileLevelId(): string {
    return this.profile;
  }

  getParams(): HubParams {
    return { ...this.params };
  }

  getStats(): HubStats {
    return { ...this.stats };
  }

  /**
   * Frames the source delivered, access units the encoder produced and frames the encoder
   * had to drop (busy), since start.
   */
  totals(): { frames: number; units: number; dropped: number } {
    return { ...this.counts, dropped: this.stats.droppedFrames + (this.encoder?.dropped ?? 0) };
  }

  subscribe(onUnit: (unit: AccessUnit) => void): () => void {
    this.viewers.add(onUnit);
    for (const unit of this.gop) onUnit(unit);
    this.demandChanged();
    return () => {
      if (this.viewers.delete(onUnit)) this.demandChanged();
    };
  }

  /** Event-socket clients with stream=1 (kvmd semantics) keep the encoder warm. */
  setWarmers(count: number): void {
    this.warmers = Math.max(0, count);
    this.demandChanged();
  }

  requestKeyFrame(): void {
    const now = performance.now();
    if (now - this.lastKeyRequest < KEY_REQUEST_MIN_MS || !this.encoder) return;
    this.lastKeyRequest = now;
    // ffmpeg's command line cannot make a key frame on request (architecture.md): a restart
    // of the encoder starts with one, within about 100 ms.
    this.restartEncoder('key frame requested');
  }

  /** New bitrate/GOP/fps/processing: applied by a quick encoder restart, viewers stay. */
  setParams(next: HubParams): void {
    const changed = JSON.stringify(next) !== JSON.stringify(this.params);
    this.params = { ...next };
    if (changed && this.encoder) {
      this.restartEncoder('parameters changed');
      if (this.capturing) void this.source.startCapture(this.onFrame, this.params.fps);
    }
  }

  private demandChanged(): void {
    this.stats.viewers = this.viewers.size;
    const wanted = this.viewers.size + this.warmers > 0;
    if (wanted) {
      if (this.lingerTimer) clearTimeout(this.lingerTimer);
      this.lingerTimer = null;
      this.ensureRunning();
    } else if (!this.lingerTimer && (this.encoder || this.capturing)) {
      this.lingerTimer = setTimeout(() => {
        this.lingerTimer = null;
        void this.shutdown();
      }, LINGER_MS);
      this.lingerTimer.unref();
    }
  }

  private ensureRunning(): void {
    if (this.disposed) return;
    const state = this.source.getState();
    if (!this.capturing && state.online) {
      this.capturing = true;
      void this.source.startCapture(this.onFrame, this.params.fps).catch((err: unknown) => {
        this.capturing = false;
        this.log.warn({ err }, 'video source failed to start');
      });
    }
  }

  private onFrame = (frame: RawFrame): void => {
    this.window.frames += 1;
    this.counts.frames += 1;
    const enc = this.encoder;
    if (
      !enc ||
      enc.settings.width !== frame.width ||
      enc.settings.height !== frame.height ||
      enc.settings.format !== frame.format
    ) {
      // first frame, or the source changed resolution: (re)start the encoder for this size
      if (!this.restartTimer) this.startEncoder(frame);
      return;
    }
    enc.write(frame);
  };

  private settingsFor(frame: RawFrame): EncoderSettings {
    return {
      width: frame.width,
      height: frame.height,
      format: frame.format,
      fps: this.params.fps,
      bitrateKbps: this.params.bitrateKbps,
      gop: this.params.gop,
      processing: this.params.processing,
    };
  }

  private startEncoder(frame: RawFrame): void {
    const old = this.encoder;
    if (old) {
      old.removeAllListeners();
      void old.stop();
      this.stats.droppedFrames += old.dropped;
    }
    const enc = new H264Encoder(this.settingsFor(frame), () => this.seq++, this.ffmpeg);
    this.encoder = enc;
    this.gop = [];
    this.gopBytes = 0;
    enc.on('unit', (unit) => this.onUnit(unit));
    enc.on('exit', (code, stderr) => {
      if (this.encoder !== enc) return;
      this.encoder = null;
      this.stats.encoderOnline = false;
      this.stats.droppedFrames += enc.dropped;
      if (this.disposed || (this.viewers.size + this.warmers === 0 && !this.lingerTimer)) return;
      this.log.warn(
        { code, stderr: stderr.slice(-500), backoffMs: this.backoffMs },
        'encoder exited; restarting',
      );
      this.restartTimer = setTimeout(() => {
        this.restartTimer = null;
      }, this.backoffMs);
      this.backoffMs = Math.min(this.backoffMs * 2, 10_000);
    });
    enc.start();
    enc.write(frame);
    this.log.info({ width: frame.width, height: frame.height, ...this.params }, 'encoder started');
  }

  private restartEncoder(reason: string): void {
    const enc = this.encoder;
    if (!enc) return;
    this.log.info({ reason }, 'restarting encoder');
    enc.removeAllListeners();
    void enc.stop();
    this.stats.droppedFrames += enc.dropped;
    this.encoder = null; // the next frame starts a new one with the current params
  }

  private onUnit(unit: AccessUnit): void {
    if (unit.key) {
      this.gop = [];
      this.gopBytes = 0;
      this.backoffMs = 500;
      this.stats.encoderOnline = true;
      const sps = splitNalUnits(unit.data).find((n) => nalType(n) === NalType.sps);
      if (sps && sps.length >= 4) this.profile = sps.subarray(1, 4).toString('hex');
    }
    if (this.gopBytes + unit.data.length <= GOP_CACHE_MAX_BYTES) {
      this.gop.push(unit);
      this.gopBytes += unit.data.length;
    }
    this.window.bytes += unit.data.length;
    this.window.units += 1;
    this.counts.units += 1;
    for (const viewer of this.viewers) viewer(unit);
  }

  private rollStats(): void {
    const now = performance.now();
    const secs = (now - this.window.start) / 1000;
    if (secs <= 0) return;
    const next: HubStats = {
      ...this.stats,
      bitrate: Math.round((this.window.bytes * 8) / secs),
      fps: Math.round((this.window.units / secs) * 10) / 10,
      capturedFps: Math.round((this.window.frames / secs) * 10) / 10,
      encoderOnline: this.encoder !== null && this.stats.encoderOnline,
      viewers: this.viewers.size,
      profileLevelId: this.profile,
    };
    this.window = { bytes: 0, units: 0, frames: 0, start: now };
    const changed = JSON.stringify(next) !== JSON.stringify(this.stats);
    this.stats = next;
    if (changed) this.emit('stats', this.getStats());
  }

  private onSourceState(state: VideoSourceState): void {
    if (state.online && this.viewers.size + this.warmers > 0) this.ensureRunning();
    if (!state.online) this.capturing = false;
  }

  private async shutdown(): Promise<void> {
    this.capturing = false;
    await this.source.stopCapture();
    const enc = this.encoder;
    this.encoder = null;
    this.gop = [];
    this.gopBytes = 0;
    this.stats.encoderOnline = false;
    if (enc) {
      enc.removeAllListeners();
      await enc.stop();
    }
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    clearInterval(this.statsTimer);
    if (this.lingerTimer) clearTimeout(this.lingerTimer);
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.offSource();
    this.viewers.clear();
    await this.shutdown();
  }
}

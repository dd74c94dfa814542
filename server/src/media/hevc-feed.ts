/**
 * The device's picture in H.265, for WebRTC viewers whose browser takes it (janus/codecs.ts).
 * A second encoder beside the hub's H.264 one, never instead of it: it takes the hub's raw
 * frames (VideoHub.subscribeRaw, as the JPEG path does), so capture runs for it while the H.264
 * encoder runs only if somebody watches H.264. Same settings as the hub (bitrate, GOP, fps,
 * processing), its own GOP cache so a new viewer starts on a key frame at once, its own
 * encoder restart for a key frame request (ffmpeg cannot make one on request: video-hub.ts).
 *
 * Runs while it has a viewer and `LINGER_MS` after (a page reload does not restart it). An
 * `ffmpeg-input` source's raw frames are decoded from the hub's H.264, which then runs too.
 * libx265 is probed once, on the first viewer whose browser lists H.265 (`available`): a build of
 * ffmpeg without it is offered H.264 only.
 */
import { spawn } from 'node:child_process';
import type { Logger } from '../log';
import type { RawFrame } from '../drivers/video/types';
import { H264Encoder, type EncoderOptions, type FrameEncoderSettings } from './encoder';
import { GopCache } from './gop-cache';
import type { AccessUnit, VideoFeed, ViewerDropReason } from './types';
import type { HubParams } from './video-hub';

/** What the H.265 feed needs of the hub. */
export interface HevcFeedHub {
  subscribeRaw(onFrame: (frame: RawFrame) => void): () => void;
  getParams(): HubParams;
  reportDrop?(reason: ViewerDropReason, units?: number): void;
}

export interface HevcFeedOptions {
  /** The ffmpeg executable (config `video.ffmpeg`). */
  ffmpeg?: string;
  encoder?: Omit<EncoderOptions, 'binary'>;
  lingerMs?: number;
}

const LINGER_MS = 5_000;
/** At most one forced key frame (encoder restart) in this window, as the hub. */
const KEY_REQUEST_MIN_MS = 2_000;

export class HevcFeed implements VideoFeed {
  /** Not an H.264 stream: the offer's H.264 profile comes from the hub. */
  readonly profileLevelId = '';
  private readonly viewers = new Set<(unit: AccessUnit) => void>();
  private readonly gop = new GopCache();
  private encoder: H264Encoder | null = null;
  private unsubscribeRaw: (() => void) | null = null;
  private linger: NodeJS.Timeout | null = null;
  private lastKeyRequest = -Infinity;
  private seq = 0;
  private probe: Promise<boolean> | null = null;
  /** The newest frame while ffmpeg starts: written once it runs (the viewer's first picture). */
  private held: RawFrame | null = null;

  constructor(
    private readonly hub: HevcFeedHub,
    private readonly log: Logger,
    private readonly opts: HevcFeedOptions = {},
  ) {}

  /** ffmpeg has libx265 (probed once). */
  available(): Promise<boolean> {
    this.probe ??= new Promise((resolve) => {
      const child = spawn(this.opts.ffmpeg ?? 'ffmpeg', ['-hide_banner', '-h', 'encoder=libx265'], {
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.on('error', () => resolve(false));
      child.on('close', () => resolve(out.includes('libx265')));
    });
    return this.probe;
  }

  subscribe(onUnit: (unit: AccessUnit) => void): () => void {
    this.viewers.add(onUnit);
    for (const unit of this.gop.units()) onUnit(unit);
    if (this.linger) clearTimeout(this.linger);
    this.linger = null;
    this.unsubscribeRaw ??= this.hub.subscribeRaw(this.onFrame);
    return () => {
      if (!this.viewers.delete(onUnit) || this.viewers.size > 0 || this.linger) return;
      this.linger = setTimeout(() => {
        this.linger = null;
        if (this.viewers.size === 0) void this.stop();
      }, this.opts.lingerMs ?? LINGER_MS);
      this.linger.unref();
    };
  }

  requestKeyFrame(): void {
    const now = performance.now();
    // as the hub: a starting ffmpeg's first unit is a key frame already
    const enc = this.encoder;
    if (now - this.lastKeyRequest < KEY_REQUEST_MIN_MS || !enc?.running || enc.keyFrameComing)
      return;
    this.lastKeyRequest = now;
    this.retire('key frame requested');
  }

  reportDrop(reason: ViewerDropReason, units?: number): void {
    this.hub.reportDrop?.(reason, units);
  }

  /** The running ffmpeg's pid, or null. */
  get encoderPid(): number | null {
    return this.encoder?.pid ?? null;
  }

  async dispose(): Promise<void> {
    this.viewers.clear();
    if (this.linger) clearTimeout(this.linger);
    this.linger = null;
    await this.stop();
  }

  private readonly onFrame = (frame: RawFrame): void => {
    let enc = this.encoder;
    const s = enc?.settings;
    if (
      !enc ||
      !s ||
      s.width !== frame.width ||
      s.height !== frame.height ||
      s.format !== frame.format
    ) {
      if (enc) this.retire('source size changed');
      enc = this.start(frame);
    }
    const result = enc.write(frame);
    if (result === 'offline') {
      this.held?.release?.();
      this.held = frame;
    } else if (result !== 'written') frame.release?.();
  };

  private dropHeld(): void {
    this.held?.release?.();
    this.held = null;
  }

  private start(frame: RawFrame): H264Encoder {
    const p = this.hub.getParams();
    const settings: FrameEncoderSettings = {
      width: frame.width,
      height: frame.height,
      format: frame.format,
      fps: p.fps,
      bitrateKbps: p.bitrateKbps,
      gop: p.gop,
      processing: p.processing,
      codec: 'h265',
    };
    const enc = new H264Encoder(settings, () => this.seq++, {
      ...this.opts.encoder,
      ...(this.opts.ffmpeg !== undefined ? { binary: this.opts.ffmpeg } : {}),
    });
    this.encoder = enc;
    this.gop.clear();
    this.dropHeld();
    enc.on('started', () => {
      const held = this.held;
      this.held = null;
      if (held && enc.write(held) !== 'written') held.release?.();
    });
    enc.on('unit', (unit) => {
      this.gop.push(unit);
      for (const viewer of this.viewers) {
        try {
          viewer(unit);
        } catch (err) {
          this.log.warn({ err }, 'h265 viewer failed; unsubscribed');
          this.viewers.delete(viewer);
        }
      }
    });
    enc.on('exit', (info, stderr) => {
      this.gop.clear();
      if (!info.expected) {
        this.log.warn({ code: info.code, stderr: stderr.slice(-500) }, 'h265 encoder exited');
      }
    });
    enc.on('spawnError', (err) => this.log.error({ err }, 'h265 encoder cannot start'));
    enc.start().catch((err: unknown) => this.log.error({ err }, 'h265 encoder cannot start'));
    this.log.info({ width: frame.width, height: frame.height, ...p }, 'h265 encoder starting');
    return enc;
  }

  private retire(reason: string): void {
    const enc = this.encoder;
    if (!enc) return;
    this.log.info({ reason }, 'h265 encoder restarting');
    this.encoder = null;
    enc.removeAllListeners();
    void enc.stop().catch((err: unknown) => this.log.warn({ err }, 'h265 encoder did not stop'));
  }

  private async stop(): Promise<void> {
    this.unsubscribeRaw?.();
    this.unsubscribeRaw = null;
    this.dropHeld();
    const enc = this.encoder;
    this.encoder = null;
    this.gop.clear();
    if (enc) {
      enc.removeAllListeners();
      await enc.stop().catch((err: unknown) => this.log.warn({ err }, 'h265 encoder did not stop'));
    }
  }
}

/**
 * The video pipeline of one device: source -> encoder -> viewers. It is the VideoFeed every
 * transport subscribes to. The encoder runs while somebody watches (a viewer, or an event
 * socket client with `stream=1`, which warms it up before the viewer arrives) and a while
 * after (so a page reload does not restart it), and is shared by all viewers. Its ffmpeg runs
 * under the Supervisor (encoder.ts): restarted with backoff when it dies or hangs. A GOP cache
 * (gop-cache.ts) gives a new viewer a picture at once. Every frame that never reaches a viewer
 * is counted with its reason (`drops`).
 *
 * The source has one consumer; the hub shares its raw frames between the H.264 encoder and
 * raw subscribers (the JPEG path, media/jpeg-hub.ts; media/raw-frames.ts). Capture runs while
 * either needs it; the H.264 encoder only while somebody watches H.264 (and its linger).
 *
 * An `ffmpeg-input` source (drivers/video/types.ts: a device or a file) is read by the encoder's
 * ffmpeg itself: no frames pass through here, the encoder starts when it is wanted (not at a
 * first frame), each unit counts as a captured frame, and a new encoder starts only once the
 * old one is gone (a capture device has one reader). Its raw subscribers get frames decoded
 * from the hub's own H.264 (media/h264-decoder.ts), so they keep the encoder running too.
 */
import { EventEmitter } from 'node:events';
import type { VideoProcessing } from '@kvm/protocol';
import type { Logger } from '../log';
import type { FfmpegInput, RawFrame, VideoSource, VideoSourceState } from '../drivers/video/types';
import { NalType, nalType, splitNalUnits } from './annexb';
import { H264Encoder, type EncoderOptions, type EncoderSettings } from './encoder';
import { GopCache, type GopCacheLimits } from './gop-cache';
import { RawFrames } from './raw-frames';
import {
  DROP_REASONS,
  type AccessUnit,
  type DropCounts,
  type DropReason,
  type VideoFeed,
  type ViewerDropReason,
} from './types';

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
  /** Frames from the source that never became a unit (source_busy + encoder_*), since start. */
  droppedFrames: number;
  profileLevelId: string;
  /** Every drop since start, by reason. */
  drops: DropCounts;
}

export interface VideoHubOptions {
  /** The ffmpeg executable (config `video.ffmpeg`). */
  ffmpeg?: string;
  /**
   * Restart policy, stall timeout and stop timeout of the encoder (tests shorten them); the
   * decoder of an input source's raw frames takes the same backoff and stop timeout.
   */
  encoder?: Omit<EncoderOptions, 'binary'>;
  gopCache?: GopCacheLimits;
  /** How long the encoder keeps running after the last viewer left. */
  lingerMs?: number;
  /** At most one new ffmpeg per this many ms (size changes, parameter changes). */
  encoderStartMinMs?: number;
  /** Keep a started ffmpeg for the next viewer once the encoder stopped (default true; SPARE). */
  spareEncoder?: boolean;
  /** The first spare's delay after the hub's start, and the least gap between two (PRIME_MS). */
  primeMs?: number;
}

/** How long the encoder keeps running after the last viewer left. */
const LINGER_MS = 15_000;
/** How long capture runs on after the last raw subscriber left, with no H.264 encoder. */
const RAW_LINGER_MS = 1_000;
/** At most one forced key frame (encoder restart) in this window. */
const KEY_REQUEST_MIN_MS = 2_000;
/**
 * At most one new ffmpeg in this window: a guest that flips its resolution on every frame, or
 * a burst of set_params, would otherwise spawn an ffmpeg per frame or per request.
 */
const ENCODER_START_MIN_MS = 500;

/**
 * Frames of a frames source in ffmpeg's pipe at once, not yet wholly in it. A frame that comes
 * while the pipe still takes the last one waits in the hub, and a newer one replaces it: the
 * encoder always gets the newest picture. Without this, frames queued in the pipe up to the
 * encoder's in-flight bound whenever ffmpeg fell behind (its start, a busy moment), and at a
 * frame rate the encoder barely keeps up with that queue never drained: every change waited
 * behind it. Testbed at 720p60 on a slower 2-core machine, capture to unit out of ffmpeg: p50
 * 8.4-9.1 ms with the queue, 2.7-3.2 when it could not form (issue 28's eighth round).
 */
export const PIPE_FRAMES = 1;

/**
 * The spare: when the encoder of a frames source stops (nobody watched for the linger time), a
 * new ffmpeg with the same settings is started at once and left waiting for its first frame on
 * stdin, so the next viewer's first frame does not wait for ffmpeg's start. ffmpeg links ~215
 * shared libraries before it reads anything: 110-165 ms on a quiet 2-core machine, 0.4-1.2 s on
 * a loaded one (bench video's ttff_cold parts). Waiting, it uses no CPU; it holds its own
 * memory (a few MB besides the shared libraries' pages), and it goes when the settings change,
 * when it dies, and with the hub.
 */
const SPARE_DEFAULT = true;

/**
 * The first spare: a source that says its pixel format (VideoSource.pixelFormat) lets the hub
 * know the encoder's settings from its state alone, so a spare is started this long after the
 * hub's start while nobody watches, and again when the size or the parameters change later
 * (at once, or this long after the last such start: a guest's boot changes its mode a few
 * times). Without it the first viewer after the device starts met no spare: 1.1-2.4 s to its
 * first frame in `npm run bench -- video --ttff` (ttff_cold_no_spare_ms) on a slower machine,
 * 0.57-0.83 s with one. The delay keeps ffmpeg's own start out of the device's busy boot.
 */
const PRIME_MS = 1_000;

function sameSettings(a: EncoderSettings, b: EncoderSettings): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

const noDrops = (): DropCounts =>
  Object.fromEntries(DROP_REASONS.map((r) => [r, 0])) as unknown as DropCounts;

export class VideoHub extends EventEmitter<{ stats: [HubStats] }> implements VideoFeed {
  private readonly viewers = new Set<(unit: AccessUnit) => void>();
  private readonly raw: RawFrames;
  private warmers = 0;
  /** Retires the H.264 encoder when nobody watches H.264 while raw frames still flow. */
  private h264LingerTimer: NodeJS.Timeout | null = null;
  private encoder: H264Encoder | null = null;
  /** A started ffmpeg no frame reached yet, for the next encoder of its settings (SPARE). */
  private spare: H264Encoder | null = null;
  /** Starts the first spare (PRIME_MS); null when none is due. */
  private primeTimer: NodeJS.Timeout | null = null;
  /** When primeSpare last started a spare (performance.now()); the hub's start before that. */
  private primedAt = performance.now();
  /** Encoders (and decoders) being stopped (restart, shutdown): dispose waits for them. */
  private readonly retiring = new Set<Promise<void>>();
  /** H.264 encoders not yet stopped: an input source's next one waits for them. */
  private encodersStopping = 0;
  /** The source's encoder reads its input itself (`ffmpeg-input`); no frames come here. */
  private readonly inputKind: boolean;
  /** An input source's next encoder start, held back by encoderStartMinMs. */
  private startTimer: NodeJS.Timeout | null = null;
  /** The newest frame no ffmpeg could take yet (starting, restarting): written when one can. */
  private held: RawFrame | null = null;
  /**
   * The newest frame while the running ffmpeg's pipe still takes the last one: written when it
   * has (`piped`). A newer frame replaces it, so ffmpeg always gets the newest picture and no
   * queue of older ones forms in its pipe (see PIPE_FRAMES).
   */
  private next: RawFrame | null = null;
  private readonly gop: GopCache;
  private seq = 0;
  private lingerTimer: NodeJS.Timeout | null = null;
  private readonly lingerMs: number;
  private lastKeyRequest = -Infinity;
  private lastEncoderStart = -Infinity;
  private readonly encoderStartMinMs: number;
  private capturing = false;
  private profile = '42e01f';
  private window = { bytes: 0, units: 0, frames: 0, start: performance.now() };
  private stats: HubStats;
  private readonly drops: DropCounts = noDrops();
  private readonly statsTimer: NodeJS.Timeout;
  private readonly offSource: () => void;
  private disposed = false;
  /** Running totals since start: frames from the source, units out of the encoder. */
  private readonly counts = { frames: 0, units: 0 };

  constructor(
    private readonly source: VideoSource,
    private params: HubParams,
    private readonly log: Logger,
    private readonly opts: VideoHubOptions = {},
  ) {
    super();
    this.gop = new GopCache(opts.gopCache);
    this.lingerMs = opts.lingerMs ?? LINGER_MS;
    this.encoderStartMinMs = opts.encoderStartMinMs ?? ENCODER_START_MIN_MS;
    this.inputKind = source.input?.(params.fps).kind === 'ffmpeg-input';
    this.raw = new RawFrames(
      log,
      {
        changed: () => this.demandChanged(),
        cachedGop: () => this.gop.units(),
        requestKeyFrame: () => this.requestKeyFrame(),
        encoderOnline: () => this.stats.encoderOnline,
      },
      { ...opts.encoder, ...(opts.ffmpeg !== undefined ? { binary: opts.ffmpeg } : {}) },
    );
    this.stats = {
      bitrate: 0,
      fps: 0,
      capturedFps: 0,
      encoderOnline: false,
      viewers: 0,
      droppedFrames: 0,
      profileLevelId: this.profile,
      drops: noDrops(),
    };
    this.offSource = source.onState((s) => this.onSourceState(s));
    this.statsTimer = setInterval(() => this.rollStats(), 1000);
    this.statsTimer.unref();
    this.schedulePrime();
  }

  get profileLevelId(): string {
    return this.profile;
  }

  getParams(): HubParams {
    return { ...this.params };
  }

  getStats(): HubStats {
    return { ...this.stats, drops: { ...this.stats.drops } };
  }

  /** Drops by reason, up to this moment (getStats() has them as of the last second). */
  getDrops(): DropCounts {
    return { ...this.drops };
  }

  /** The running ffmpeg's pid, or null (tests check that none is left behind). */
  get encoderPid(): number | null {
    return this.encoder?.pid ?? null;
  }

  /** The ffmpeg decoding an input source's H.264 for raw subscribers, or null. */
  get decoderPid(): number | null {
    return this.raw.decoderPid;
  }

  /**
   * Frames the source delivered, access units the encoder produced and frames from the source
   * that never became a unit (encoder busy, not running, or restarted with them inside), since
   * start.
   */
  totals(): { frames: number; units: number; dropped: number } {
    return { ...this.counts, dropped: this.framesDropped() };
  }

  subscribe(onUnit: (unit: AccessUnit) => void): () => void {
    this.viewers.add(onUnit);
    try {
      for (const unit of this.gop.units()) onUnit(unit);
    } catch (err) {
      this.viewers.delete(onUnit);
      throw err;
    }
    // The cache dropped an oversized GOP: without a new key frame this viewer would wait for
    // the next natural one, or forever with h264_gop=0.
    if (this.gop.overflowed) this.requestKeyFrame();
    this.demandChanged();
    return () => {
      if (this.viewers.delete(onUnit)) this.demandChanged();
    };
  }

  /**
   * Raw frames for another consumer (the JPEG path): capture runs while one is subscribed,
   * without starting the H.264 encoder. Each frame's `release` must be called (or the frame
   * dropped) by the subscriber; it throws nothing back into the source.
   */
  subscribeRaw(onFrame: (frame: RawFrame) => void): () => void {
    this.raw.add(onFrame);
    this.demandChanged();
    return () => {
      if (this.raw.remove(onFrame)) this.demandChanged();
    };
  }

  /** Raw subscribers right now. */
  get rawSubscribers(): number {
    return this.raw.size;
  }

  /**
   * kvmd's `streamer/reset`: a new ffmpeg and a new capture start (viewers stay; the next
   * frame starts a new encoder).
   */
  async reset(): Promise<void> {
    this.restartEncoder('reset');
    if (!this.capturing) return;
    this.capturing = false;
    await this.source
      .stopCapture()
      .catch((err: unknown) => this.log.warn({ err }, 'video source failed to stop'));
    if (this.viewers.size + this.warmers + this.raw.size > 0) this.ensureRunning();
  }

  /** Event-socket clients with stream=1 (kvmd semantics) keep the encoder warm. */
  setWarmers(count: number): void {
    this.warmers = Math.max(0, count);
    this.demandChanged();
  }

  reportDrop(reason: ViewerDropReason, units = 1): void {
    if (reason !== 'viewer_lagging' || !Number.isFinite(units) || units < 1) return;
    this.drop(reason, Math.floor(units));
  }

  replayGop(onUnit: (unit: AccessUnit) => void): boolean {
    if (!this.viewers.has(onUnit) || this.gop.size === 0 || this.gop.overflowed) return false;
    for (const unit of this.gop.units()) onUnit(unit);
    return true;
  }

  requestKeyFrame(): void {
    const now = performance.now();
    // Only a running ffmpeg that has given out a unit is restarted: one that waits out its
    // backoff keeps waiting, and a starting one (the spare the first viewer took, say) begins
    // with a key frame anyway. The WebRTC viewer asks as soon as DTLS is up, which came before
    // the spare's first unit in 6 of 16 cold loads: the restart cost them 600 ms.
    const enc = this.encoder;
    if (now - this.lastKeyRequest < KEY_REQUEST_MIN_MS || !enc?.running || enc.keyFrameComing)
      return;
    this.lastKeyRequest = now;
    // ffmpeg's command line cannot make a key frame on request (architecture.md): a restart
    // of the encoder starts with one, within about 100 ms (an input source's: once its input
    // is open again; a file plays from its start).
    this.restartEncoder('key frame requested');
  }

  /** New bitrate/GOP/fps/processing: applied by a quick encoder restart, viewers stay. */
  setParams(next: HubParams): void {
    const changed = JSON.stringify(next) !== JSON.stringify(this.params);
    this.params = { ...next };
    if (changed && !this.encoder) this.schedulePrime();
    if (changed && this.encoder) {
      this.restartEncoder('parameters changed');
      // the new frame rate; a source that fails here keeps its old rate (and says so)
      if (this.capturing) {
        this.source
          .startCapture(this.onFrame, this.params.fps)
          .catch((err: unknown) => this.log.warn({ err }, 'video source refused the frame rate'));
      }
    }
  }

  private drop(reason: DropReason, n = 1): void {
    if (n > 0) this.drops[reason] += n;
  }

  private framesDropped(): number {
    return this.drops.source_busy + this.drops.encoder_offline + this.drops.encoder_restart;
  }

  private get h264Wanted(): boolean {
    return this.viewers.size + this.warmers > 0;
  }

  /** H.264 is wanted: for viewers, and for an input source's raw subscribers (decoded). */
  private get encoderWanted(): boolean {
    return this.h264Wanted || (this.inputKind && this.raw.size > 0);
  }

  private demandChanged(): void {
    this.stats.viewers = this.viewers.size;
    const wanted = this.h264Wanted || this.raw.size > 0;
    if (this.raw.size === 0) this.retireDecoder();
    if (this.encoderWanted || !this.encoder) {
      if (this.h264LingerTimer) clearTimeout(this.h264LingerTimer);
      this.h264LingerTimer = null;
    }
    if (wanted) {
      if (this.lingerTimer) clearTimeout(this.lingerTimer);
      this.lingerTimer = null;
      this.ensureRunning();
      // raw frames only: the encoder lingers as it would with nobody at all, then goes
      if (!this.encoderWanted && this.encoder && !this.h264LingerTimer) {
        this.h264LingerTimer = setTimeout(() => {
          this.h264LingerTimer = null;
          if (this.encoderWanted) return;
          const enc = this.encoder;
          this.encoder = null;
          this.dropHeld();
          this.gop.clear();
          this.stats.encoderOnline = false;
          if (enc) void this.retire(enc);
        }, this.lingerMs);
        this.h264LingerTimer.unref();
      }
    } else if (!this.lingerTimer && (this.encoder || this.capturing)) {
      this.lingerTimer = setTimeout(
        () => {
          this.lingerTimer = null;
          void this.shutdown();
        },
        this.encoder ? this.lingerMs : Math.min(this.lingerMs, RAW_LINGER_MS),
      );
      this.lingerTimer.unref();
    }
  }

  private ensureRunning(): void {
    if (this.disposed) return;
    if (this.inputKind) {
      this.ensureInputRunning();
      return;
    }
    const state = this.source.getState();
    if (!this.capturing && state.online) {
      this.capturing = true;
      void this.source.startCapture(this.onFrame, this.params.fps).catch((err: unknown) => {
        this.capturing = false;
        this.log.warn({ err }, 'video source failed to start');
      });
    }
  }

  /** An input source: its encoder while H.264 is wanted, its decoder while raw frames are. */
  private ensureInputRunning(): void {
    if (!this.source.getState().online) return;
    if (this.encoderWanted && !this.encoder && this.encodersStopping === 0) {
      const wait = this.lastEncoderStart + this.encoderStartMinMs - performance.now();
      if (wait <= 0) {
        const input = this.currentInput();
        if (input) {
          this.startEncoder(
            { ...this.params, width: input.width, height: input.height, input },
            null,
          );
        }
      } else if (!this.startTimer) {
        this.startTimer = setTimeout(() => {
          this.startTimer = null;
          this.ensureRunning();
        }, wait);
        this.startTimer.unref();
      }
    }
    // a decoder of the encoder's size (a new one when the size changed)
    const enc = this.encoder;
    if (enc) this.raw.ensureDecoder(enc.settings.width, enc.settings.height);
  }

  private currentInput(): FfmpegInput | null {
    const input = this.source.input?.(this.params.fps);
    // a size of 0 is no picture (and no frame size for a decoder)
    return input?.kind === 'ffmpeg-input' && input.width > 0 && input.height > 0 ? input : null;
  }

  private onFrame = (frame: RawFrame): void => {
    if (this.disposed) return;
    this.window.frames += 1;
    this.counts.frames += 1;
    if (frame.skipped) this.drop('source_busy', frame.skipped);
    this.raw.share(frame, this.h264Wanted || this.encoder !== null ? this.encode : null);
  };

  private encode = (frame: RawFrame): void => {
    const enc = this.encoder;
    if (enc?.running && enc.framesPiping >= PIPE_FRAMES) {
      if (this.next) {
        this.drop('source_busy');
        this.next.release?.();
      }
      this.next = frame;
      return;
    }
    const result = enc ? enc.write(frame) : 'offline';
    if (result === 'busy') {
      this.drop('source_busy');
      frame.release?.();
    } else if (enc && result === 'offline') this.hold(frame);
    else if (result !== 'written') {
      // the source changed resolution or format: an encoder for the new size
      if (enc) this.restartEncoder('source size changed');
      if (performance.now() - this.lastEncoderStart >= this.encoderStartMinMs) {
        this.startEncoder(this.settingsFor(frame), frame);
      } else {
        // too soon after the last one; a later frame (sources send one a second at least)
        // starts it
        this.hold(frame);
      }
    }
  };

  /** Keeps the newest frame for an ffmpeg that is not running yet; the one it replaces is lost. */
  private hold(frame: RawFrame): void {
    if (this.held) {
      this.drop('encoder_offline');
      // back to its source: a frame never released is a new buffer at the source's next frame
      this.held.release?.();
    }
    this.held = frame;
  }

  /** The held frames are not wanted any more (the encoder went): their buffers go back. */
  private dropHeld(): void {
    this.held?.release?.();
    this.held = null;
    this.dropNext();
  }

  /** The frame waiting for the pipe is lost (its ffmpeg went): counted, its buffer back. */
  private dropNext(): void {
    if (!this.next) return;
    this.drop('encoder_offline');
    this.next.release?.();
    this.next = null;
  }

  private settingsFor(frame: Pick<RawFrame, 'width' | 'height' | 'format'>): EncoderSettings {
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

  /** A new encoder; `first` (a frames source's) is written as soon as it runs. */
  private startEncoder(settings: EncoderSettings, first: RawFrame | null): void {
    this.lastEncoderStart = performance.now();
    // a frame that waited for the last ffmpeg's pipe is older than `first`
    this.dropNext();
    const spare = this.takeSpare(settings);
    const enc = spare ?? this.newEncoder(settings);
    this.log.info(
      { width: settings.width, height: settings.height, ...this.params, spare: spare !== null },
      'encoder starting',
    );
    this.encoder = enc;
    this.gop.clear();
    if (first) this.hold(first);
    enc.on('unit', (unit) => this.onUnit(unit));
    enc.on('started', (pid) => {
      const held = this.held;
      this.held = null;
      if (held && enc.write(held) !== 'written') {
        this.drop('encoder_offline');
        held.release?.();
      }
      this.log.info({ pid }, 'encoder running');
    });
    enc.on('piped', () => {
      const next = this.next;
      if (!next || this.encoder !== enc) return;
      this.next = null;
      this.encode(next);
    });
    enc.on('exit', (info, stderr, lost) => {
      if (this.encoder === enc) this.dropNext();
      this.drop('encoder_restart', lost);
      this.stats.encoderOnline = false;
      // the next unit is a new ffmpeg's key frame: nothing of this GOP can follow
      this.gop.clear();
      if (!info.expected) {
        this.log.warn(
          { code: info.code, signal: info.signal, stderr: stderr.slice(-500) },
          'encoder exited',
        );
      }
    });
    enc.on('restarting', (delayMs, attempt) =>
      this.log.warn({ delayMs, attempt }, 'encoder restarting'),
    );
    enc.on('spawnError', (err) => this.log.error({ err }, 'encoder cannot start'));
    enc.on('fault', (reason) => this.log.warn({ reason }, 'encoder killed'));
    if (spare?.running) {
      // a spare already waits for its first frame: 'started' came before these listeners
      const held = this.held;
      this.held = null;
      if (held && enc.write(held) !== 'written') {
        this.drop('encoder_offline');
        held.release?.();
      }
      this.log.info({ pid: enc.pid }, 'encoder running');
    }
    enc.start().catch((err: unknown) => this.log.error({ err }, 'encoder cannot start'));
  }

  private newEncoder(settings: EncoderSettings): H264Encoder {
    return new H264Encoder(settings, () => this.seq++, {
      ...this.opts.encoder,
      ...(this.opts.ffmpeg !== undefined ? { binary: this.opts.ffmpeg } : {}),
    });
  }

  /** The spare if it was started with these settings; any other spare is stopped. */
  private takeSpare(settings: EncoderSettings): H264Encoder | null {
    const spare = this.spare;
    this.spare = null;
    if (!spare) return null;
    spare.removeAllListeners();
    if (sameSettings(spare.settings, settings) && spare.framesInFlight === 0) return spare;
    void this.retire(spare);
    return null;
  }

  /**
   * A spare for the picture nobody watches yet (PRIME_MS): PRIME_MS after the hub's start or
   * the last spare it started this way, at once when that is past.
   */
  private schedulePrime(): void {
    if (this.primeTimer || this.inputKind || this.disposed || !this.source.pixelFormat) return;
    const wait = this.primedAt + (this.opts.primeMs ?? PRIME_MS) - performance.now();
    if (wait <= 0) return this.primeSpare();
    this.primeTimer = setTimeout(() => {
      this.primeTimer = null;
      this.primeSpare();
    }, wait);
    this.primeTimer.unref();
  }

  /**
   * A spare for the settings the source's picture needs now, when nobody's encoder runs and no
   * spare of those settings waits (PRIME_MS). A source without a picture gets none.
   */
  private primeSpare(): void {
    const format = this.source.pixelFormat;
    const state = this.source.getState();
    if (!format || this.disposed || this.encoder || !state.online || !state.signal) return;
    if (!(state.width > 0 && state.height > 0)) return;
    const settings = this.settingsFor({ width: state.width, height: state.height, format });
    if (this.spare && sameSettings(this.spare.settings, settings)) return;
    this.primedAt = performance.now();
    this.startSpare(settings);
  }

  /** Starts a spare like `enc` (a frames source's encoder that just stopped; SPARE). */
  private startSpare(settings: EncoderSettings): void {
    if (this.inputKind || this.disposed || !(this.opts.spareEncoder ?? SPARE_DEFAULT)) return;
    if (this.spare) void this.retire(this.spare);
    const spare = this.newEncoder(settings);
    this.spare = spare;
    const drop = (): void => {
      if (this.spare !== spare) return;
      this.spare = null;
      spare.removeAllListeners();
      void this.retire(spare);
    };
    // a spare that cannot start or dies is not kept (the next viewer starts one as before)
    spare.on('exit', (info) => {
      if (!info.expected) drop();
    });
    spare.on('spawnError', drop);
    spare.start().catch(drop);
  }

  /** The waiting spare's ffmpeg (tests, stats), or null. */
  get sparePid(): number | null {
    return this.spare?.pid ?? null;
  }

  /** Stops the current encoder; the next frame starts a new one with the current params. */
  private restartEncoder(reason: string): void {
    const enc = this.encoder;
    if (!enc) return;
    this.log.info({ reason }, 'restarting encoder');
    this.encoder = null;
    this.stats.encoderOnline = false;
    this.retire(enc);
  }

  private retireDecoder(): void {
    const done = this.raw.stopDecoder();
    if (!done) return;
    this.retiring.add(done);
    void done.finally(() => this.retiring.delete(done));
  }

  private retire(enc: H264Encoder): Promise<void> {
    this.drop('encoder_restart', enc.framesInFlight);
    enc.removeAllListeners();
    const done = enc
      .stop()
      .catch((err: unknown) => this.log.warn({ err }, 'encoder did not stop cleanly'));
    this.encodersStopping += 1;
    this.retiring.add(done);
    void done.finally(() => {
      this.retiring.delete(done);
      this.encodersStopping -= 1;
      // an input source's next encoder opens the input once this one let go of it
      if (this.inputKind) this.ensureRunning();
    });
    return done;
  }

  private onUnit(unit: AccessUnit): void {
    if (unit.key) {
      this.stats.encoderOnline = true;
      const sps = splitNalUnits(unit.data).find((n) => nalType(n) === NalType.sps);
      if (sps && sps.length >= 4) this.profile = sps.subarray(1, 4).toString('hex');
    }
    this.drop('gop_cache_overflow', this.gop.push(unit));
    this.window.bytes += unit.data.length;
    this.window.units += 1;
    this.counts.units += 1;
    if (this.inputKind) {
      // ffmpeg captured it: the unit is the frame
      this.window.frames += 1;
      this.counts.frames += 1;
      this.raw.decode(unit, this.params.gop === 0);
    }
    for (const viewer of this.viewers) {
      // A transport's bug must cost its own viewer, not the others or the process: this runs
      // inside ffmpeg's stdout handler, where a throw would be uncaught.
      try {
        viewer(unit);
      } catch (err) {
        this.log.warn({ err }, 'video viewer failed; unsubscribed');
        if (this.viewers.delete(viewer)) this.demandChanged();
      }
    }
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
      droppedFrames: this.framesDropped(),
      profileLevelId: this.profile,
      drops: this.getDrops(),
    };
    this.window = { bytes: 0, units: 0, frames: 0, start: now };
    const changed = JSON.stringify(next) !== JSON.stringify(this.stats);
    this.stats = next;
    if (changed) this.emit('stats', this.getStats());
  }

  private onSourceState(state: VideoSourceState): void {
    if (this.inputKind) {
      const input = this.encoder?.settings.input;
      const now = state.online ? this.currentInput() : null;
      // a new size or device: a new encoder (started once the old one is gone)
      if (input && JSON.stringify(input) !== JSON.stringify(now)) {
        this.restartEncoder(state.online ? 'source input changed' : 'source offline');
      } else if (state.online) this.ensureRunning();
      return;
    }
    if (state.online && this.viewers.size + this.warmers + this.raw.size > 0) this.ensureRunning();
    if (!state.online) this.capturing = false;
    else if (!this.encoder) this.schedulePrime();
  }

  private async shutdown(): Promise<void> {
    this.capturing = false;
    this.retireDecoder();
    // a source that fails to stop must not keep ffmpeg alive (or reject in a timer)
    if (!this.inputKind) {
      await this.source
        .stopCapture()
        .catch((err: unknown) => this.log.warn({ err }, 'video source failed to stop'));
    }
    const enc = this.encoder;
    this.encoder = null;
    this.dropHeld();
    this.gop.clear();
    this.stats.encoderOnline = false;
    if (enc) {
      if (!this.disposed) this.startSpare(enc.settings);
      await this.retire(enc);
    }
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    clearInterval(this.statsTimer);
    if (this.lingerTimer) clearTimeout(this.lingerTimer);
    if (this.h264LingerTimer) clearTimeout(this.h264LingerTimer);
    if (this.startTimer) clearTimeout(this.startTimer);
    if (this.primeTimer) clearTimeout(this.primeTimer);
    this.raw.clear();
    this.offSource();
    this.viewers.clear();
    const spare = this.spare;
    this.spare = null;
    if (spare) void this.retire(spare);
    await this.shutdown();
    await Promise.all([...this.retiring]);
  }
}

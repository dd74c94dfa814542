/**
 * The streamer: device-wide video parameters (persisted), the `streamer` state of
 * `/api/streamer` and the `streamer` event, and the knobs of `/api/streamer/set_params`.
 * Also kvmd's snapshot (take, save, load, remove) and the MJPEG clients of ustreamer's
 * `/streamer/stream` (their options, frame rates and cap), both fed by the JPEG path
 * (media/jpeg-hub.ts).
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import {
  STREAMER_LIMITS,
  type MjpegClientStat,
  type SavedSnapshot,
  type StreamerParams,
  type StreamerState,
  type VideoProcessing,
} from '@kvm/protocol';
import { ServiceUnavailableError } from '../errors';
import { SILENT_LOGGER, type Logger } from '../log';
import type { RawFrame, VideoSource } from '../drivers/video/types';
import type { Jpeg } from '../media/jpeg';
import { DEFAULT_JPEG_QUALITY, JpegHub } from '../media/jpeg-hub';
import type { VideoHub } from '../media/video-hub';
import { CorruptFileError, JsonFile } from '../storage/json-store';
import type { StateEvent, StateProvider } from '../ws/state-registry';

/** SPEC 3 default quality MEDIUM: preset 1 = 2000 kbit/s, gop 30; 30 fps. */
export const DEFAULT_STREAMER_PARAMS: StreamerParams = {
  h264_bitrate: 2000,
  h264_gop: 30,
  desired_fps: 30,
  video_processing: 'quality_first',
  quality: DEFAULT_JPEG_QUALITY,
};

function clamp(v: unknown, lim: { min: number; max: number }, fallback: number): number {
  return typeof v === 'number' && Number.isInteger(v) && v >= lim.min && v <= lim.max
    ? v
    : fallback;
}

/** The keys of a stored object whose values were refused (and replaced by defaults). */
function refusedKeys(raw: Record<string, unknown>, parsed: StreamerParams): string[] {
  return (Object.keys(DEFAULT_STREAMER_PARAMS) as Array<keyof StreamerParams>).filter(
    (k) => k in raw && raw[k] !== parsed[k],
  );
}

function parseParams(raw: unknown): StreamerParams {
  const r = (typeof raw === 'object' && raw !== null ? raw : {}) as Partial<StreamerParams>;
  const d = DEFAULT_STREAMER_PARAMS;
  return {
    h264_bitrate: clamp(r.h264_bitrate, STREAMER_LIMITS.h264_bitrate, d.h264_bitrate),
    h264_gop: clamp(r.h264_gop, STREAMER_LIMITS.h264_gop, d.h264_gop),
    desired_fps: clamp(r.desired_fps, STREAMER_LIMITS.desired_fps, d.desired_fps),
    video_processing:
      r.video_processing === 'low_latency_first' ? 'low_latency_first' : 'quality_first',
    quality: clamp(r.quality, STREAMER_LIMITS.quality, d.quality),
  };
}

export function hubParams(p: StreamerParams): {
  bitrateKbps: number;
  gop: number;
  fps: number;
  processing: VideoProcessing;
} {
  return {
    bitrateKbps: p.h264_bitrate,
    gop: p.h264_gop,
    // ustreamer's 0: the most the source gives
    fps: p.desired_fps === 0 ? STREAMER_LIMITS.desired_fps.max : p.desired_fps,
    processing: p.video_processing,
  };
}

/** kvmd's UnavailableError: no picture (offline source, no frame in time, nothing saved). */
export class UnavailableError extends ServiceUnavailableError {
  static override readonly defaultMessage = 'Service Unavailable';
}

/** Ours: `/streamer/stream` already has MAX_MJPEG_CLIENTS clients. */
export class MjpegClientsLimitError extends ServiceUnavailableError {}

/** MJPEG clients at once (each costs a socket buffer of one picture and its share of sends). */
export const MAX_MJPEG_CLIENTS = 8;

/** A picture as kvmd's snapshot carries it: ustreamer's headers with it. */
export interface Snapshot extends SavedSnapshot {
  data: Buffer;
  /** ustreamer's snapshot headers kvmd passes on, sorted by name as kvmd does */
  headers: Array<[string, string]>;
}

export type MjpegClientOptions = Omit<MjpegClientStat, 'fps'>;

/** One `/streamer/stream` client: options, id (hex, as ustreamer's) and frame counter. */
export interface MjpegClient extends MjpegClientOptions {
  readonly id: string;
  /** pictures sent in the current second */
  sent: number;
  fps: number;
}

/** CLOCK_MONOTONIC seconds (ustreamer's grab/encode timestamps) of a performance.now() time. */
const monotonicOffsetMs = Number(process.hrtime.bigint() / 1000n) / 1000 - performance.now();
export function monotonicS(perfMs: number): string {
  return ((perfMs + monotonicOffsetMs) / 1000).toFixed(6);
}
export function realTimeS(): string {
  return (Date.now() / 1000).toFixed(6);
}

export const NO_CACHE_HEADERS: Array<[string, string]> = [
  [
    'Cache-Control',
    'no-store, no-cache, must-revalidate, proxy-revalidate, pre-check=0, post-check=0, max-age=0',
  ],
  ['Pragma', 'no-cache'],
  ['Expires', 'Mon, 3 Jan 2000 12:34:56 GMT'],
];

/** ustreamer's `/snapshot` headers for a picture (server.c `_http_send_snapshot`). */
export function ustreamerSnapshotHeaders(jpeg: Jpeg): Array<[string, string]> {
  return [
    ...NO_CACHE_HEADERS,
    ['X-Timestamp', realTimeS()],
    ['X-UStreamer-Online', String(jpeg.online)],
    ['X-UStreamer-Width', String(jpeg.width)],
    ['X-UStreamer-Height', String(jpeg.height)],
    ['X-UStreamer-Grab-Begin-Timestamp', monotonicS(jpeg.capturedAt)],
    ['X-UStreamer-Grab-End-Timestamp', monotonicS(jpeg.capturedAt)],
    ['X-UStreamer-Encode-Begin-Timestamp', monotonicS(jpeg.encodeBeginAt)],
    ['X-UStreamer-Encode-End-Timestamp', monotonicS(jpeg.encodeEndAt)],
    ['X-UStreamer-Send-Timestamp', monotonicS(performance.now())],
  ];
}

export class StreamerService {
  private listeners = new Set<(e: StateEvent) => void>();
  private readonly offs: Array<() => void> = [];
  private saved: Snapshot | null = null;
  private readonly mjpeg = new Map<string, MjpegClient>();
  private queued = { count: 0, fps: 0 };
  private rollTimer: NodeJS.Timeout | null = null;

  private constructor(
    private params: StreamerParams,
    private readonly file: JsonFile<StreamerParams>,
    private readonly source: VideoSource,
    readonly video: VideoHub,
    readonly jpeg: JpegHub,
  ) {
    this.offs.push(source.onState(() => this.changed()));
    const onStats = (): void => this.changed();
    video.on('stats', onStats);
    this.offs.push(() => video.off('stats', onStats));
    const onJpeg = (): void => {
      if (this.mjpeg.size > 0) this.queued.count += 1;
    };
    jpeg.on('jpeg', onJpeg);
    this.offs.push(() => jpeg.off('jpeg', onJpeg));
  }

  /**
   * Reads `streamer.json`. The video parameters are a preference, and the video is how the
   * owner reaches the machine: no state of this file stops the server.
   * - missing: defaults, silently (first start);
   * - not JSON, or not an object: defaults and a warning; the file is renamed to
   *   `streamer.json.bad` (kept for a look, replacing an older one), the next change writes
   *   a new one;
   * - a value out of STREAMER_LIMITS or of the wrong type: that key's default and a warning;
   * - unreadable (EACCES, EIO, EISDIR...): defaults and an error in the log; the file is left
   *   as it is, and the next `set_params` replaces it (atomically) or answers the write error.
   */
  static async loadParams(
    dataDir: string,
    log: Logger = SILENT_LOGGER,
  ): Promise<{ params: StreamerParams; file: JsonFile<StreamerParams> }> {
    const path = join(dataDir, 'streamer.json');
    // The keys the stored object had refused, found while the file is parsed.
    let refused: string[] = [];
    const file = new JsonFile<StreamerParams>(
      path,
      (raw) => {
        if (raw === undefined) return { ...DEFAULT_STREAMER_PARAMS };
        if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
          throw new Error('not an object');
        }
        const parsed = parseParams(raw);
        refused = refusedKeys(raw as Record<string, unknown>, parsed);
        return parsed;
      },
      { asideName: (p) => `${p}.bad` },
    );
    const defaults = { params: { ...DEFAULT_STREAMER_PARAMS }, file };
    let params: StreamerParams;
    try {
      params = await file.load();
    } catch (err) {
      if (!(err instanceof CorruptFileError)) {
        log.error(
          { err, path },
          'streamer.json cannot be read: default video parameters until the next change',
        );
        return defaults;
      }
      const aside = await file.setAside().then(
        (name) => name,
        (e: unknown) => {
          log.error({ err: e, path }, 'corrupt streamer.json cannot be moved aside');
          return null;
        },
      );
      log.warn(
        { path, ...(aside !== null ? { keptAs: aside } : {}) },
        'streamer.json is corrupt: default video parameters',
      );
      return defaults;
    }
    if (refused.length > 0) {
      log.warn({ path, keys: refused }, 'streamer.json: invalid values replaced by defaults');
    }
    return { params, file };
  }

  static create(
    loaded: { params: StreamerParams; file: JsonFile<StreamerParams> },
    source: VideoSource,
    hub: VideoHub,
    jpeg: JpegHub = new JpegHub(hub, SILENT_LOGGER),
  ): StreamerService {
    jpeg.setQuality(loaded.params.quality);
    return new StreamerService(loaded.params, loaded.file, source, hub, jpeg);
  }

  /** The screen shows a picture (ustreamer's `online`): the source runs and has a signal. */
  get online(): boolean {
    const src = this.source.getState();
    return src.online && src.signal;
  }

  /** The current picture, or ustreamer's "no live video" one while offline; null: none in time. */
  async currentJpeg(): Promise<Jpeg | null> {
    if (!this.online) {
      const src = this.source.getState();
      const data = await this.jpeg.placeholderJpeg(src.width, src.height).catch(() => null);
      if (!data) return null;
      const now = performance.now();
      const w = src.width > 0 && src.width <= 8192 ? src.width : 640;
      const h = src.height > 0 && src.height <= 8192 ? src.height : 480;
      return {
        data,
        width: w,
        height: h,
        online: false,
        capturedAt: now,
        encodeBeginAt: now,
        encodeEndAt: now,
      };
    }
    return this.jpeg.snapshot();
  }

  /**
   * The next raw frame of the live picture (a copy), for the OCR; null when offline or when
   * none comes within `timeoutMs` (the caller then reads the snapshot's JPEG).
   */
  currentFrame(timeoutMs = 1000): Promise<RawFrame | null> {
    if (!this.online) return Promise.resolve(null);
    return new Promise((resolve) => {
      let off: (() => void) | null = null;
      let done = false;
      const finish = (frame: RawFrame | null): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        off?.();
        resolve(frame);
      };
      const timer = setTimeout(() => finish(null), timeoutMs);
      off = this.video.subscribeRaw((f) => {
        const copy: RawFrame | null = done
          ? null
          : {
              width: f.width,
              height: f.height,
              format: f.format,
              capturedAt: f.capturedAt,
              data: Buffer.from(f.data),
            };
        f.release?.();
        if (copy) finish(copy);
      });
      // a frame delivered during subscribeRaw itself found `off` still null
      if (done) off();
    });
  }

  /**
   * kvmd's `take_snapshot`: `load` answers the saved one; otherwise a new picture, null when
   * offline without `allowOffline` or when none comes in time (the route's 503).
   */
  async takeSnapshot(opts: {
    save: boolean;
    load: boolean;
    allowOffline: boolean;
  }): Promise<Snapshot | null> {
    if (opts.load) return this.saved;
    const jpeg = await this.currentJpeg();
    if (!jpeg || (!jpeg.online && !opts.allowOffline)) return null;
    const headers = ustreamerSnapshotHeaders(jpeg).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const snap: Snapshot = {
      online: jpeg.online,
      width: jpeg.width,
      height: jpeg.height,
      data: jpeg.data,
      headers,
    };
    if (opts.save) {
      this.saved = snap;
      this.changed();
    }
    return snap;
  }

  removeSnapshot(): void {
    if (!this.saved) return;
    this.saved = null;
    this.changed();
  }

  /** A new `/streamer/stream` client; MjpegClientsLimitError at the cap. */
  addMjpegClient(opts: MjpegClientOptions): MjpegClient {
    if (this.mjpeg.size >= MAX_MJPEG_CLIENTS) {
      throw new MjpegClientsLimitError(
        `Too many MJPEG clients: at most ${MAX_MJPEG_CLIENTS} at once`,
      );
    }
    let id = randomBytes(8).toString('hex').replace(/^0+/, '');
    while (id === '' || this.mjpeg.has(id)) id = randomBytes(8).toString('hex');
    const client: MjpegClient = { ...opts, id, sent: 0, fps: 0 };
    this.mjpeg.set(id, client);
    if (!this.rollTimer) {
      this.rollTimer = setInterval(() => this.rollMjpeg(), 1000);
      this.rollTimer.unref();
    }
    this.changed();
    return client;
  }

  removeMjpegClient(client: MjpegClient): void {
    if (!this.mjpeg.delete(client.id)) return;
    if (this.mjpeg.size === 0 && this.rollTimer) {
      clearInterval(this.rollTimer);
      this.rollTimer = null;
      this.queued = { count: 0, fps: 0 };
    }
    this.changed();
  }

  get mjpegClients(): number {
    return this.mjpeg.size;
  }

  /** kvmd's `streamer/reset`: new encoders and a new capture. */
  async reset(): Promise<void> {
    this.jpeg.reset();
    await this.video.reset();
    this.changed();
  }

  private rollMjpeg(): void {
    for (const c of this.mjpeg.values()) {
      c.fps = c.sent;
      c.sent = 0;
    }
    this.queued.fps = this.queued.count;
    this.queued.count = 0;
  }

  /** ustreamer's `/state` `result` (server.c `_http_callback_state`). */
  ustreamerState(): Record<string, unknown> {
    const st = this.getState().streamer!;
    return {
      instance_id: st.instance_id,
      encoder: st.encoder,
      h264: {
        bitrate: this.params.h264_bitrate,
        gop: this.params.h264_gop,
        online: st.h264.online,
        fps: st.h264.fps,
      },
      sinks: st.sinks,
      source: {
        resolution: st.source.resolution,
        online: this.online,
        desired_fps: st.source.desired_fps,
        captured_fps: st.source.captured_fps,
      },
      stream: st.stream,
    };
  }

  getParams(): StreamerParams {
    return { ...this.params };
  }

  async setParams(patch: Partial<StreamerParams>): Promise<StreamerParams> {
    const next = { ...this.params, ...patch };
    if (JSON.stringify(next) === JSON.stringify(this.params)) return this.getParams();
    await this.file.save(next);
    this.params = next;
    this.video.setParams(hubParams(next));
    this.jpeg.setQuality(next.quality);
    this.changed();
    return this.getParams();
  }

  getState(): StreamerState {
    const src = this.source.getState();
    const stats = this.video.getStats();
    return {
      features: { h264: true, h265: false, resolution: false, quality: true },
      limits: STREAMER_LIMITS,
      params: this.getParams(),
      // the hub runs the stored parameters as soon as set_params returns
      applied: this.getParams(),
      streamer: {
        source: {
          online: src.online,
          resolution: { width: src.width, height: src.height },
          // whole frames a second, as ustreamer counts them (kvmd and aiopikvm expect ints)
          captured_fps: Math.round(stats.capturedFps),
          desired_fps: this.params.desired_fps,
        },
        h264: {
          bitrate: stats.bitrate,
          gop: this.params.h264_gop,
          online: stats.encoderOnline,
          fps: Math.round(stats.fps),
          profile_level_id: stats.profileLevelId,
        },
        hdmi: { signal: src.online && src.signal },
        instance_id: '',
        sinks: {
          jpeg: { has_clients: this.jpeg.active },
          h264: { has_clients: stats.viewers > 0 },
        },
        stream: {
          clients: this.mjpeg.size,
          clients_stat: Object.fromEntries(
            [...this.mjpeg.values()].map((c) => [
              c.id,
              {
                fps: c.fps,
                extra_headers: c.extra_headers,
                advance_headers: c.advance_headers,
                dual_final_frames: c.dual_final_frames,
                zero_data: c.zero_data,
                key: c.key,
              },
            ]),
          ),
          queued_fps: this.queued.fps,
        },
        encoder: { type: 'libx264', quality: this.params.quality },
        drops: this.video.getDrops(),
        ...(src.capture ? { capture: src.capture } : {}),
      },
      snapshot: {
        saved: this.saved
          ? { online: this.saved.online, width: this.saved.width, height: this.saved.height }
          : null,
      },
    };
  }

  provider(): StateProvider {
    return {
      name: 'streamer',
      snapshot: () => [{ event_type: 'streamer', event: this.getState() }],
      subscribe: (emit) => {
        this.listeners.add(emit);
        return () => this.listeners.delete(emit);
      },
    };
  }

  private changed(): void {
    const event = { event_type: 'streamer', event: this.getState() };
    for (const l of this.listeners) l(event);
  }

  dispose(): void {
    this.offs.forEach((off) => off());
    this.listeners.clear();
    if (this.rollTimer) clearInterval(this.rollTimer);
    this.rollTimer = null;
  }
}

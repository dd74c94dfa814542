/**
 * The streamer: device-wide video parameters (persisted), the `streamer` state of
 * `/api/streamer` and the `streamer` event, and the knobs of `/api/streamer/set_params`.
 */
import { readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import {
  STREAMER_LIMITS,
  type StreamerParams,
  type StreamerState,
  type VideoProcessing,
} from '@kvm/protocol';
import { SILENT_LOGGER, type Logger } from '../log';
import type { VideoSource } from '../drivers/video/types';
import type { VideoHub } from '../media/video-hub';
import { JsonFile } from '../storage/json-store';
import type { StateEvent, StateProvider } from '../ws/state-registry';

/** SPEC 3 default quality MEDIUM: preset 1 = 2000 kbit/s, gop 30; 30 fps. */
export const DEFAULT_STREAMER_PARAMS: StreamerParams = {
  h264_bitrate: 2000,
  h264_gop: 30,
  desired_fps: 30,
  video_processing: 'quality_first',
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
    fps: p.desired_fps,
    processing: p.video_processing,
  };
}

export class StreamerService {
  private listeners = new Set<(e: StateEvent) => void>();
  private readonly offs: Array<() => void> = [];

  private constructor(
    private params: StreamerParams,
    private readonly file: JsonFile<StreamerParams>,
    private readonly source: VideoSource,
    readonly video: VideoHub,
  ) {
    this.offs.push(source.onState(() => this.changed()));
    const onStats = (): void => this.changed();
    video.on('stats', onStats);
    this.offs.push(() => video.off('stats', onStats));
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
    const file = new JsonFile<StreamerParams>(path, parseParams);
    const defaults = { params: { ...DEFAULT_STREAMER_PARAMS }, file };
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return defaults;
      log.error(
        { err, path },
        'streamer.json cannot be read: default video parameters until the next change',
      );
      return defaults;
    }
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      raw = undefined;
    }
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      const aside = `${path}.bad`;
      const moved = await rename(path, aside).then(
        () => true,
        (err: unknown) => {
          log.error({ err, path }, 'corrupt streamer.json cannot be moved aside');
          return false;
        },
      );
      log.warn(
        { path, ...(moved ? { keptAs: aside } : {}) },
        'streamer.json is corrupt: default video parameters',
      );
      return defaults;
    }
    const params = parseParams(raw);
    const refused = refusedKeys(raw as Record<string, unknown>, params);
    if (refused.length > 0) {
      log.warn({ path, keys: refused }, 'streamer.json: invalid values replaced by defaults');
    }
    return { params, file };
  }

  static create(
    loaded: { params: StreamerParams; file: JsonFile<StreamerParams> },
    source: VideoSource,
    hub: VideoHub,
  ): StreamerService {
    return new StreamerService(loaded.params, loaded.file, source, hub);
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
    this.changed();
    return this.getParams();
  }

  getState(): StreamerState {
    const src = this.source.getState();
    const stats = this.video.getStats();
    return {
      features: { h264: true, h265: false, resolution: false, quality: false },
      limits: STREAMER_LIMITS,
      params: this.getParams(),
      streamer: {
        source: {
          online: src.online,
          resolution: { width: src.width, height: src.height },
          captured_fps: stats.capturedFps,
          desired_fps: this.params.desired_fps,
        },
        h264: {
          bitrate: stats.bitrate,
          gop: this.params.h264_gop,
          online: stats.encoderOnline,
          fps: stats.fps,
          profile_level_id: stats.profileLevelId,
        },
        hdmi: { signal: src.online && src.signal },
        stream: { clients: stats.viewers },
        encoder: { type: 'libx264', quality: 0 },
        drops: this.video.getDrops(),
      },
      snapshot: { saved: null },
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
  }
}

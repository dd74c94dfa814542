/**
 * The streamer: device-wide video parameters (persisted), the `streamer` state of
 * `/api/streamer` and the `streamer` event, and the knobs of `/api/streamer/set_params`.
 */
import { join } from 'node:path';
import {
  STREAMER_LIMITS,
  type StreamerParams,
  type StreamerState,
  type VideoProcessing,
} from '@kvm/protocol';
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
    readonly hub: VideoHub,
  ) {
    this.offs.push(source.onState(() => this.changed()));
    const onStats = (): void => this.changed();
    hub.on('stats', onStats);
    this.offs.push(() => hub.off('stats', onStats));
  }

  static async loadParams(
    dataDir: string,
  ): Promise<{ params: StreamerParams; file: JsonFile<StreamerParams> }> {
    const file = new JsonFile<StreamerParams>(join(dataDir, 'streamer.json'), parseParams);
    let params = DEFAULT_STREAMER_PARAMS;
    try {
      params = await file.load();
    } catch {
      // corrupt file: defaults, rewritten on the next change
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
    this.hub.setParams(hubParams(next));
    this.changed();
    return this.getParams();
  }

  getState(): StreamerState {
    const src = this.source.getState();
    const stats = this.hub.getStats();
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

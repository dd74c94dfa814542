/**
 * Streamer state: `GET /api/streamer` and the `streamer` event (wire-protocol.md 1.7, the
 * GL/ustreamer shape). The event always carries whole `params` and `streamer` objects, so a
 * client that deep-merges partial kvmd events and one that replaces both work.
 */
import type { VideoProcessing } from './enums';

export interface StreamerParams {
  /** kbit/s (SPEC 3 presets: 500, 2000, 5000, 8000). */
  h264_bitrate: number;
  /** frames between key frames. */
  h264_gop: number;
  /** frames per second the source is captured at. */
  desired_fps: number;
  /** SPEC 3 video processing: which encoder settings apply. */
  video_processing: VideoProcessing;
  /** kvmd's `quality`: the JPEG quality of snapshots and MJPEG (ustreamer's), 1..100. */
  quality: number;
}

export const STREAMER_LIMITS = {
  h264_bitrate: { min: 25, max: 20_000 },
  h264_gop: { min: 0, max: 240 },
  /** 0: as fast as the source gives (ustreamer's `--desired-fps 0`), which is this max. */
  desired_fps: { min: 0, max: 60 },
  quality: { min: 1, max: 100 },
} as const;

export interface StreamerRuntime {
  source: {
    online: boolean;
    resolution: { width: number; height: number };
    captured_fps: number;
    desired_fps: number;
  };
  h264: {
    /** bits per second actually produced over the last second (GL reports bps here). */
    bitrate: number;
    gop: number;
    /** the encoder is running and producing units */
    online: boolean;
    fps: number;
    profile_level_id: string;
  };
  /** HDMI signal: false while the remote computer shows nothing (powered off). */
  hdmi: { signal: boolean };
  /** ustreamer's `--instance-id` (kvmd 4.197+ reads it; empty as ustreamer's default). */
  instance_id: string;
  /** Who takes each kind of output (ustreamer /state, kvmd 4.197+). */
  sinks: { jpeg: { has_clients: boolean }; h264: { has_clients: boolean } };
  /**
   * ustreamer's MJPEG clients (`/streamer/stream`): how many, each one's options and frame
   * rate by its hex id, and the pictures a second queued to them.
   */
  stream: { clients: number; clients_stat: Record<string, MjpegClientStat>; queued_fps: number };
  /** `quality`: the JPEG quality of snapshots and MJPEG (1..100). */
  encoder: { type: string; quality: number };
  /** Ours, not kvmd's (absent on kvmd): frames that never reached a viewer, by reason. */
  drops?: StreamerDrops;
  /** Ours (absent on kvmd and on sources that are no capture device): see CaptureState. */
  capture?: CaptureState;
}

/**
 * What a V4L2 capture device (`video.type: v4l2`) says of its input (docs/events.md):
 * - `signal`: a picture at `width`x`height`, `hz`;
 * - `no_signal` / `no_lock` / `out_of_range`: the HDMI receiver's ENOLINK / ENOLCK / ERANGE
 *   (`hdmi.signal` false: the console says SPEC's "No HDMI signal" after 5 s);
 * - `unsupported_mode`: timings the encoder cannot take (a side 0 or beyond `max_width`/`max_height`);
 * - `switching`: new timings are being set (the encoder restarts at the new size; viewers stay);
 * - `no_device`: the device node is gone (unplugged); `error`: anything else (`error` says it).
 */
export type CaptureStatus =
  | 'signal'
  | 'no_signal'
  | 'no_lock'
  | 'out_of_range'
  | 'unsupported_mode'
  | 'switching'
  | 'no_device'
  | 'error';

export interface CaptureState {
  /** The device node, e.g. `/dev/video0`. */
  device: string;
  /** `dv`: an HDMI receiver with DV timings; `fixed`: a USB dongle (UVC), its largest size; null: unknown. */
  kind: 'dv' | 'fixed' | null;
  status: CaptureStatus;
  /** The picture's size (the last one known while there is none). */
  width: number;
  height: number;
  /** Refresh rate from the DV timings (a dongle's frame rate), 2 decimals; null when unknown. */
  hz: number | null;
  /** ffmpeg's name of the captured pixel format (`yuyv422`, `mjpeg`...), or null. */
  format: string | null;
  /** What went wrong, in a sentence; null while all is well. */
  error: string | null;
}

/**
 * Frames (raw or encoded) that never reached a viewer since the server started, by reason
 * (docs/events.md, `streamer`):
 * - `source_busy`: the encoder already held its most frames in flight (it is behind), or the
 *   source skipped the frame because its consumers still held all its buffers;
 * - `encoder_offline`: no ffmpeg ran to take the frame (starting, or waiting to restart);
 * - `encoder_restart`: the frame was in an ffmpeg that was restarted or died;
 * - `gop_cache_overflow`: a unit the GOP cache could not keep for a late joiner (a GOP that
 *   passed the cache's bound is dropped whole);
 * - `viewer_lagging`: a transport skipped the unit for a slow viewer, to the next key frame
 *   (summed over viewers).
 */
export interface StreamerDrops {
  source_busy: number;
  encoder_offline: number;
  encoder_restart: number;
  gop_cache_overflow: number;
  viewer_lagging: number;
}

/** One MJPEG client of `/streamer/stream` in ustreamer's `/state`. */
export interface MjpegClientStat {
  fps: number;
  extra_headers: boolean;
  advance_headers: boolean;
  dual_final_frames: boolean;
  zero_data: boolean;
  /** the client's `key` query value, "0" without one */
  key: string;
}

/** kvmd's saved snapshot (`GET /api/streamer/snapshot?save=1`), without its picture. */
export interface SavedSnapshot {
  online: boolean;
  width: number;
  height: number;
}

export interface StreamerState {
  features: { h264: boolean; h265: boolean; resolution: boolean; quality: boolean };
  limits: typeof STREAMER_LIMITS;
  params: StreamerParams;
  /** kvmd 4.197+: the parameters the running streamer actually uses. */
  applied: StreamerParams;
  /** null while no source driver runs at all (target without video). */
  streamer: StreamerRuntime | null;
  snapshot: { saved: SavedSnapshot | null };
}

/** `/api/turn/get_turn` and the `turn` event (wire-protocol.md 3.3, 5.11). */
export interface TurnState {
  username: string;
  password: string;
  ttl: number;
  uris: string[];
}

/** SPEC 7: the default ICE server of real deployments (never used by tests: they set []). */
export const DEFAULT_STUN_URL = 'stun:stun.l.google.com:19302';

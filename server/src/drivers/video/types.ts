/**
 * The video source driver: where the picture of the remote computer's screen comes from (QEMU's
 * VNC framebuffer, the in-process testbed screen, a video file, later V4L2). The video hub
 * (media/video-hub.ts) turns it into H.264.
 *
 * State table:
 * | online | signal | meaning                                                     |
 * |--------|--------|-------------------------------------------------------------|
 * | false  | false  | source not running / not reachable (no VM, VNC down, no file)|
 * | true   | false  | reachable but no picture: the remote computer is powered off|
 * | true   | true   | a picture at `width` x `height`                             |
 *
 * How the picture reaches the encoder (`VideoSource.input()`, fixed for a source's life):
 * | kind           | who reads the picture                | raw frames in this process        | the hub calls              |
 * |----------------|--------------------------------------|-----------------------------------|----------------------------|
 * | `frames`       | the source; pushes `RawFrame`s       | every frame                       | `startCapture`/`stopCapture` |
 * | `ffmpeg-input` | the encoder's ffmpeg, with `args`     | none for H.264; the JPEG path's are decoded from the H.264 | `input()` at each encoder start |
 * A hardware encoder's pipeline (issue 24 and later) is a third kind of this union.
 */
import type { CaptureState } from '@kvm/protocol';

/** Pixel layouts a source may deliver; each is what ffmpeg's `-pix_fmt` calls it. */
export type PixelFormat = 'yuv420p' | 'bgr0' | 'rgb0' | 'rgb24';

export interface RawFrame {
  width: number;
  height: number;
  format: PixelFormat;
  /** Tightly packed pixels (no row padding); for yuv420p the three planes back to back. */
  data: Buffer;
  /** When the picture was captured, ms on the performance.now() clock of this process. */
  capturedAt: number;
  /**
   * Frames the source skipped just before this one because its consumers still held all its
   * buffers (a capture device's full queue); the hub counts them as `source_busy` drops.
   */
  skipped?: number;
  /**
   * Lends `data` back to the source once the consumer is done with it (written to the encoder's
   * pipe, or dropped), so the source can reuse the buffer instead of leaving one large garbage
   * buffer a frame for the GC. Optional for both sides: a frame never released is collected.
   */
  release?: () => void;
}

export interface VideoSourceState {
  online: boolean;
  /** HDMI signal (SPEC 3 streamer state): false while the remote computer shows nothing. */
  signal: boolean;
  width: number;
  height: number;
  /** A capture device's own account of its input (`v4l2`); absent for the other sources. */
  capture?: CaptureState;
}

/**
 * ffmpeg reads the source itself: `args` are its input options up to and including `-i`, e.g.
 * `-f v4l2 -input_format yuyv422 -video_size 1280x720 -framerate 30 -i /dev/video0`, or
 * `-re -stream_loop -1 -i file:/path` (no `-hide_banner`/`-loglevel`: the encoder adds its own).
 */
export interface FfmpegInput {
  readonly kind: 'ffmpeg-input';
  readonly args: readonly string[];
  /** The picture size ffmpeg will decode from it (the encoder pads odd sizes as for frames). */
  readonly width: number;
  readonly height: number;
  /** Frames per second the input delivers; above the hub's rate the encoder drops to that. */
  readonly fps: number;
}

/** See the second table at the top. */
export type VideoInput = { readonly kind: 'frames' } | FfmpegInput;

export interface VideoSource {
  /** Driver name for logs and /api/info (`qemu`, `testbed`, `file`). */
  readonly name: string;
  /**
   * A `frames` source whose frames always come in one layout says which: with it and the
   * state's size the hub knows the encoder's settings before any frame, and starts its spare
   * ffmpeg before the first viewer (media/video-hub.ts, SPARE). Absent: the spare waits for
   * an encoder to have run.
   */
  readonly pixelFormat?: PixelFormat;
  getState(): VideoSourceState;
  /**
   * How the encoder gets the picture; absent means `{ kind: 'frames' }`. The kind never changes
   * for one source; an `ffmpeg-input`'s args and size are the current ones (asked again at every
   * encoder start, and when the state changes), valid while `online`. `fps` is the hub's rate.
   */
  input?(fps: number): VideoInput;
  /** Calls `listener` with every state change; returns the unsubscribe function. */
  onState(listener: (state: VideoSourceState) => void): () => void;
  /**
   * Starts delivering frames to `onFrame`, at most `fps` per second and at least one per
   * second while nothing changes (the encoder needs a steady input). Idempotent; a second call
   * replaces the callback and the rate. Never called for an `ffmpeg-input` source.
   */
  startCapture(onFrame: (frame: RawFrame) => void, fps: number): Promise<void>;
  /** Stops delivering frames (nobody watches). Idempotent. */
  stopCapture(): Promise<void>;
  init(): Promise<void>;
  dispose(): Promise<void>;
}

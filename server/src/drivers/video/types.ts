/**
 * The video source driver: where raw frames of the remote computer's screen come from (QEMU's
 * VNC framebuffer, the in-process testbed screen, later V4L2). The encoder pipeline
 * (media/encoder.ts) turns its frames into H.264.
 *
 * State table:
 * | online | signal | meaning                                                     |
 * |--------|--------|-------------------------------------------------------------|
 * | false  | false  | source not running / not reachable (no VM, VNC down)        |
 * | true   | false  | reachable but no picture: the remote computer is powered off|
 * | true   | true   | frames flowing at `width` x `height`                        |
 */

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
}

export interface VideoSource {
  /** Driver name for logs and /api/info (`qemu`, `testbed`). */
  readonly name: string;
  getState(): VideoSourceState;
  /** Calls `listener` with every state change; returns the unsubscribe function. */
  onState(listener: (state: VideoSourceState) => void): () => void;
  /**
   * Starts delivering frames to `onFrame`, at most `fps` per second and at least one per
   * second while nothing changes (the encoder needs a steady input). Idempotent; a second call
   * replaces the callback and the rate.
   */
  startCapture(onFrame: (frame: RawFrame) => void, fps: number): Promise<void>;
  /** Stops delivering frames (nobody watches). Idempotent. */
  stopCapture(): Promise<void>;
  init(): Promise<void>;
  dispose(): Promise<void>;
}

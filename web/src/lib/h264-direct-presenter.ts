/**
 * Direct H.264's presentation: the newest decoded frame waits here for the next animation frame
 * (or is drawn at once without a scheduler) and is then drawn on the canvas and closed. A frame
 * that a newer one overtakes is closed undrawn: never queue behind the remote screen. What is
 * counted about it is the pipeline's business (h264-direct-pipeline.ts); this says what happened.
 */
import type { VideoFrameLike } from './h264-direct-decoder';

/** The parts of a canvas used here: an HTMLCanvasElement or an OffscreenCanvas. */
export interface CanvasLike {
  width: number;
  height: number;
  getContext(type: '2d'): {
    drawImage(image: never, dx: number, dy: number, dw: number, dh: number): void;
  } | null;
}

export interface PresenterOptions {
  /** Without it, each frame is drawn as it is offered. */
  requestFrame: ((callback: (time?: number) => void) => number) | null;
  cancelFrame?: (id: number) => void;
  /** Animation frames are asked for while this says so. */
  running: () => boolean;
  /**
   * A waiting frame was drawn (true) or failed to draw (false); either way it is closed.
   * `timestamp`: the frame's (us); `time`: the animation frame's time, when drawn in one.
   */
  drawn: (presented: boolean, timestamp?: number, time?: number) => void;
}

export class FramePresenter {
  private readonly options: PresenterOptions;
  /** The newest decoded frame not drawn yet. */
  private pending: VideoFrameLike | null = null;
  private canvas: CanvasLike | null = null;
  private frameRequest: number | null = null;

  constructor(options: PresenterOptions) {
    this.options = options;
  }

  /** Frames are drawn on animation frames (else as they are offered). */
  get scheduled(): boolean {
    return this.options.requestFrame !== null;
  }

  get hasCanvas(): boolean {
    return this.canvas !== null;
  }

  /** The canvas the newest frame is drawn on (null detaches). */
  attach(canvas: CanvasLike | null): void {
    this.canvas = canvas;
  }

  /** The newest frame; true when it overtook one not drawn yet (closed here). */
  offer(frame: VideoFrameLike): boolean {
    const overtook = this.pending !== null;
    if (this.pending) this.pending.close();
    this.pending = frame;
    return overtook;
  }

  /** Closes the waiting frame undrawn; true when there was one. */
  discard(): boolean {
    if (!this.pending) return false;
    this.pending.close();
    this.pending = null;
    return true;
  }

  /** Asks for the next animation frame (once), which draws and asks again while running. */
  schedule(): void {
    const requestFrame = this.options.requestFrame;
    if (this.frameRequest !== null || !requestFrame || !this.options.running()) return;
    this.frameRequest = requestFrame((time) => {
      this.frameRequest = null;
      if (!this.options.running()) return;
      this.draw(time);
      this.schedule();
    });
  }

  /** Gives up the animation frame asked for. */
  cancel(): void {
    if (this.frameRequest !== null) this.options.cancelFrame?.(this.frameRequest);
    this.frameRequest = null;
  }

  /** Draws the waiting frame, if there is one and a canvas, and closes it. */
  draw(time?: number): void {
    const frame = this.pending;
    const canvas = this.canvas;
    if (!frame || !canvas) return;
    this.pending = null;
    let presented = false;
    const timestamp = frame.timestamp;
    try {
      if (canvas.width !== frame.displayWidth) canvas.width = frame.displayWidth;
      if (canvas.height !== frame.displayHeight) canvas.height = frame.displayHeight;
      canvas.getContext('2d')?.drawImage(frame as never, 0, 0, canvas.width, canvas.height);
      presented = true;
    } catch {
      // Not shown (the canvas or the frame went meanwhile): the pipeline counts it.
    } finally {
      frame.close();
    }
    this.options.drawn(presented, timestamp, time);
  }
}

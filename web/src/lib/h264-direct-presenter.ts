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
  /**
   * The canvas attached last shows a picture now: its first frame was drawn, or it was
   * attached in place of one that showed a picture and that picture was copied onto it. With a
   * scheduler, said on the animation frame after the drawing.
   */
  painted?: () => void;
}

export class FramePresenter {
  private readonly options: PresenterOptions;
  /** The newest decoded frame not drawn yet. */
  private pending: VideoFrameLike | null = null;
  private canvas: CanvasLike | null = null;
  /** The canvas that shows the last picture drawn (attached or not; null: none yet). */
  private pictured: CanvasLike | null = null;
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

  /**
   * The canvas the newest frame is drawn on (null detaches). A canvas that replaces the one
   * showing the last picture gets a copy of that picture at once, so a static remote screen
   * (no new frame for a while) does not leave it blank: the first frame preview hands over to
   * the view's canvas this way (features/video/first-frame-preview.ts).
   */
  attach(canvas: CanvasLike | null): void {
    this.canvas = canvas;
    const source = this.pictured;
    if (!canvas || !source) return;
    if (canvas === source) {
      this.announcePainted();
      return;
    }
    try {
      canvas.width = source.width;
      canvas.height = source.height;
      canvas.getContext('2d')?.drawImage(source as never, 0, 0, canvas.width, canvas.height);
    } catch {
      return; // the old canvas went meanwhile: the next frame paints this one
    }
    this.pictured = canvas;
    this.announcePainted();
  }

  /**
   * Says that the attached canvas shows a picture once the drawing can be on the screen. An
   * OffscreenCanvas hands what was drawn to the compositor (and to its placeholder <canvas> on
   * the page) at the end of the task or animation frame that drew it: with a scheduler, the
   * next animation frame comes after that. Void if another canvas was attached meanwhile. (A CI
   * run under load read the view's canvas blank as the first frame preview went.)
   */
  private announcePainted(): void {
    const requestFrame = this.options.requestFrame;
    if (!requestFrame) {
      this.options.painted?.();
      return;
    }
    const canvas = this.canvas;
    requestFrame(() => {
      if (this.canvas === canvas) this.options.painted?.();
    });
  }

  /** A canvas that left the page: its picture is not copied any more. */
  forget(canvas: CanvasLike): void {
    if (this.pictured === canvas) this.pictured = null;
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
    const first = presented && this.pictured !== canvas;
    if (presented) this.pictured = canvas;
    this.options.drawn(presented, timestamp, time);
    if (first) this.announcePainted();
  }
}

/**
 * The testbed's video source: renders TestbedPicture at the asked frame rate (a new frame
 * number every frame, so the encoder always has motion to encode) and hands copies of the
 * YUV buffer to the encoder. The copies come from a few spare buffers the encoder hands back
 * (RawFrame.release): a fresh 1.4 MB buffer a frame at 30 fps left 20-30 MB of garbage
 * resident between collections, a third of the server's idle memory with a console open.
 */
import { EventEmitter } from 'node:events';
import type { RawFrame, VideoSource, VideoSourceState } from './types';
import { TestbedPicture, testbedSizeOk } from '../../platform/testbed/screen';

export interface TestbedVideoOptions {
  width?: number;
  height?: number;
}

/**
 * Buffers kept for reuse: frames wait in the encoder's pipe one at a time, rarely two; a burst
 * beyond this allocates, and those buffers are left to the GC.
 */
const SPARE_FRAMES = 2;

export class TestbedVideo implements VideoSource {
  readonly name = 'testbed';
  readonly picture: TestbedPicture;
  private readonly events = new EventEmitter<{ state: [VideoSourceState] }>();
  private state: VideoSourceState;
  private timer: NodeJS.Timeout | null = null;
  private onFrame: ((frame: RawFrame) => void) | null = null;
  private intervalMs = 1000 / 30;
  private nextAt = 0;
  private frameNo = 0;
  /** Released frame buffers, reused by the next frames. */
  private readonly spare: Buffer[] = [];

  constructor(opts: TestbedVideoOptions = {}) {
    this.picture = new TestbedPicture(opts.width ?? 1280, opts.height ?? 720);
    this.state = {
      online: false,
      signal: false,
      width: this.picture.width,
      height: this.picture.height,
    };
  }

  getState(): VideoSourceState {
    return { ...this.state };
  }

  onState(listener: (state: VideoSourceState) => void): () => void {
    this.events.on('state', listener);
    return () => this.events.off('state', listener);
  }

  async init(): Promise<void> {
    this.setState({ online: true, signal: true });
  }

  /**
   * The test screen's new mode (its monitor took an EDID): the next frame has the new size.
   * False, size kept, when the picture cannot take it (testbedSizeOk).
   */
  resize(width: number, height: number): boolean {
    if (!testbedSizeOk(width, height)) return false;
    if (width === this.picture.width && height === this.picture.height) return true;
    this.picture.resize(width, height);
    this.spare.length = 0; // old size; lent ones are dropped on release below
    this.setState({ width, height });
    return true;
  }

  /** The testbed's "power": off shows no signal (used by the no-signal display and ATX later). */
  setSignal(signal: boolean): void {
    this.setState({ signal });
  }

  async startCapture(onFrame: (frame: RawFrame) => void, fps: number): Promise<void> {
    this.onFrame = onFrame;
    this.intervalMs = 1000 / Math.max(1, Math.min(120, fps));
    if (this.timer) return;
    this.nextAt = performance.now();
    this.tick();
  }

  async stopCapture(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.onFrame = null;
    // nobody watches: the spares are garbage now, frames still lent are not taken back
    this.spare.length = 0;
  }

  /** Drift-free pacing: each frame is scheduled from the ideal time, not from the last run. */
  private tick = (): void => {
    const now = performance.now();
    if (this.state.signal && this.onFrame) {
      this.frameNo += 1;
      this.picture.drawFrameNumber(this.frameNo);
      this.picture.animate();
      const data = this.spare.pop() ?? Buffer.allocUnsafe(this.picture.frame.length);
      this.picture.frame.copy(data);
      let lent = true;
      this.onFrame({
        width: this.picture.width,
        height: this.picture.height,
        format: 'yuv420p',
        data,
        capturedAt: now,
        release: () => {
          // once only: a second release must not put one buffer in two frames
          if (!lent) return;
          lent = false;
          if (this.spare.length < SPARE_FRAMES && data.length === this.picture.frame.length) {
            this.spare.push(data);
          }
        },
      });
    }
    this.nextAt += this.intervalMs;
    // fell far behind (machine busy): skip ahead instead of bursting
    if (this.nextAt < now - this.intervalMs) this.nextAt = now + this.intervalMs;
    this.timer = setTimeout(this.tick, Math.max(0, this.nextAt - performance.now()));
  };

  private setState(patch: Partial<VideoSourceState>): void {
    const next = { ...this.state, ...patch };
    if (JSON.stringify(next) === JSON.stringify(this.state)) return;
    this.state = next;
    this.events.emit('state', this.getState());
  }

  async dispose(): Promise<void> {
    await this.stopCapture();
    this.setState({ online: false, signal: false });
  }
}

/**
 * The testbed's video source: renders TestbedPicture at the asked frame rate (a new frame
 * number every frame, so the encoder always has motion to encode) and hands its buffer to the
 * encoder as it is: the picture copies itself into another buffer only when it must draw while
 * a consumer still holds the last one (TestbedPicture.lend). An idle console's encoder reads
 * each frame within a few ms, so its frames cost no copy and no buffer besides the picture's
 * (1.4 MB at 720p). Like a V4L2 capture device it lends at most FRAME_BUFFERS buffers to the
 * consumers, handed back by them (RawFrame.release): when all are out, the frame is skipped,
 * and the next frame says how many were (`skipped`). A fresh 1.4 MB buffer a frame at 30 fps
 * left 20-30 MB of garbage resident between collections, and a pool that kept only some of the
 * buffers back left the rest of a start's burst as garbage an idle server never collects
 * (5-6 MB).
 */
import { EventEmitter } from 'node:events';
import type { RawFrame, VideoSource, VideoSourceState } from './types';
import { TestbedPicture, testbedSizeOk } from '../../platform/testbed/screen';

export interface TestbedVideoOptions {
  width?: number;
  height?: number;
}

/**
 * Frame buffers lent at once: one in the encoder's pipe, one waiting behind it, one kept by the
 * JPEG path (its newest frame). A consumer that falls further behind gets frames skipped, as a
 * capture device's queue does, instead of a longer queue of older frames. The picture draws on
 * in a buffer of its own meanwhile.
 */
export const FRAME_BUFFERS = 3;

/**
 * A buffer lent longer than this is given up (left to the GC) when a frame finds none free: a
 * consumer that never hands one back (release is optional) must not stop the picture.
 */
export const LENT_GIVE_UP_MS = 2000;

export class TestbedVideo implements VideoSource {
  readonly name = 'testbed';
  readonly pixelFormat = 'yuv420p' as const;
  readonly picture: TestbedPicture;
  private readonly events = new EventEmitter<{ state: [VideoSourceState] }>();
  private state: VideoSourceState;
  private timer: NodeJS.Timeout | null = null;
  private onFrame: ((frame: RawFrame) => void) | null = null;
  private intervalMs = 1000 / 30;
  private nextAt = 0;
  private frameNo = 0;
  /** Released frame buffers the picture moved away from, reused by its next moves. */
  private readonly spare: Buffer[] = [];
  /** Buffers out with a consumer, and since when (performance.now()). */
  private readonly lent = new Map<Buffer, number>();
  /** Frames skipped since the last one delivered (no buffer free). */
  private skipped = 0;

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
    this.spare.length = 0; // old size; lent ones are not taken back on release (below)
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
    this.skipped = 0;
  }

  /** Buffers out with consumers right now (for tests and the memory's account). */
  get buffersLent(): number {
    return this.lent.size;
  }

  /**
   * Room to lend one more buffer: false when all FRAME_BUFFERS are out and none has been out for
   * LENT_GIVE_UP_MS (then the oldest is given up: the GC has it if it never comes back).
   */
  private canLend(now: number): boolean {
    if (this.lent.size < FRAME_BUFFERS) return true;
    const [oldest, since] = this.lent.entries().next().value as [Buffer, number];
    if (now - since < LENT_GIVE_UP_MS) return false;
    this.lent.delete(oldest);
    return true;
  }

  /** Where the picture moves when it must draw while its buffer is lent. */
  private readonly takeBuffer = (size: number): Buffer => {
    const spare = this.spare.pop();
    return spare && spare.length === size ? spare : Buffer.allocUnsafe(size);
  };

  /** Drift-free pacing: each frame is scheduled from the ideal time, not from the last run. */
  private tick = (): void => {
    const now = performance.now();
    if (this.state.signal && this.onFrame) {
      this.frameNo += 1;
      this.picture.drawFrameNumber(this.frameNo);
      this.picture.animate();
      if (this.canLend(now)) this.deliver(now);
      else this.skipped += 1;
    }
    this.nextAt += this.intervalMs;
    // fell far behind (machine busy): skip ahead instead of bursting
    if (this.nextAt < now - this.intervalMs) this.nextAt = now + this.intervalMs;
    this.timer = setTimeout(this.tick, Math.max(0, this.nextAt - performance.now()));
  };

  private deliver(now: number): void {
    const data = this.picture.lend(this.takeBuffer);
    this.lent.set(data, now);
    const skipped = this.skipped;
    this.skipped = 0;
    this.onFrame!({
      width: this.picture.width,
      height: this.picture.height,
      format: this.pixelFormat,
      data,
      capturedAt: now,
      ...(skipped > 0 && { skipped }),
      release: () => {
        // once only (a second release must not put one buffer in two frames), and not a
        // buffer given up meanwhile or of an older size
        if (!this.lent.delete(data)) return;
        // still the picture's own: it draws there again
        if (this.picture.returned(data)) return;
        if (data.length === this.picture.frame.length && this.spare.length < FRAME_BUFFERS) {
          this.spare.push(data);
        }
      },
    });
  }

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

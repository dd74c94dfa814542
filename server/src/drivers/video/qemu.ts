/**
 * The QEMU target's video source: QEMU's VNC framebuffer through our RFB client, on the
 * machine's unix socket. Frames are `bgr0`, whole screens, at most `fps` a second and at
 * least one a second on a still screen (a repeat, stamped now).
 *
 * `online` is the RFB session; `signal` comes from the VM's run state, not from the picture:
 * while the VM is paused or powered off QEMU keeps showing its last frame (architecture.md).
 * No frames are delivered without signal.
 */
import { EventEmitter } from 'node:events';
import type { RawFrame, VideoSource, VideoSourceState } from './types';
import type { QemuMachine } from '../../platform/qemu/machine';
import { RfbClient } from '../../platform/qemu/rfb';
import type { Logger } from '../../log';
import { traceStage } from '../../process/stage-trace';

export interface QemuVideoOptions {
  log?: Logger;
  /** Delay before a new RFB connection attempt after a failure. */
  retryMs?: number;
  /** The guest's keyboard LEDs, as QEMU tells the VNC client (while the video runs). */
  onLeds?: (leds: { caps: boolean; num: boolean; scroll: boolean }) => void;
}

/** QEMU's own shortest refresh interval: waking it more often than this gains nothing. */
const WAKE_MIN_MS = 30;
/**
 * Follow-up wakes after input, ms, one per refresh QEMU allows. A wake re-arms QEMU's display
 * timer at its last refresh plus 30 ms, and the wake at the input itself refreshes before the
 * guest has drawn its answer (15-30 ms later under TCG: the USB keyboard's poll, the guest):
 * so the wake at 30 is the first that can see it. With 40 it waited 10 ms more, and an answer
 * drawn after 40 waited for the wake at 80 (bench video-qemu, 30 changes of each schedule
 * alternating in one run: p50 77.7 -> 63.8 ms, p95 109.6 -> 77.0; the bench's own VNC client saw
 * the change at 50.2 -> 39.6 ms p50; docs/performance.md, the nineteenth round).
 */
const WAKE_FOLLOW_UP_MS = [30, 60, 90, 120, 160];

/** A still screen still gets a frame this often (VideoSource contract). */
const IDLE_FRAME_MS = 1000;

/**
 * A change is followed by repeats of the picture (FOLLOW_UPS), each this long after the one before
 * (the first: FIRST_FOLLOW_UP_MS after the change), when no newer update came.
 * The screen of a text console changes rarely (a key press, the cursor's blink every ~200 ms), and
 * the browser showed the frame of a change only once the next frame arrived: in bench
 * video-qemu's stage times the page received the change's frame at ~75 ms and presented it at
 * ~270 ms, with the cursor's next blink. The repeat is a skipped picture for the encoder (a few
 * hundred bytes of P-frame) and pushes the change's frame out at once.
 */
const FOLLOW_UP_MS = 20;

/**
 * The first repeat after a change comes this long after it (or a frame interval, if longer):
 * after QEMU's next refresh (30 ms) and the few ms its update takes to arrive. The guest's
 * answer often comes in two updates, a part at one refresh (the cursor taken away, the top of a
 * clear) and the rest at the next; with the first repeat at 20 ms, that repeat went into the
 * encoder just before the rest and the rest queued behind it (bench video-qemu, two pairs of
 * runs of 40 changes: p50 69.3 / 69.3 ms with 20, 64.4 / 64.6 with 35, p95 105.7 / 94.6 against
 * 93.0 / 89.8; docs/performance.md, the twentieth round). A newer update cancels the repeat.
 */
const FIRST_FOLLOW_UP_MS = 35;

/**
 * Repeats after a change, each FOLLOW_UP_MS (or a frame interval) after the one before. One was
 * not enough: in bench video-qemu's tail the frame presented was the repeat (`recv NaN` in its
 * rows), received in time and then held 90-275 ms, until the frame after it; the change's own
 * frame had not been shown (nothing lost on the way: no NACK, PLI or dropped frame in the page's
 * inbound-rtp). With 1, 3 and 6 repeats the p95 was 276-373, 150-158 and 127-139 ms (p50 about
 * 100 in each). Each repeat is a skipped picture of a few hundred bytes for the encoder, but a
 * whole screen (3 MB at 1024x768) into its pipe: only a change that comes within
 * INPUT_CHANGE_MS of input gets them all (the echo of a key, the pointer); others (a cursor's
 * blink, a clock) get one, so a still console stays at a few frames a second.
 */
const FOLLOW_UPS = 6;

/** A change this soon after input (wakeRefresh) is taken as its answer: FOLLOW_UPS repeats. */
const INPUT_CHANGE_MS = 1000;

/**
 * The pace is a bucket of this many frames, filled at the hub's rate: a change goes out at once
 * while one is left, a repeat (FOLLOW_UPS) only while two are, so a change never waits behind a
 * repeat. Frames a second stay at most the rate plus this burst. With a plain interval after
 * every frame (the last one's time plus 1/fps), bench video-qemu's server traces showed the
 * change waiting 5-12 ms in about half of the changes: the guest's clear comes in two updates
 * (part of it at the refresh before), the first one's repeat went out 20 ms after it, and the
 * rest of the clear, 5-15 ms later, waited out the interval after that repeat (the twentieth
 * round, docs/performance.md).
 */
const PACE_BURST = 2;

/**
 * Frames handed on and not yet released (RawFrame.release: written into the encoder's pipe, or
 * dropped; the JPEG path keeps its newest until the next) above which no new frame goes out:
 * the screen's newest state waits here instead, so a change queues behind at most this many
 * whole screens. On a busy machine each 3 MB screen took 100-500 ms into ffmpeg's stdin (a
 * socket pair, ~200 KiB in flight) and the change queued behind the cursor's blinks (bench
 * video-qemu's stage times).
 */
const MAX_UNRELEASED = 2;
/** A frame not released after this is counted as gone (a consumer that never releases). */
const RELEASE_WAIT_MS = 250;
/**
 * Released frame buffers kept for the next copies of the screen (RawFrame.release): without
 * them every frame (3 MB at 1024x768, two per change with its repeat) is a new allocation and
 * a free, which costs page faults on each copy and leaves malloc's heap holding several.
 */
const POOL_FRAMES = MAX_UNRELEASED + 1;

export class QemuVideo implements VideoSource {
  readonly name = 'qemu';
  /** VNC's raw encoding in the pixel format this client sets: 32-bit little-endian BGRX. */
  readonly pixelFormat = 'bgr0' as const;
  private readonly events = new EventEmitter<{ state: [VideoSourceState] }>();
  private state: VideoSourceState = { online: false, signal: false, width: 0, height: 0 };
  private rfb: RfbClient | null = null;
  private connecting = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private active = false;
  private onFrame: ((frame: RawFrame) => void) | null = null;
  private intervalMs = 1000 / 30;
  /** Frames the pace allows now (PACE_BURST at most), as of `paceAt`. */
  private paceFrames = PACE_BURST;
  private paceAt = 0;
  private lastWakeAt = -Infinity;
  /** When input last reached the guest while someone watched (wakeRefresh). */
  private lastInputAt = -Infinity;
  private wakeTimers: NodeJS.Timeout[] = [];
  /** Arrival time of the newest update not delivered yet, or null. */
  private pendingSince: number | null = null;
  private deliverTimer: NodeJS.Timeout | null = null;
  private idleTimer: NodeJS.Timeout | null = null;
  private followUpTimer: NodeJS.Timeout | null = null;
  /** Repeats still to come after the last change (FOLLOW_UPS). */
  private followUpsLeft = 0;
  /** Delivery times of the frames not yet released (MAX_UNRELEASED). */
  private unreleased = new Set<{ at: number }>();
  /** Buffers given back, reused for the next frames (POOL_FRAMES). */
  private readonly pool: Buffer[] = [];
  private readonly unsubscribe: Array<() => void> = [];

  constructor(
    private readonly machine: QemuMachine,
    private readonly opts: QemuVideoOptions = {},
  ) {}

  /**
   * Input just reached the guest: a change on its screen should follow, so QEMU's VNC server is
   * told to check soon (RfbClient.wakeRefresh), and again at WAKE_FOLLOW_UP_MS: the guest takes
   * 10-30 ms to draw, and a check that finds nothing yet backs QEMU off again by 50 ms.
   */
  wakeRefresh(): void {
    // Only while someone watches: an unwatched screen may back off as QEMU likes.
    if (!this.onFrame || !this.rfb) return;
    const now = performance.now();
    this.lastInputAt = now;
    if (now - this.lastWakeAt >= WAKE_MIN_MS) {
      this.lastWakeAt = now;
      this.rfb.wakeRefresh();
    }
    if (this.wakeTimers.length > 0) return;
    for (const ms of WAKE_FOLLOW_UP_MS) {
      const timer = setTimeout(() => {
        this.wakeTimers = this.wakeTimers.filter((t) => t !== timer);
        this.lastWakeAt = performance.now();
        if (this.onFrame) this.rfb?.wakeRefresh();
      }, ms);
      timer.unref();
      this.wakeTimers.push(timer);
    }
  }

  getState(): VideoSourceState {
    return { ...this.state };
  }

  onState(listener: (state: VideoSourceState) => void): () => void {
    this.events.on('state', listener);
    return () => this.events.off('state', listener);
  }

  /** Follows the machine: (re)connects whenever a QEMU is up. The machine is started by its owner. */
  async init(): Promise<void> {
    if (this.active) return;
    this.active = true;
    const onReady = (): void => this.connect();
    const onPower = (): void => this.updateSignal();
    const onExited = (): void => this.dropRfb();
    this.machine.on('ready', onReady);
    this.machine.on('power', onPower);
    this.machine.on('exited', onExited);
    this.unsubscribe.push(
      () => this.machine.off('ready', onReady),
      () => this.machine.off('power', onPower),
      () => this.machine.off('exited', onExited),
    );
    if (this.machine.qmp) this.connect();
  }

  async dispose(): Promise<void> {
    this.active = false;
    for (const off of this.unsubscribe.splice(0)) off();
    for (const timer of this.wakeTimers.splice(0)) clearTimeout(timer);
    await this.stopCapture();
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.dropRfb();
  }

  async startCapture(onFrame: (frame: RawFrame) => void, fps: number): Promise<void> {
    const first = !this.onFrame;
    this.onFrame = onFrame;
    this.intervalMs = 1000 / Math.max(1, Math.min(60, fps));
    if (first && this.rfb) {
      // A full picture now: the encoder starts with a whole frame, not with the next change.
      this.rfb.requestUpdate(false);
    }
    this.armIdle();
  }

  async stopCapture(): Promise<void> {
    this.onFrame = null;
    this.pendingSince = null;
    this.unreleased.clear();
    // nobody watches: the buffers are garbage now (frames still out are not taken back)
    this.pool.length = 0;
    if (this.deliverTimer) clearTimeout(this.deliverTimer);
    if (this.idleTimer) clearTimeout(this.idleTimer);
    if (this.followUpTimer) clearTimeout(this.followUpTimer);
    this.deliverTimer = null;
    this.idleTimer = null;
    this.followUpTimer = null;
    this.followUpsLeft = 0;
  }

  private setState(patch: Partial<VideoSourceState>): void {
    const next = { ...this.state, ...patch };
    if (
      next.online === this.state.online &&
      next.signal === this.state.signal &&
      next.width === this.state.width &&
      next.height === this.state.height
    ) {
      return;
    }
    this.state = next;
    this.events.emit('state', { ...next });
  }

  private updateSignal(): void {
    this.setState({ signal: this.state.online && this.machine.power === 'running' });
    if (this.state.signal) this.armIdle();
  }

  private connect(): void {
    if (!this.active || this.rfb || this.connecting) return;
    this.connecting = true;
    RfbClient.connect(this.machine.paths.vnc)
      .then((rfb) => {
        this.connecting = false;
        if (!this.active) {
          rfb.close();
          return;
        }
        this.attach(rfb);
      })
      .catch((err: unknown) => {
        this.connecting = false;
        if (!this.active || !this.machine.qmp) return; // the next 'ready' reconnects
        this.opts.log?.warn({ err: (err as Error).message }, 'VNC connect failed');
        this.retryTimer = setTimeout(() => {
          this.retryTimer = null;
          this.connect();
        }, this.opts.retryMs ?? 500);
      });
  }

  private attach(rfb: RfbClient): void {
    this.rfb = rfb;
    rfb.on('resize', (width, height) => this.setState({ width, height }));
    rfb.on('leds', (leds) => this.opts.onLeds?.(leds));
    rfb.on('update', (arrivedAt) => {
      // Always keep one request outstanding: QEMU answers it when the screen changes.
      rfb.requestUpdate(true);
      this.onUpdate(arrivedAt);
    });
    rfb.on('close', (err) => {
      if (this.rfb !== rfb) return;
      this.rfb = null;
      this.setState({ online: false, signal: false });
      if (err) this.opts.log?.warn({ err: err.message }, 'VNC connection lost');
      // QEMU still up (the socket alone dropped): reconnect; else 'ready' will.
      if (this.active && this.machine.qmp) {
        this.retryTimer = setTimeout(() => {
          this.retryTimer = null;
          this.connect();
        }, this.opts.retryMs ?? 500);
      }
    });
    this.setState({
      online: true,
      width: rfb.width,
      height: rfb.height,
      signal: this.machine.power === 'running',
    });
    rfb.requestUpdate(false);
  }

  private dropRfb(): void {
    const rfb = this.rfb;
    this.rfb = null;
    rfb?.close();
    this.setState({ online: false, signal: false });
  }

  private onUpdate(arrivedAt: number): void {
    if (!this.onFrame) return;
    this.pendingSince ??= arrivedAt;
    traceStage('received', this.pendingSince);
    this.schedule();
  }

  /** Delivers the pending update now or when the pace and the release gate allow. */
  private schedule(): void {
    if (this.deliverTimer || this.pendingSince === null) return;
    const now = performance.now();
    const wait = Math.max(this.paceWait(now, 1), this.gateOpensAt(now) - now);
    if (wait <= 0) this.deliver();
    else this.deliverTimer = setTimeout(() => this.deliver(), wait);
  }

  /** ms until the pace allows `frames` frames (0: now); fills the bucket up to `now`. */
  private paceWait(now: number, frames: number): number {
    this.paceFrames = Math.min(
      PACE_BURST,
      this.paceFrames + Math.max(0, now - this.paceAt) / this.intervalMs,
    );
    this.paceAt = now;
    return this.paceFrames >= frames ? 0 : (frames - this.paceFrames) * this.intervalMs;
  }

  /** When a frame may go out past the release gate (<= now: at once). */
  private gateOpensAt(now: number): number {
    let oldest = Infinity;
    for (const f of this.unreleased) {
      if (now - f.at >= RELEASE_WAIT_MS) this.unreleased.delete(f);
      else oldest = Math.min(oldest, f.at);
    }
    return this.unreleased.size < MAX_UNRELEASED ? 0 : oldest + RELEASE_WAIT_MS;
  }

  /** A frame was released: its buffer may be reused, a pending update held by the gate may go. */
  private released(f: { at: number }, data: Buffer): void {
    const size = this.rfb ? this.rfb.framebuffer.length : 0;
    if (this.onFrame && data.length === size && this.pool.length < POOL_FRAMES)
      this.pool.push(data);
    if (!this.unreleased.delete(f) || this.pendingSince === null) return;
    if (this.deliverTimer) clearTimeout(this.deliverTimer);
    this.deliverTimer = null;
    this.schedule();
  }

  private deliver(): void {
    if (this.deliverTimer) clearTimeout(this.deliverTimer);
    this.deliverTimer = null;
    const rfb = this.rfb;
    const onFrame = this.onFrame;
    const now = performance.now();
    const change = this.pendingSince !== null;
    const capturedAt = this.pendingSince ?? now;
    this.pendingSince = null;
    if (this.followUpTimer) clearTimeout(this.followUpTimer);
    this.followUpTimer = null;
    if (!rfb || !onFrame || !this.state.signal || rfb.width === 0) {
      this.armIdle();
      return;
    }
    this.paceWait(now, 0);
    this.paceFrames = Math.max(0, this.paceFrames - 1);
    traceStage('frame', capturedAt);
    const held = { at: now };
    this.unreleased.add(held);
    // A copy: the framebuffer changes under the encoder's feet otherwise.
    const fb = rfb.framebuffer;
    let data = this.pool.pop();
    while (data && data.length !== fb.length) data = this.pool.pop(); // an old size's
    data ??= Buffer.allocUnsafe(fb.length);
    fb.copy(data);
    let lent = true;
    onFrame({
      width: rfb.width,
      height: rfb.height,
      format: this.pixelFormat,
      data,
      capturedAt,
      release: () => {
        // once only: a second release must not put one buffer in two frames
        if (!lent) return;
        lent = false;
        this.released(held, data);
      },
    });
    this.armIdle();
    if (change) this.followUpsLeft = now - this.lastInputAt <= INPUT_CHANGE_MS ? FOLLOW_UPS : 1;
    if (this.followUpsLeft > 0) {
      this.followUpsLeft -= 1;
      const ms = change ? FIRST_FOLLOW_UP_MS : FOLLOW_UP_MS;
      this.armFollowUp(Math.max(ms, this.intervalMs));
    }
  }

  /** The next repeat after a change (FOLLOW_UPS), unless a newer update goes out first. */
  private armFollowUp(ms: number): void {
    this.followUpTimer = setTimeout(() => {
      this.followUpTimer = null;
      const now = performance.now();
      // a newer update pending, or the consumers behind: that next frame does the same
      if (this.pendingSince !== null || this.gateOpensAt(now) > 0) return;
      // a frame left in the pace for a change that comes meanwhile (PACE_BURST)
      const wait = this.paceWait(now, 2);
      if (wait > 0) this.armFollowUp(wait);
      else this.deliver();
    }, ms);
  }

  /** A repeat of the current picture when nothing arrived for IDLE_FRAME_MS. */
  private armIdle(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    if (!this.onFrame) return;
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      // a repeat only when nothing waits and the consumers keep up (else the next one will do)
      if (this.pendingSince === null && this.gateOpensAt(performance.now()) === 0) this.deliver();
      else this.armIdle();
    }, IDLE_FRAME_MS);
  }
}

/**
 * `video.type: v4l2`: a V4L2 capture device, the board's HDMI receiver (TC358743 and the like:
 * DV timings, EDID, source-change events) or a USB HDMI dongle (UVC: none of those). It is an
 * `ffmpeg-input` source (types.ts): the encoder's ffmpeg reads the device itself
 * (`-f v4l2 -input_format ... -video_size ... -i /dev/videoN`); this driver says what is on the
 * input and keeps the device set for it. docs/drivers.md "V4L2 capture", docs/hardware.md.
 *
 * An HDMI receiver (`kind: 'dv'`):
 * - The state comes from VIDIOC_QUERY_DV_TIMINGS (platform/v4l2/ctl.ts), read at start, at every
 *   source-change event (one blocking `--wait-for-event` child at a time, no timer) and when
 *   the device node comes or goes (fs.watch on its folder).
 * - ENOLINK / ENOLCK / ERANGE are `no_signal` / `no_lock` / `out_of_range`: online, no signal
 *   (`hdmi.signal` false; the console says SPEC's "No HDMI signal" after 5 s), and no input for
 *   the encoder, so the hub stops it (a receiver without signal gives no frames).
 * - New timings: the state goes `switching` (no input: the hub stops the encoder, viewers stay
 *   subscribed), VIDIOC_S_DV_TIMINGS is retried while the old ffmpeg still holds the device
 *   (EBUSY, every 100 ms for at most 10 s: the kernel has no event for "reader closed"), then the
 *   input at the new size: the hub starts a new encoder and the viewers' stream goes on at it.
 * - Timings the encoder cannot take (a side below 16 or beyond `maxWidth`x`maxHeight`, 4096 by
 *   default: libx264's level limits) are `unsupported_mode`: no signal, the sentence in `error`.
 * A USB dongle (`kind: 'fixed'`, the query answers ENOTTY/ENODATA): its largest size in the first
 * preferred format it offers, at the highest rate up to `fps`; no signal detection (a dongle
 * shows its own "no signal" picture), no events (uvcvideo has none).
 * A node that vanishes (unplug: ENODEV, or the file is gone) is `no_device`, offline; it is
 * probed again when the node is back.
 */
import { watch, type FSWatcher } from 'node:fs';
import { access } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import type { CaptureState, CaptureStatus } from '@kvm/protocol';
import { SILENT_LOGGER, type Logger } from '../../log';
import type { V4l2Ctl } from '../../platform/v4l2/ctl';
import { V4l2Error } from '../../platform/v4l2/ctl';
import { ffmpegFormatOf, type DvTimings, type FormatChoice } from '../../platform/v4l2/parse';
import type { FfmpegInput, VideoInput, VideoSource, VideoSourceState } from './types';

export interface V4l2VideoOptions {
  ctl: V4l2Ctl;
  /** ffmpeg `-input_format` names in order of preference (config `video.v4l2.formats`). */
  formats?: readonly string[];
  /** The most frames a second asked of a dongle (config `video.v4l2.fps`). */
  fps?: number;
  /** Largest picture the encoder is given (config `video.v4l2.max_width` / `max_height`). */
  maxWidth?: number;
  maxHeight?: number;
  log?: Logger;
  /** Watch source-change events and the device node (tests drive `refresh()` themselves). */
  watch?: boolean;
  /** EBUSY retry while the old reader lets go of the device. */
  busyRetryMs?: number;
  busyTimeoutMs?: number;
}

export const DEFAULT_FORMATS = [
  'yuyv422',
  'uyvy422',
  'nv12',
  'yuv420p',
  'nv16',
  'rgb24',
  'bgr24',
  'mjpeg',
];
const MIN_SIDE = 16;
const MAX_SIDE = 4096;
const BUSY_RETRY_MS = 100;
const BUSY_TIMEOUT_MS = 10_000;
/** A second read after an event: a change between the last wait's end and the next's start. */
const SETTLE_MS = 500;
/** A wait that fails at once is not started again sooner than this (a driver in a bad way). */
const WAIT_RETRY_MS = 2_000;

const STATUS_TEXT: Partial<Record<CaptureStatus, string>> = {
  no_signal: 'No HDMI signal',
  no_lock: 'An HDMI signal the receiver cannot lock onto',
  out_of_range: 'An HDMI signal beyond what the receiver takes',
};

export class V4l2Video implements VideoSource {
  readonly name = 'v4l2';
  readonly ctl: V4l2Ctl;
  private readonly log: Logger;
  private readonly formats: readonly string[];
  private readonly maxFps: number;
  private readonly maxWidth: number;
  private readonly maxHeight: number;
  private readonly listeners = new Set<(state: VideoSourceState) => void>();
  private capture: CaptureState;
  /** The encoder's input while there is a picture, else null. */
  private current: FfmpegInput | null = null;
  /** The timings last set on the device (a new query differing from them is a new mode). */
  private applied: DvTimings | null = null;
  private offered: FormatChoice[] | null = null;
  private probing: Promise<void> | null = null;
  private again = false;
  private disposed = false;
  private abort = new AbortController();
  private watcher: FSWatcher | null = null;
  private settleTimer: NodeJS.Timeout | null = null;
  private waiting = false;
  /** A write holds the device (whileReleased): probes are skipped, one follows the write. */
  private held = false;
  /** The writes of whileReleased, one after the other. */
  private writes: Promise<unknown> = Promise.resolve();
  /** Probes done since start (tests wait on it). */
  probes = 0;

  constructor(private readonly opts: V4l2VideoOptions) {
    this.ctl = opts.ctl;
    this.log = opts.log ?? SILENT_LOGGER;
    this.formats = opts.formats ?? DEFAULT_FORMATS;
    this.maxFps = opts.fps ?? 60;
    this.maxWidth = opts.maxWidth ?? MAX_SIDE;
    this.maxHeight = opts.maxHeight ?? MAX_SIDE;
    this.capture = {
      device: this.ctl.device,
      kind: null,
      status: 'no_device',
      width: 0,
      height: 0,
      hz: null,
      format: null,
      error: 'not probed yet',
    };
  }

  getState(): VideoSourceState {
    const c = this.capture;
    return {
      online: c.status !== 'no_device' && c.status !== 'error',
      signal: c.status === 'signal' || c.status === 'switching',
      width: c.width,
      height: c.height,
      capture: { ...c },
    };
  }

  onState(listener: (state: VideoSourceState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  input(fps: number): VideoInput {
    if (this.current) return this.current;
    return { kind: 'ffmpeg-input', args: [], width: 0, height: 0, fps };
  }

  /** The encoder reads the device itself: no frames to push. */
  async startCapture(): Promise<void> {}
  async stopCapture(): Promise<void> {}

  /** The timings in force (the display driver's `current()`), or null without a picture. */
  timings(): { width: number; height: number; hz: number } | null {
    const c = this.capture;
    if (c.status !== 'signal') return null;
    return { width: c.width, height: c.height, hz: Math.round(c.hz ?? 60) };
  }

  async init(): Promise<void> {
    await this.refresh();
    if (this.opts.watch === false) return;
    this.watchNode();
    if (this.capture.kind !== 'fixed') this.startWaiting();
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    this.abort.abort();
    this.watcher?.close();
    this.watcher = null;
    if (this.settleTimer) clearTimeout(this.settleTimer);
    await this.probing;
  }

  /** Reads the input again (serialised: a call during a probe makes one more after it). */
  refresh(): Promise<void> {
    if (this.disposed) return Promise.resolve();
    if (this.probing) {
      this.again = true;
      return this.probing;
    }
    this.probing = (async () => {
      try {
        do {
          this.again = false;
          await this.probe();
        } while (this.again && !this.disposed);
      } finally {
        this.probing = null;
      }
    })();
    return this.probing;
  }

  /**
   * Runs `write`, an ioctl the device refuses while somebody streams from it (EBUSY: vivid's
   * VIDIOC_S_EDID does), with the device let go of, as new timings are set: the state goes
   * `switching` (no input: the hub stops its encoder, viewers stay subscribed), `write` is
   * retried on EBUSY until the encoder has let go, then the input is read again and the hub
   * starts a new encoder at it. Source changes meanwhile are read by that last probe.
   */
  whileReleased<T>(write: () => Promise<T>): Promise<T> {
    const run = this.writes.then(async () => {
      this.held = true;
      try {
        await this.probing; // one under way ends first; those asked for now are skipped
        if (this.disposed) throw new V4l2Error('error', 'the capture driver stopped');
        this.current = null;
        this.set({ status: 'switching', error: null });
        return await this.retryBusy(write);
      } finally {
        this.held = false;
        // set the timings again: what the receiver detects may have changed with the write
        this.applied = null;
        await this.refresh();
      }
    });
    this.writes = run.catch(() => {});
    return run;
  }

  private async probe(): Promise<void> {
    if (this.held) return;
    this.probes += 1;
    if (!(await this.nodeExists())) {
      this.lost(`${this.ctl.device} does not exist (unplugged?)`);
      return;
    }
    let timings: DvTimings;
    try {
      timings = await this.ctl.queryDvTimings();
    } catch (err) {
      const e = err instanceof V4l2Error ? err : new V4l2Error('error', String(err));
      switch (e.fault) {
        case 'no_signal':
        case 'no_lock':
        case 'out_of_range':
          this.noPicture(e.fault, STATUS_TEXT[e.fault]!);
          return;
        case 'unsupported':
          await this.probeFixed();
          return;
        case 'no_device':
          this.lost(e.message);
          return;
        case 'invalid':
          this.noPicture('unsupported_mode', `The remote computer's mode is garbled: ${e.message}`);
          return;
        default:
          this.fail(e.message);
          return;
      }
    }
    await this.useTimings(timings);
  }

  /** An HDMI receiver detected `t`: set it on the device if it is new, then the input. */
  private async useTimings(t: DvTimings): Promise<void> {
    const c = this.capture;
    if (
      t.width < MIN_SIDE ||
      t.height < MIN_SIDE ||
      t.width > this.maxWidth ||
      t.height > this.maxHeight
    ) {
      this.noPicture(
        'unsupported_mode',
        `The remote computer sends ${t.width}x${t.height}, which the encoder cannot take ` +
          `(${MIN_SIDE}x${MIN_SIDE} to ${this.maxWidth}x${this.maxHeight})`,
        { width: t.width, height: t.height, hz: t.fps },
      );
      return;
    }
    const same =
      this.applied !== null &&
      this.current !== null &&
      this.applied.width === t.width &&
      this.applied.height === t.height &&
      this.applied.totalWidth === t.totalWidth &&
      this.applied.totalHeight === t.totalHeight &&
      this.applied.pixelclock === t.pixelclock;
    if (same && c.status === 'signal') return;
    // the old encoder lets go of the device first: no input while the timings are set
    this.current = null;
    this.set({
      kind: 'dv',
      status: 'switching',
      width: t.width,
      height: t.height,
      hz: t.fps,
      error: null,
    });
    try {
      await this.setTimings();
      const fmt = await this.ctl.getFormat();
      const format = await this.pickDvFormat(fmt.fourcc);
      this.applied = t;
      this.current = {
        kind: 'ffmpeg-input',
        args: this.inputArgs(format, fmt.width, fmt.height, null),
        width: fmt.width,
        height: fmt.height,
        fps: Math.max(1, Math.round(t.fps)),
      };
      this.log.info(
        { width: fmt.width, height: fmt.height, hz: t.fps, format },
        'capture timings set',
      );
      this.set({
        status: 'signal',
        width: fmt.width,
        height: fmt.height,
        hz: t.fps,
        format,
        error: null,
      });
    } catch (err) {
      const e = err instanceof V4l2Error ? err : new V4l2Error('error', String(err));
      if (e.fault === 'no_device') this.lost(e.message);
      else if (e.fault === 'no_signal' || e.fault === 'no_lock' || e.fault === 'out_of_range') {
        this.noPicture(e.fault, STATUS_TEXT[e.fault]!);
      } else
        this.fail(`The capture device refused the timings ${t.width}x${t.height}: ${e.message}`);
    }
  }

  /** S_DV_TIMINGS from the query; EBUSY while the old ffmpeg still holds the device. */
  private async setTimings(): Promise<void> {
    await this.retryBusy(() => this.ctl.setDvTimingsFromQuery());
  }

  /** `call`, again every busyRetryMs while the device answers EBUSY (busyTimeoutMs at most). */
  private async retryBusy<T>(call: () => Promise<T>): Promise<T> {
    const retry = this.opts.busyRetryMs ?? BUSY_RETRY_MS;
    const deadline = performance.now() + (this.opts.busyTimeoutMs ?? BUSY_TIMEOUT_MS);
    for (;;) {
      try {
        return await call();
      } catch (err) {
        if (!(err instanceof V4l2Error) || err.fault !== 'busy' || performance.now() > deadline) {
          throw err;
        }
        if (this.disposed) throw err;
        await new Promise((r) => setTimeout(r, retry));
      }
    }
  }

  /** The current format when ffmpeg takes it, else the first preferred one the device offers. */
  private async pickDvFormat(fourcc: string): Promise<string> {
    const now = ffmpegFormatOf(fourcc);
    if (now && this.formats.includes(now)) return now;
    this.offered ??= await this.ctl.listFormats().catch(() => []);
    for (const want of this.formats) {
      if (this.offered.some((f) => ffmpegFormatOf(f.fourcc) === want)) return want;
    }
    throw new V4l2Error('error', `it offers no format of ${this.formats.join(', ')}`);
  }

  /** A USB dongle: its largest size in the first preferred format, the best rate up to fps. */
  private async probeFixed(): Promise<void> {
    let offered: FormatChoice[];
    try {
      offered = await this.ctl.listFormats();
    } catch (err) {
      const e = err as V4l2Error;
      if (e.fault === 'no_device') this.lost(e.message);
      else this.fail(`The capture device lists no formats: ${e.message}`);
      return;
    }
    let best = null as { format: string; width: number; height: number; fps: number } | null;
    for (const want of this.formats) {
      for (const f of offered.filter((o) => ffmpegFormatOf(o.fourcc) === want)) {
        for (const s of f.sizes) {
          if (s.width > this.maxWidth || s.height > this.maxHeight) continue;
          const rates = s.fps.filter((r) => r <= this.maxFps + 0.01);
          const fps = rates.length > 0 ? Math.max(...rates) : Math.min(this.maxFps, ...s.fps, 30);
          const area = s.width * s.height;
          if (!best || area > best.width * best.height) {
            best = { format: want, width: s.width, height: s.height, fps };
          }
        }
      }
      // the first preferred format that has any size wins
      if (best) break;
    }
    if (!best) {
      this.fail(`The capture device offers no size in ${this.formats.join(', ')}`);
      return;
    }
    const fps = Math.max(1, Math.round(best.fps));
    this.current = {
      kind: 'ffmpeg-input',
      args: this.inputArgs(best.format, best.width, best.height, fps),
      width: best.width,
      height: best.height,
      fps,
    };
    this.set({
      kind: 'fixed',
      status: 'signal',
      width: best.width,
      height: best.height,
      hz: best.fps,
      format: best.format,
      error: null,
    });
  }

  private inputArgs(format: string, width: number, height: number, fps: number | null): string[] {
    return [
      '-f',
      'v4l2',
      '-input_format',
      format,
      '-video_size',
      `${width}x${height}`,
      // an HDMI receiver's rate is the source's (S_PARM does nothing there)
      ...(fps !== null ? ['-framerate', String(fps)] : []),
      '-i',
      this.ctl.device,
    ];
  }

  private noPicture(
    status: CaptureStatus,
    error: string,
    size?: { width: number; height: number; hz: number },
  ): void {
    this.current = null;
    this.set({ kind: 'dv', status, error, ...(size ?? {}) });
  }

  private lost(error: string): void {
    this.current = null;
    this.applied = null;
    this.set({ status: 'no_device', error });
  }

  private fail(error: string): void {
    this.current = null;
    this.applied = null;
    this.log.warn({ device: this.ctl.device, error }, 'capture device fault');
    this.set({ status: 'error', error });
  }

  private set(patch: Partial<CaptureState>): void {
    const next = { ...this.capture, ...patch };
    const changed = JSON.stringify(next) !== JSON.stringify(this.capture);
    if (changed && next.status !== this.capture.status) {
      this.log.info(
        { device: next.device, status: next.status, error: next.error },
        'capture state',
      );
    }
    this.capture = next;
    if (!changed || this.disposed) return;
    const state = this.getState();
    for (const l of [...this.listeners]) l(state);
  }

  private async nodeExists(): Promise<boolean> {
    try {
      await access(this.ctl.device);
      return true;
    } catch {
      return false;
    }
  }

  /** The node's folder: an unplug or plug of the device re-reads the input at once. */
  private watchNode(): void {
    const name = basename(this.ctl.device);
    try {
      this.watcher = watch(dirname(this.ctl.device), (_event, file) => {
        if (file !== null && file !== name) return;
        void this.refresh().then(() => {
          if (this.capture.status !== 'no_device' && this.capture.kind !== 'fixed') {
            this.startWaiting();
          }
        });
      });
      this.watcher.on('error', (err) =>
        this.log.warn({ err }, 'watching the capture device failed'),
      );
    } catch (err) {
      this.log.warn({ err }, 'cannot watch the capture device node');
    }
  }

  /** One source-change wait at a time; each event starts the next wait, then reads the input. */
  private startWaiting(): void {
    if (this.waiting || this.disposed) return;
    this.waiting = true;
    void (async () => {
      while (!this.disposed) {
        const started = performance.now();
        const { result, error } = await this.ctl.waitForSourceChange(this.abort.signal);
        if (result === 'aborted') break;
        if (result === 'event') {
          void this.refresh();
          // once the next wait runs: a change in between is read here
          if (this.settleTimer) clearTimeout(this.settleTimer);
          this.settleTimer = setTimeout(() => void this.refresh(), SETTLE_MS);
          this.settleTimer.unref();
          continue;
        }
        await this.refresh();
        if (result === 'unsupported') {
          this.log.info(
            { device: this.ctl.device, error },
            'no source-change events on this device',
          );
          break;
        }
        if (this.capture.status === 'no_device') break; // the node's return starts it again
        if (performance.now() - started < WAIT_RETRY_MS) {
          await new Promise((r) => setTimeout(r, WAIT_RETRY_MS));
        }
      }
      this.waiting = false;
    })();
  }
}

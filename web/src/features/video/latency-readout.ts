/**
 * The latency readout (issue 28): for each frame the console presents, the time from its capture
 * on the device to its presentation here, shown in the status bar ("Latency 38 ms (capture to
 * display)") and kept for the video bench (`window.__kvmLatency`, bench/g2g.ts).
 *
 * - Capture time: the device's clock when the source gave the frame (the testbed's draw, the
 *   v4l2 buffer, the VNC update). WebRTC: the frame's RTP timestamp, which the device derives
 *   from that time (90 kHz of its performance.now(), media/encoder.ts; the same time also goes
 *   out as the abs-capture-time header extension, which Chromium reads for its own statistics).
 *   Direct H.264: the time in the header of each op 0x02 frame (routes/media.ts).
 * - Presentation time: WebRTC, the `now` of the requestVideoFrameCallback that reports the
 *   frame (the rendering update that puts it on screen); direct H.264, the animation frame in
 *   which the frame is drawn on the canvas. The display's own delay (scan-out, the panel) is
 *   not in it: docs/performance.md.
 * - The two clocks: the device and the browser are two machines. A `clock` exchange on the event
 *   socket (server/src/ws/clock.ts) gives the device's time in the middle of a round trip; the
 *   exchange with the shortest round trip of the last CLOCK_SAMPLES gives the offset, at most
 *   half its round trip off (`boundMs`).
 */
import { useSyncExternalStore } from 'react';
import { eventSocket } from '../connection/connection';

declare module '../../lib/event-socket' {
  interface EventPayloads {
    clock: { id: number; server_ms: number; mono_ms: number };
  }
}

/** Exchanges kept; the fastest of them gives the offset. */
export const CLOCK_SAMPLES = 32;
/** The first exchanges come this fast (a usable offset within a second)... */
export const CLOCK_FAST_MS = 150;
export const CLOCK_FAST_COUNT = 6;
/**
 * ...then, while the offset is known only to more than CLOCK_GOOD_BOUND_MS, one per
 * CLOCK_REFINE_MS, CLOCK_REFINE_COUNT at most (a minute): the first exchanges meet a page and a
 * device busy starting the video, and on a loaded 2-core machine the best of six was 20 ms
 * long, so the readout was up to 10 ms off in two runs of three (issue 28,
 * docs/performance.md)...
 */
export const CLOCK_GOOD_BOUND_MS = 1;
export const CLOCK_REFINE_MS = 500;
export const CLOCK_REFINE_COUNT = 120;
/** ...then one per this many ms (clock drift between two machines is a few ppm). */
export const CLOCK_SLOW_MS = 5_000;
/** Frames kept for the bench. */
export const FRAMES_KEPT = 4096;
/** How often the shown figure changes (a figure that changes per frame cannot be read). */
export const DISPLAY_EVERY_MS = 500;
/** RTP timestamps wrap after 2^32 ticks of 90 kHz: this many ms. */
export const RTP_WRAP_MS = 0x1_0000_0000 / 90;

export interface ClockSample {
  /** page epoch ms when the request left and when the answer arrived */
  sentAt: number;
  receivedAt: number;
  /** the device's epoch ms and performance.now() when it answered */
  serverMs: number;
  serverMono: number;
}

export interface ClockEstimate {
  /** device epoch ms minus page epoch ms */
  offsetMs: number;
  /** the estimate is at most this far off (half the round trip it came from) */
  boundMs: number;
  /** the device's performance.timeOrigin (epoch ms): its RTP timestamps count from there */
  serverOrigin: number;
}

/** The offset between the device's clock and this page's, from round trips. */
export class ClockOffset {
  private samples: ClockSample[] = [];

  add(sample: ClockSample): void {
    if (!(sample.receivedAt >= sample.sentAt)) return;
    this.samples.push(sample);
    if (this.samples.length > CLOCK_SAMPLES) this.samples.shift();
  }

  get count(): number {
    return this.samples.length;
  }

  /** From the exchange with the shortest round trip; null before the first one. */
  estimate(): ClockEstimate | null {
    let best: ClockSample | null = null;
    for (const s of this.samples) {
      if (!best || s.receivedAt - s.sentAt < best.receivedAt - best.sentAt) best = s;
    }
    if (!best) return null;
    const rtt = best.receivedAt - best.sentAt;
    return {
      offsetMs: best.serverMs - (best.sentAt + rtt / 2),
      boundMs: rtt / 2,
      serverOrigin: best.serverMs - best.serverMono,
    };
  }

  clear(): void {
    this.samples = [];
  }
}

/**
 * The device epoch ms of an RTP timestamp (90 kHz of the device's performance.now(), wrapped to
 * 32 bits): the unwrapped time nearest to the device's time now.
 */
export function captureFromRtp(
  rtpTimestamp: number,
  clock: ClockEstimate,
  pageNow: number,
): number {
  const serverMonoNow = pageNow + clock.offsetMs - clock.serverOrigin;
  const base = (rtpTimestamp >>> 0) / 90;
  const k = Math.round((serverMonoNow - base) / RTP_WRAP_MS);
  return clock.serverOrigin + base + k * RTP_WRAP_MS;
}

export type LatencyMode = 'webrtc' | 'direct_h264';

export interface LatencyFrame {
  mode: LatencyMode;
  /** page epoch ms the frame was presented */
  shownAt: number;
  /** device epoch ms the frame was captured */
  capturedAt: number;
  /** shownAt - capturedAt with the clock offset taken out */
  latencyMs: number;
  /** the clock estimate's bound then */
  boundMs: number;
  /** WebRTC: Chromium's own capture-to-callback figure (metadata.captureTime), if it gave one */
  browserMs?: number;
}

export interface LatencyView {
  /** the figure shown: the newest frame's, refreshed every DISPLAY_EVERY_MS */
  latencyMs: number | null;
  mode: LatencyMode | null;
  boundMs: number | null;
}

const EMPTY_VIEW: LatencyView = { latencyMs: null, mode: null, boundMs: null };

/** Frames dated against the device's clock; what the status bar shows. */
export class LatencyReadout {
  readonly clock = new ClockOffset();
  /** The newest FRAMES_KEPT frames, oldest first (the bench reads them). */
  readonly frames: LatencyFrame[] = [];
  private view: LatencyView = EMPTY_VIEW;
  private shownAt = -Infinity;
  private readonly listeners = new Set<() => void>();

  constructor(private readonly now: () => number = () => Date.now()) {}

  /**
   * A presented frame; false when nothing was recorded: no clock estimate yet, or the frame was
   * captured before `liveFrom` (page epoch ms). Direct H.264 passes the time its viewer started
   * or last asked for a key frame: the device answers both with the GOP it has cached, frames
   * that are the current picture but were captured up to seconds before (a still screen sends
   * one a second), so their age is not the live delay.
   */
  note(
    mode: LatencyMode,
    capturedAt: number,
    shownAt: number,
    extra: { browserMs?: number; liveFrom?: number } = {},
  ): boolean {
    const clock = this.clock.estimate();
    if (!clock || !Number.isFinite(capturedAt)) return false;
    const { liveFrom, ...rest } = extra;
    if (liveFrom !== undefined && capturedAt < liveFrom + clock.offsetMs) return false;
    const frame: LatencyFrame = {
      mode,
      shownAt,
      capturedAt,
      latencyMs: shownAt + clock.offsetMs - capturedAt,
      boundMs: clock.boundMs,
      ...rest,
    };
    this.frames.push(frame);
    if (this.frames.length > FRAMES_KEPT) this.frames.splice(0, this.frames.length - FRAMES_KEPT);
    const t = this.now();
    if (t - this.shownAt >= DISPLAY_EVERY_MS || this.view.mode !== mode) {
      this.shownAt = t;
      this.view = { latencyMs: frame.latencyMs, mode, boundMs: clock.boundMs };
      for (const l of this.listeners) l();
    }
    return true;
  }

  /** WebRTC: a frame by its RTP timestamp (see captureFromRtp). */
  noteRtp(rtpTimestamp: number, shownAt: number, extra: { browserMs?: number } = {}): boolean {
    const clock = this.clock.estimate();
    if (!clock) return false;
    return this.note('webrtc', captureFromRtp(rtpTimestamp, clock, shownAt), shownAt, extra);
  }

  /** No video: nothing to show. */
  reset(): void {
    this.view = EMPTY_VIEW;
    this.shownAt = -Infinity;
    for (const l of this.listeners) l();
  }

  getView = (): LatencyView => this.view;

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };
}

export const latencyReadout = new LatencyReadout();
(window as unknown as { __kvmLatency?: LatencyReadout }).__kvmLatency = latencyReadout;

export function useLatencyView(): LatencyView {
  return useSyncExternalStore(latencyReadout.subscribe, latencyReadout.getView);
}

/** What the clock exchange needs of the event socket (tests pass a fake). */
export interface ClockSocket {
  send(frame: { event_type: 'clock'; event: { id: number } }): boolean;
  on(type: 'clock', handler: (event: unknown) => void): () => void;
}

/**
 * Keeps `readout.clock` fed while the video runs: CLOCK_FAST_COUNT quick exchanges, then one
 * every CLOCK_REFINE_MS until the offset is known to CLOCK_GOOD_BOUND_MS (CLOCK_REFINE_COUNT at
 * most), then one every CLOCK_SLOW_MS. Returns the stop function.
 */
export function runClockSync(
  readout: LatencyReadout,
  socket: ClockSocket,
  now: () => number = () => performance.timeOrigin + performance.now(),
): () => void {
  const sent = new Map<number, number>();
  let nextId = 1;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  const off = socket.on('clock', (event) => {
    const e = event as { id?: unknown; server_ms?: unknown; mono_ms?: unknown };
    const receivedAt = now();
    if (typeof e.id !== 'number' || typeof e.server_ms !== 'number') return;
    if (typeof e.mono_ms !== 'number') return;
    const sentAt = sent.get(e.id);
    if (sentAt === undefined) return;
    sent.delete(e.id);
    readout.clock.add({ sentAt, receivedAt, serverMs: e.server_ms, serverMono: e.mono_ms });
  });
  let round = 0;
  const tick = (): void => {
    if (stopped) return;
    const id = nextId;
    nextId += 1;
    // a reply that never came is forgotten after the next few
    if (sent.size > 4) sent.clear();
    sent.set(id, now());
    socket.send({ event_type: 'clock', event: { id } });
    round += 1;
    timer = setTimeout(tick, nextIn());
  };
  const nextIn = (): number => {
    if (round < CLOCK_FAST_COUNT) return CLOCK_FAST_MS;
    const bound = readout.clock.estimate()?.boundMs ?? Infinity;
    const refining = round < CLOCK_FAST_COUNT + CLOCK_REFINE_COUNT;
    return refining && bound > CLOCK_GOOD_BOUND_MS ? CLOCK_REFINE_MS : CLOCK_SLOW_MS;
  };
  tick();
  return () => {
    stopped = true;
    clearTimeout(timer);
    off();
  };
}

/** The readout's clock runs on the console's event socket while a view watches. */
export function startClockSync(): () => void {
  return runClockSync(latencyReadout, {
    send: (frame) => eventSocket.send(frame),
    on: (type, handler) => eventSocket.on(type, handler),
  });
}

interface FrameMetadata {
  rtpTimestamp?: number;
  captureTime?: number;
}

/**
 * WebRTC: dates every frame `video` presents (requestVideoFrameCallback). Returns the stop
 * function; a browser without the callback or without RTP timestamps shows no figure.
 */
export function watchWebRtcLatency(
  video: HTMLVideoElement,
  readout: LatencyReadout = latencyReadout,
): () => void {
  if (typeof video.requestVideoFrameCallback !== 'function') return () => undefined;
  let handle: number | undefined;
  const onFrame: VideoFrameRequestCallback = (now, metadata) => {
    handle = video.requestVideoFrameCallback(onFrame);
    const meta = metadata as VideoFrameCallbackMetadata & FrameMetadata;
    if (typeof meta.rtpTimestamp !== 'number') return;
    const extra = typeof meta.captureTime === 'number' ? { browserMs: now - meta.captureTime } : {};
    readout.noteRtp(meta.rtpTimestamp, performance.timeOrigin + now, extra);
  };
  handle = video.requestVideoFrameCallback(onFrame);
  return () => {
    if (handle !== undefined) video.cancelVideoFrameCallback(handle);
    readout.reset();
  };
}

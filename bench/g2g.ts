/**
 * The glass-to-glass harness of the video benches (bench/video.ts: the device's own console;
 * bench/cloud.ts: the console through the fleet, forced through coturn). The testbed's 8-block
 * marker (its change counter) is drawn in the bench's process; init scripts in the page read it
 * from every frame the console presents (WebRTC: requestVideoFrameCallback; direct H.264: the
 * VideoFrame drawn on the canvas, in the page or in the console's worker) and date it with the
 * page's clock, corrected by the measured offset between the two clocks. bench/video.ts's
 * header says what "presented" means for each mode.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { CDPSession, Page } from 'playwright-core';
import { MARKER, MARKER_BITS } from '../server/src/platform/testbed/screen';
import type { Browser } from '../e2e/fixtures/browser';
import { directWorkerPrelude } from './direct-worker-probe';
import { clockOffset, median, note, percentile, round, sized } from './lib';

/** Changes per glass-to-glass run (fewer than 256: no marker value twice). */
const CHANGES = sized(120, 20);
/** Latencies outside this range are counted as outliers. */
const OUTLIER_MS = 2000;

/** Counters of the page's WebRTC inbound video (sum over its open peer connections). */
export interface RtpCounts {
  received: number;
  decoded: number;
  dropped: number;
}

/** A marker value the page presented, when (epoch ms, page clock), and the counters then. */
export interface Seen {
  v: number;
  t: number;
  presented: number;
  rtp?: RtpCounts;
}

export interface Rec {
  /** presented time of the first frame, ms since navigation start */
  first: number | null;
  /**
   * WebRTC: that frame's `presentationTime` (handed to the compositor), which does not wait for
   * a busy main thread as the callback does; ms since navigation start
   */
  firstSubmitted: number | null;
  /** frames presented (WebRTC: presentedFrames; direct: canvas draws of a VideoFrame) */
  presented: number;
  /** direct H.264: chunks given to a VideoDecoder, frames it output, and its resets */
  chunks: number;
  decoded: number;
  resets: number;
  seen: Seen[];
  last: number;
  /** take inbound-rtp counters on every new marker value (steady window only: it costs) */
  statsOnChange: boolean;
  /** WebRTC: expectedDisplayTime - callback time, to compare with the direct estimate */
  displayLead: number[];
}

/** Runs in the page before the console: records presented frames and marker values. */
export function harness(marker: {
  x: number;
  y: number;
  block: number;
  gap: number;
  bits: number;
}): void {
  const rec: Rec = {
    first: null,
    firstSubmitted: null,
    presented: 0,
    chunks: 0,
    decoded: 0,
    resets: 0,
    seen: [],
    last: -1,
    statsOnChange: false,
    displayLead: [],
  };
  (window as unknown as { __bench: Rec }).__bench = rec;
  // keep the console's peer connections, for their inbound-rtp statistics
  const pcs: RTCPeerConnection[] = [];
  const NativePC = window.RTCPeerConnection;
  window.RTCPeerConnection = function (
    this: unknown,
    ...args: ConstructorParameters<typeof RTCPeerConnection>
  ) {
    const pc = new NativePC(...args);
    pcs.push(pc);
    return pc;
  } as unknown as typeof RTCPeerConnection;
  window.RTCPeerConnection.prototype = NativePC.prototype;
  const rtpCounts = async (): Promise<RtpCounts> => {
    const c = { received: 0, decoded: 0, dropped: 0 };
    for (const pc of pcs) {
      if (pc.connectionState === 'closed') continue;
      (await pc.getStats()).forEach(
        (r: {
          type: string;
          kind?: string;
          framesReceived?: number;
          framesDecoded?: number;
          framesDropped?: number;
        }) => {
          if (r.type !== 'inbound-rtp' || r.kind !== 'video') return;
          c.received += r.framesReceived ?? 0;
          c.decoded += r.framesDecoded ?? 0;
          c.dropped += r.framesDropped ?? 0;
        },
      );
    }
    return c;
  };
  (window as unknown as { __rtp: () => Promise<RtpCounts> }).__rtp = rtpCounts;
  // The local candidate type of every open connection's selected pair ('host', 'srflx',
  // 'relay'...): which path the media took.
  (window as unknown as { __paths: () => Promise<string[]> }).__paths = async () => {
    const out: string[] = [];
    for (const pc of pcs) {
      if (pc.connectionState === 'closed') continue;
      const stats = new Map<string, Record<string, unknown>>();
      (await pc.getStats()).forEach((r: Record<string, unknown>) => stats.set(String(r['id']), r));
      for (const t of stats.values()) {
        if (t['type'] !== 'transport' || typeof t['selectedCandidatePairId'] !== 'string') continue;
        const pair = stats.get(t['selectedCandidatePairId']);
        const local = pair ? stats.get(String(pair['localCandidateId'])) : undefined;
        out.push(String(local?.['candidateType'] ?? 'unknown'));
      }
    }
    return out;
  };

  const nativeRaf = window.requestAnimationFrame.bind(window);
  // The frame time of the animation frame running now (null outside one).
  let frameTs: number | null = null;
  window.requestAnimationFrame = (cb: FrameRequestCallback): number =>
    nativeRaf((ts) => {
      frameTs = ts;
      try {
        cb(ts);
      } finally {
        frameTs = null;
      }
    });

  const note = (v: number, t: number): void => {
    if (rec.first === null) rec.first = t;
    if (v === rec.last) return;
    rec.last = v;
    const entry: Seen = { v, t: performance.timeOrigin + t, presented: rec.presented };
    rec.seen.push(entry);
    if (rec.statsOnChange) {
      void rtpCounts().then((c) => {
        entry.rtp = c;
      });
    }
  };
  // Direct H.264 in the console's worker (workerProbe): its frames, counts and times.
  new BroadcastChannel('kvm-bench-direct').onmessage = (e: MessageEvent<WorkerReport>) => {
    const m = e.data;
    rec.chunks = m.chunks;
    rec.decoded = m.decoded;
    rec.resets = m.resets;
    rec.presented = m.presented;
    // an epoch time in the worker's clock: as the page's, both read the same kernel clock
    if (m.v !== null) note(m.v, m.t - performance.timeOrigin);
  };
  const probe = document.createElement('canvas');
  probe.width = marker.bits * (marker.block + marker.gap);
  probe.height = 1;
  const pctx = probe.getContext('2d', { willReadFrequently: true })!;
  // `level(px)`: the brightness (0-255) at `px` marker pixels right of the marker's left edge
  const decodeWith = (level: (px: number) => number): number => {
    let v = 0;
    for (let b = 0; b < marker.bits; b += 1) {
      v = (v << 1) | (level(b * (marker.block + marker.gap) + marker.block / 2) > 128 ? 1 : 0);
    }
    return v;
  };
  // The marker of a frame the <video> presents, without converting the frame: a 2-row strip
  // of its luma plane through the blocks' middle (a few KB), where drawing the whole 1280x720
  // frame on a canvas cost the page's main thread 21 ms a frame (a Chromium trace: the
  // callbacks then ran 10 ms after their frame time and main frames came every 27 ms, which
  // delayed the very callback this harness dates a frame by). RGB frames (a GPU's) are drawn.
  const even = (n: number): number => Math.floor(n / 2) * 2;
  const readMarker = async (frame: VideoFrame, scale: number): Promise<number> => {
    try {
      const vr = frame.visibleRect;
      const fmt = frame.format;
      if (vr && fmt && /^(I4|NV12)/.test(fmt)) {
        const left = vr.x + marker.x * scale;
        const x = even(left);
        const y = even(vr.y + (marker.y + marker.block / 2) * scale);
        const width = Math.min(even(probe.width * scale) + 4, even(vr.x + vr.width - x));
        const rect = { x, y, width, height: 2 };
        const buf = new Uint8Array(frame.allocationSize({ rect }));
        const [luma] = await frame.copyTo(buf, { rect });
        return decodeWith((px) => buf[luma!.offset + Math.floor(left - x + px * scale)]!);
      }
      pctx.drawImage(
        frame,
        marker.x * scale,
        (marker.y + marker.block / 2) * scale,
        probe.width * scale,
        1,
        0,
        0,
        probe.width,
        1,
      );
      const data = pctx.getImageData(0, 0, probe.width, 1).data;
      return decodeWith((px) => data[Math.floor(px) * 4]!);
    } finally {
      frame.close();
    }
  };

  // WebRTC: every frame the <video> presents.
  const watchVideo = (video: HTMLVideoElement): void => {
    let lastCount = 0;
    const onFrame = (
      now: number,
      meta: {
        expectedDisplayTime: number;
        presentationTime: number;
        mediaTime: number;
        width: number;
        presentedFrames: number;
      },
    ): void => {
      video.requestVideoFrameCallback(onFrame as unknown as VideoFrameRequestCallback);
      // The first picture on screen is this callback's, whatever its marker: the read below
      // skips a frame the element has already replaced, which matters for dating a marker,
      // not for when the first frame showed (ttff_*; on a busy main thread the next readable
      // frame came 60-120 ms later).
      if (rec.first === null) {
        rec.first = now;
        rec.firstSubmitted = meta.presentationTime;
      }
      // presentedFrames counts every frame handed to the compositor, also those whose
      // callback the page missed
      rec.presented += Math.max(0, meta.presentedFrames - lastCount);
      lastCount = meta.presentedFrames;
      rec.displayLead.push(meta.expectedDisplayTime - now);
      if (rec.displayLead.length > 200) rec.displayLead.shift();
      // The element's current frame can be newer than the one this callback describes (it
      // arrived after the update that presented that one): reading it would date the newer
      // picture with the older frame's time. Such a frame is read at its own callback.
      const frame = new VideoFrame(video);
      if (Math.abs(frame.timestamp - meta.mediaTime * 1e6) > 500) {
        frame.close();
        return;
      }
      void readMarker(frame, meta.width / 1280 || 1).then(
        (v) => note(v, now),
        () => undefined,
      );
    };
    video.requestVideoFrameCallback(onFrame as unknown as VideoFrameRequestCallback);
  };
  const watched = new WeakSet<Element>();
  new MutationObserver(() => {
    for (const v of document.querySelectorAll('video')) {
      if (!watched.has(v)) {
        watched.add(v);
        watchVideo(v);
      }
    }
  }).observe(document, { childList: true, subtree: true });

  // Direct H.264: the decoder's own counts, and every VideoFrame the console draws.
  const NativeDecoder = window.VideoDecoder as typeof VideoDecoder | undefined;
  if (NativeDecoder) {
    window.VideoDecoder = class extends NativeDecoder {
      constructor(init: VideoDecoderInit) {
        super({
          ...init,
          output: (frame: VideoFrame) => {
            rec.decoded += 1;
            init.output(frame);
          },
        });
      }
      override decode(chunk: EncodedVideoChunk): void {
        rec.chunks += 1;
        super.decode(chunk);
      }
      override reset(): void {
        rec.resets += 1;
        super.reset();
      }
    };
  }
  const draw = CanvasRenderingContext2D.prototype.drawImage;
  CanvasRenderingContext2D.prototype.drawImage = function (
    this: CanvasRenderingContext2D,
    ...args: unknown[]
  ) {
    (draw as (...a: unknown[]) => void).apply(this, args);
    if (this.canvas === probe || !(args[0] instanceof VideoFrame)) return;
    rec.presented += 1;
    const c = this.canvas;
    const scale = c.width / 1280 || 1;
    const px = this.getImageData(
      marker.x * scale,
      (marker.y + marker.block / 2) * scale,
      probe.width * scale,
      1,
    ).data;
    const v = decodeWith((x) => px[Math.floor(x * scale) * 4]!);
    if (frameTs !== null) note(v, frameTs);
    else nativeRaf((ts) => note(v, ts));
  } as typeof draw;
}

/** What workerProbe reports for each frame the worker draws. */
export interface WorkerReport {
  /** the marker value drawn (null: counts only) */
  v: number | null;
  /** epoch ms: the worker's animation frame that drew it */
  t: number;
  chunks: number;
  decoded: number;
  resets: number;
  presented: number;
}

/**
 * Runs in the console's direct H.264 worker before the console's code (directWorkerPrelude):
 * the same counts and marker reads as the page's hooks, for the OffscreenCanvas the worker
 * draws on inside its own animation frames.
 */
export function workerProbe(marker: {
  x: number;
  y: number;
  block: number;
  gap: number;
  bits: number;
}) {
  const scope = self as unknown as {
    requestAnimationFrame: (cb: (ts: number) => void) => number;
    VideoDecoder?: typeof VideoDecoder;
  };
  const channel = new BroadcastChannel('kvm-bench-direct');
  const counts = { chunks: 0, decoded: 0, resets: 0, presented: 0 };
  const NativeDecoder = scope.VideoDecoder;
  if (NativeDecoder) {
    scope.VideoDecoder = class extends NativeDecoder {
      constructor(init: VideoDecoderInit) {
        super({
          ...init,
          output: (frame: VideoFrame) => {
            counts.decoded += 1;
            init.output(frame);
          },
        });
      }
      override decode(chunk: EncodedVideoChunk): void {
        counts.chunks += 1;
        super.decode(chunk);
      }
      override reset(): void {
        counts.resets += 1;
        super.reset();
      }
    };
  }
  let frameTs: number | null = null;
  const nativeRaf = scope.requestAnimationFrame?.bind(self);
  if (nativeRaf) {
    scope.requestAnimationFrame = (cb) =>
      nativeRaf((ts) => {
        frameTs = ts;
        try {
          cb(ts);
        } finally {
          frameTs = null;
        }
      });
  }
  const proto = OffscreenCanvasRenderingContext2D.prototype;
  const draw = proto.drawImage;
  proto.drawImage = function (this: OffscreenCanvasRenderingContext2D, ...args: unknown[]) {
    (draw as (...a: unknown[]) => void).apply(this, args);
    if (!(args[0] instanceof VideoFrame)) return;
    counts.presented += 1;
    const scale = this.canvas.width / 1280 || 1;
    const px = this.getImageData(
      marker.x * scale,
      (marker.y + marker.block / 2) * scale,
      marker.bits * (marker.block + marker.gap) * scale,
      1,
    ).data;
    let v = 0;
    for (let b = 0; b < marker.bits; b += 1) {
      const x = Math.floor((b * (marker.block + marker.gap) + marker.block / 2) * scale);
      v = (v << 1) | (px[x * 4]! > 128 ? 1 : 0);
    }
    const report = (ts: number): void =>
      channel.postMessage({ v, t: performance.timeOrigin + ts, ...counts });
    if (frameTs !== null) report(frameTs);
    else if (nativeRaf) nativeRaf(report);
    else report(performance.now());
  } as typeof draw;
}

/**
 * A page with the harness opening the console at `url`. `token`: the device's local session,
 * put in localStorage as the console keeps it; without one the browser context is already
 * signed in (the fleet's cookie). `extra`: one more init script for the page and one for the
 * direct H.264 worker (bench/ttff-probe.ts).
 */
export async function openConsole(
  browser: Browser,
  url: string,
  token?: string,
  extra?: { page: (() => void) | string; worker: () => void },
): Promise<Page> {
  const page = await browser.context.newPage();
  const marker = { ...MARKER, bits: MARKER_BITS };
  await page.addInitScript(harness, marker);
  const workerExtra = extra ? `\n(${extra.worker.toString()})();` : '';
  await page.addInitScript(
    directWorkerPrelude,
    `(${workerProbe.toString()})(${JSON.stringify(marker)});${workerExtra}`,
  );
  if (extra) await page.addInitScript(extra.page);
  if (token !== undefined)
    await page.addInitScript((t: string) => localStorage.setItem('auth_token', t), token);
  if (TRACE_DIR) await startTrace(browser, page);
  await page.goto(url);
  return page;
}

/**
 * KVM_BENCH_TRACE_DIR=<folder>: each page the benches open records a Chromium trace (the
 * media, WebRTC, scheduler, timeline and compositor categories) from before its load, written by
 * `saveTrace` as JSON that chrome://tracing or Perfetto open. Tracing costs the page time:
 * the figures of such a run are not comparable with others.
 */
export const TRACE_DIR = process.env['KVM_BENCH_TRACE_DIR'] || null;
const TRACE_CATEGORIES = [
  'toplevel',
  'media',
  'disabled-by-default-media',
  'devtools.timeline',
  'disabled-by-default-devtools.timeline',
  'v8.execute',
  'blink',
  'cc',
  'gpu',
  'viz',
  'renderer.scheduler',
  'webrtc',
  'disabled-by-default-webrtc',
];
const traces = new WeakMap<Page, CDPSession>();

async function startTrace(browser: Browser, page: Page): Promise<void> {
  const cdp = await browser.context.newCDPSession(page);
  await cdp.send('Tracing.start', {
    traceConfig: { includedCategories: TRACE_CATEGORIES },
    transferMode: 'ReturnAsStream',
  });
  traces.set(page, cdp);
}

/** Ends the page's trace and writes it to TRACE_DIR/<name>.json; nothing without a trace. */
export async function saveTrace(page: Page, name: string): Promise<void> {
  const cdp = traces.get(page);
  if (!cdp || !TRACE_DIR) return;
  traces.delete(page);
  const complete = new Promise<string | undefined>((r) =>
    cdp.once('Tracing.tracingComplete', (e) => r(e.stream)),
  );
  await cdp.send('Tracing.end');
  const stream = await complete;
  if (!stream) return;
  const parts: string[] = [];
  for (;;) {
    const chunk = await cdp.send('IO.read', { handle: stream });
    parts.push(chunk.data);
    if (chunk.eof) break;
  }
  await cdp.send('IO.close', { handle: stream });
  await mkdir(TRACE_DIR, { recursive: true });
  await writeFile(join(TRACE_DIR, `${name}.json`), parts.join(''));
}

export function rec(page: Page): Promise<Rec> {
  return page.evaluate(() => (window as unknown as { __bench: Rec }).__bench);
}

/** The local candidate type of each open peer connection's selected pair. */
export function mediaPaths(page: Page): Promise<string[]> {
  return page.evaluate(() => (window as unknown as { __paths: () => Promise<string[]> }).__paths());
}

export async function firstFrame(page: Page, timeoutMs = 15_000): Promise<number> {
  await page.waitForFunction(
    () => (window as unknown as { __bench?: { first: number | null } }).__bench?.first != null,
    null,
    { timeout: timeoutMs },
  );
  return (await rec(page)).first!;
}

/** How far the page's epoch clock is ahead of ours. */
export function pageClock(page: Page): Promise<{ offset: number; bound: number }> {
  return clockOffset(() => page.evaluate(() => performance.timeOrigin + performance.now()));
}

export interface G2g {
  p50: number;
  p95: number;
  samples: number;
  outliers: number;
  missed: number;
  clock: { offset: number; bound: number };
  /** the console's latency readout against this harness, null without a testbed frame clock */
  readout: ReadoutError | null;
}

/**
 * The console's latency readout (web/src/features/video/latency-readout.ts) against this
 * harness, for the frames both dated: |readout - harness| where the harness's figure is the
 * same span, the capture of the frame that first carries the change (the first unit the
 * encoder gave out captured after the change; without the feed, the testbed's next frame: this
 * process's clock) to its presentation (the page's clock, corrected by the offset
 * this harness measured itself). The readout dates the same presentation (the same callback or
 * animation frame: matched on its time) with the capture time the stream carried and its own
 * clock estimate (the event socket's clock exchange). p50/p95 over the matched changes.
 */
export interface ReadoutError {
  p50: number;
  p95: number;
  /** every |readout - harness| (ms), for pooled percentiles */
  errors: number[];
  /** changes the harness measured that the readout had no figure for */
  unmatched: number;
  /** median change drawn -> captured in a frame (the source's frame wait, not in the readout) */
  sourceWaitMs: number;
  /** median readout - harness, signed (a bias of the clock estimate shows here) */
  signedMedian: number;
  /**
   * readout - harness where |.| > 5 ms, signed. Negative: the readout dated a frame captured
   * later than the first one the encoder gave out after the change, i.e. that one was dropped
   * on the way (overtaken in the decoder queue, not composited) and a later frame showed the
   * change first: the harness cannot see which frame was presented, the readout can.
   */
  tail: number[];
  /** median Chromium's own capture-to-callback figure (rVFC captureTime) minus the readout's */
  browserMinusReadoutMs: number | null;
}

/** A readout frame as the page keeps it (LatencyFrame in latency-readout.ts). */
interface ReadoutFrame {
  mode: 'webrtc' | 'direct_h264';
  shownAt: number;
  capturedAt: number;
  latencyMs: number;
  browserMs?: number;
}

/** The testbed picture's change marker, drawn into its next frame. */
export interface MarkedPicture {
  markChange(now: number): number;
  /** the testbed draws each frame's number as it captures the frame (its frame clock) */
  drawFrameNumber?(n: number): void;
}

/**
 * CHANGES changes of `picture` at irregular intervals, each to the frame showing it presented
 * on `page` (already presenting: firstFrame), then the page closed. `label` names the run in
 * the notes; `mode` says which of the page's extra counts they print.
 */
export async function glassToGlass(
  page: Page,
  picture: MarkedPicture,
  label: string,
  mode: 'webrtc' | 'direct_h264',
  feed?: { subscribe(onUnit: (unit: { capturedAt: number }) => void): () => void },
): Promise<G2g> {
  await new Promise((r) => setTimeout(r, 1500));
  const clock = await pageClock(page);
  // this run's changes: marker value -> epoch ms drawn (120 < 256: no value twice)
  const drawn = new Map<number, number>();
  // the server's event loop (this process): a stalled loop delays the testbed's frames
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const load0 = loadavg()[0]!;
  // the capture times (epoch ms, this process) of the frames the encoder gave out, else of
  // every frame the testbed made: the first one after a change carries it
  const frameTimes: number[] = [];
  const drawFrameNumber = feed ? undefined : picture.drawFrameNumber;
  const unsubscribe = feed?.subscribe((unit) =>
    frameTimes.push(performance.timeOrigin + unit.capturedAt),
  );
  if (drawFrameNumber) {
    picture.drawFrameNumber = (n: number) => {
      frameTimes.push(performance.timeOrigin + performance.now());
      drawFrameNumber.call(picture, n);
    };
  }
  for (let i = 0; i < CHANGES; i += 1) {
    const now = performance.now();
    const n = picture.markChange(now);
    drawn.set(n & 0xff, performance.timeOrigin + now);
    await new Promise((r) => setTimeout(r, 120 + Math.random() * 130));
  }
  await new Promise((r) => setTimeout(r, 500));
  loop.disable();
  if (drawFrameNumber) picture.drawFrameNumber = drawFrameNumber;
  unsubscribe?.();
  frameTimes.sort((a, b) => a - b); // the GOP a subscriber gets first is older
  const after = await pageClock(page);
  const r = await rec(page);
  const readoutFrames = await page.evaluate(
    () =>
      (window as unknown as { __kvmLatency?: { frames: ReadoutFrame[] } }).__kvmLatency?.frames ??
      [],
  );
  const drawnAll = new Map(drawn);
  await saveTrace(page, `g2g-${label}`);
  await page.close();
  const lat: number[] = [];
  const outliers: number[] = [];
  let foreign = 0;
  for (const { v, t } of r.seen) {
    const at = drawn.get(v);
    // the picture the page opened with, or a marker read across a transition
    if (at === undefined) {
      foreign += 1;
      continue;
    }
    drawn.delete(v);
    const l = t - clock.offset - at;
    if (l < 0 || l >= OUTLIER_MS) outliers.push(l);
    if (l >= -clock.bound) lat.push(Math.max(0, l));
  }
  note(
    `g2g ${label}: ${lat.length} of ${CHANGES} changes presented, ${drawn.size} never, ` +
      `${foreign} other marker values; outliers [${outliers.map((o) => round(o)).join(', ')}]; ` +
      `page clock ${round(clock.offset, 2)} ms ahead (±${round(clock.bound, 2)}), ` +
      `${round(after.offset - clock.offset, 2)} ms drift over the run; server event loop ` +
      `delay p99 ${round(loop.percentile(99) / 1e6)} max ${round(loop.max / 1e6)} ms; ` +
      `load average ${round(load0, 2)} -> ${round(loadavg()[0]!, 2)}` +
      (mode === 'webrtc' && r.displayLead.length
        ? `; expectedDisplayTime - callback time: median ${round(median(r.displayLead))} ms`
        : '') +
      (mode === 'direct_h264'
        ? `; page: ${r.chunks} chunks decoded into ${r.decoded} frames, ${r.presented} drawn, ` +
          `${r.resets} decoder resets`
        : ''),
  );
  const readout =
    feed || drawFrameNumber
      ? readoutError(r.seen, drawnAll, frameTimes, readoutFrames, mode, clock.offset)
      : null;
  if (readout) {
    note(
      `g2g ${label} readout: |readout - harness| p50 ${round(readout.p50, 2)} p95 ` +
        `${round(readout.p95, 2)} ms over ${readout.errors.length} changes, ${readout.unmatched} ` +
        `without a readout; change -> frame capture median ${round(readout.sourceWaitMs, 1)} ms ` +
        `(not in the readout); readout - harness median ${round(readout.signedMedian, 2)} ms, ` +
        `over 5 ms: [${readout.tail.map((e) => round(e)).join(', ')}]` +
        (readout.browserMinusReadoutMs !== null
          ? `; Chromium's captureTime figure - readout: median ${round(readout.browserMinusReadoutMs, 1)} ms`
          : ''),
    );
  }
  return {
    p50: percentile(lat, 50),
    p95: percentile(lat, 95),
    samples: lat.length,
    outliers: outliers.length,
    missed: drawn.size,
    clock,
    readout,
  };
}

/** See ReadoutError. */
function readoutError(
  seen: readonly Seen[],
  drawn: ReadonlyMap<number, number>,
  frameTimes: readonly number[],
  frames: readonly ReadoutFrame[],
  mode: 'webrtc' | 'direct_h264',
  pageOffset: number,
): ReadoutError {
  const errors: number[] = [];
  const signed: number[] = [];
  const waits: number[] = [];
  const browser: number[] = [];
  let unmatched = 0;
  const used = new Set<number>();
  for (const { v, t } of seen) {
    const at = drawn.get(v);
    if (at === undefined || used.has(v)) continue;
    used.add(v);
    // the first frame the testbed captured after the change was drawn carries it
    const captured = frameTimes.find((f) => f >= at);
    if (captured === undefined) continue;
    waits.push(captured - at);
    const frame = frames.find((f) => f.mode === mode && Math.abs(f.shownAt - t) < 0.5);
    if (!frame) {
      unmatched += 1;
      continue;
    }
    const harness = t - pageOffset - captured;
    errors.push(Math.abs(frame.latencyMs - harness));
    signed.push(frame.latencyMs - harness);
    if (frame.browserMs !== undefined) browser.push(frame.browserMs - frame.latencyMs);
  }
  return {
    p50: percentile(errors, 50),
    p95: percentile(errors, 95),
    errors,
    unmatched,
    sourceWaitMs: median(waits),
    signedMedian: median(signed),
    tail: signed.filter((e) => Math.abs(e) > 5),
    browserMinusReadoutMs: browser.length ? median(browser) : null,
  };
}

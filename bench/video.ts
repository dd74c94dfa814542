/**
 * `npm run bench -- video`: one JSON object of the video figures of issue 3, measured on the
 * testbed target with Debian's Chromium on this machine (`--short`: small counts, see lib.ts).
 *
 * The server runs in this process (so the harness can read the testbed's change log and the
 * encoder's output) and serves the real console; Chromium loads it logged in. An init script
 * in the page reads the testbed's 8-block marker (the change counter) from every frame it
 * presents and counts what it received, decoded and presented.
 *
 * "Presented" is one end point for both modes: the frame time (the animation frame's
 * timestamp) of the rendering update that first puts the picture on screen.
 * - WebRTC: the time of the rendering update whose requestVideoFrameCallback first reports
 *   the frame (its `now`: the update's frame time). Not `expectedDisplayTime`: Chromium puts
 *   that at the update's time in one run and a vsync later in another (the notes print the
 *   difference), which the direct path has no counterpart for. The element's current
 *   frame is read as a VideoFrame and skipped when it is not the frame the callback
 *   describes (a newer one that arrived meanwhile), so no picture is dated too early.
 * - direct H.264: the console draws the decoded VideoFrame on its canvas inside an animation
 *   frame: that frame's timestamp (a draw outside one takes the next one's). The console does
 *   this in a worker on an OffscreenCanvas (workerProbe reads it there, see
 *   direct-worker-probe.ts) or, without one, on the page's main thread (the page's hooks).
 * A frame whose callback the page missed (a busy main thread) is read at the next one: late
 * by up to that gap, as a user would see it.
 *
 * - ttff_*_ms: navigation start to the first presented frame with the encoder running (warm),
 *   median of 5 loads. ttff_cold_ms: the same after the encoder has stopped (no viewer for
 *   longer than the hub's linger; the streamer state says `h264.online: false` and no encoder
 *   runs), WebRTC, median of 3, as the device does it by default: the hub's spare ffmpeg
 *   (`video.spare_encoder`, media/video-hub.ts) waits for its first frame; the load starts once
 *   that spare has finished its own start (spareStarted: its CPU time stood still), not while
 *   ffmpeg still links its libraries in the first half second after the encoder stopped.
 *   The first presented frame is the first requestVideoFrameCallback of any <video> (g2g.ts).
 *   ttff_cold_no_spare_ms: the same with the spare off (killed, none started again), so no
 *   ffmpeg at all runs when the page loads (not in --short). ttff_*_parts: the steps of the
 *   load whose time is that median (the lower middle one of an even count), each in ms since
 *   navigation start, in time order (bench/ttff-probe.ts says what each is); cold adds the
 *   server's encoder_spawn (the hub made its encoder), encoder_running (its ffmpeg runs: at
 *   once with the spare) and encoder_first_unit. `--ttff` measures only the ttff fields.
 *   ttff_{webrtc,direct,cold}_console_ms: navigation start to the console's toolbar in the
 *   page (its chrome rendered, the probe's `console_toolbar`), median of the same loads: the
 *   console renders after the video's start, and this says what that costs it.
 *   KVM_BENCH_CPU=<fraction> runs any bench on that share of the machine's CPU, a slower
 *   machine of the same kind (scripts/cpu-limit.mjs; the JSON then says `cpu_limit`).
 *   KVM_BENCH_WEB_DIR serves a console built elsewhere (to compare two builds in one session).
 *   KVM_BENCH_WEB_DIR_B=<dir> compares two console builds in one run, load by load: the server
 *   serves both builds' assets (names are content hashes) and B's page as /index-b.html, which
 *   the load opens and shows as / before its scripts run; A (KVM_BENCH_WEB_DIR or web/dist) and
 *   B alternate, each arm with the loads above; the B arm's fields end in `_b`
 *   (`ttff_webrtc_b_ms`, `ttff_webrtc_b_parts`...).
 *   On a noisy machine runs of one build differ by more than two builds do: alternating loads
 *   meet the same noise.
 * - g2g_*: testbed change drawn (this process's clock) to the frame showing it presented (the
 *   page's clock); both epoch ms, the page's corrected by the measured offset between the two
 *   (clock_offset_ms, at most clock_offset_bound_ms off). 1280x720 at 60 fps, 120 changes at
 *   irregular intervals; only this run's changes count (the picture the page opens with is
 *   the last run's). Every sample counts in the percentiles; `*_outliers` says how many fell
 *   outside 0-2000 ms (below 0 is a clock error beyond the bound and is left out), `*_missed`
 *   how many changes were never presented, `*_samples` how many were.
 * - dropped_frames_60s: preset 2 (5000 kbit/s, gop 60) at 30 fps for 60 s, WebRTC: frames the
 *   source should have produced in the window minus frames the page presented. The window is
 *   bounded by two marker changes, so both ends count the same frames: the server counts the
 *   source's frames and the encoder's units captured between them, the page its presented
 *   (requestVideoFrameCallback presentedFrames), decoded, received and dropped frames
 *   (inbound-rtp) between seeing them. `dropped_by` splits the total by stage, signed: a
 *   negative value is a counting mismatch, shown, never clamped.
 * - bitrate_error_pct: |kbit/s - preset| / preset over that window, the kbit/s from the bytes
 *   of every unit the encoder emitted for the window's frames, with incompressible noise on
 *   screen so the encoder must spend its whole budget.
 * - cpu_pct_per_extra_viewer: this process's (the server's) CPU with 1 and with 4 WebRTC
 *   viewers (werift peers in a child process, see cpuPerViewer), the difference over the 3
 *   extra viewers, in % of a core, preset 2 at 30 fps with the noise band on; median of three
 *   alternations.
 * - latency_readout_error_{webrtc,direct}_ms: the console's latency readout (the figure its
 *   status bar shows for each presented frame, latency-readout.ts) against the g2g harness's own
 *   measurement of the same frames: p50 of |readout - harness| over the g2g changes both dated,
 *   the harness's span being the capture of the first frame the encoder gave out after the
 *   change to its presentation (g2g.ts ReadoutError). latency_readout_error_ms: p50 over both
 *   modes' changes together, latency_readout_error_p95_ms their p95, latency_readout_samples
 *   how many. The p95 also counts changes whose first encoded frame never reached the screen
 *   (dropped or overtaken on the way, see the notes' signed tail): there the readout dates the
 *   later frame that was presented and the harness, which cannot tell frames apart, the first
 *   one. `--g2g` measures only these and g2g_*.
 * - g2g_qemu_*: a change of the QEMU guest's screen (a key to the guest's shell) to the frame
 *   presented, WebRTC, on the qemu target's own server process: see video-qemu.ts; with it
 *   qemu_idle_*, what a watched still console costs there (frames a second, encoder and server
 *   CPU).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import type { FastifyInstance } from 'fastify';
import { buildTestApp } from '../server/src/test-helpers';
import type { TestbedVideo } from '../server/src/drivers/video/testbed';
import { build as esbuild } from 'esbuild';
import { Browser } from '../e2e/fixtures/browser';
import { REPO_ROOT } from '../e2e/fixtures/server';
import {
  firstFrame,
  glassToGlass as measureG2g,
  openConsole as openPage,
  rec,
  saveTrace,
  type G2g,
  type Rec,
  type Seen,
} from './g2g';
import { QemuVideoTarget, qemuFields, type QemuG2g } from './video-qemu';
import { median, note, percentile, round, runMarks, sized, initAndLogin } from './lib';
import {
  pageOrigin,
  readParts,
  sortParts,
  ttffProbe,
  ttffWorkerProbe,
  type Parts,
} from './ttff-probe';
import type { H264Encoder } from '../server/src/media/encoder';

const PASSWORD = 'benchpass';
const TTFF_LOADS = sized(5, 2);
const COLD_LOADS = sized(3, 1);
const COLD_NO_SPARE_LOADS = sized(3, 0);
/** The spare's start (spareStarted): CPU time still for this long, at most the max. */
const SPARE_STILL_MS = 150;
const SPARE_SETTLE_MAX_MS = 5_000;
const STEADY_MS = sized(60_000, 5_000);
const CPU_ROUNDS = sized(3, 1);
const CPU_WINDOW_MS = sized(10_000, 2_000);
const CPU_SETTLE_MS = sized(3_000, 1_000);
/** `--ttff`: the time-to-first-frame fields only. */
const ONLY_TTFF = process.argv.includes('--ttff');
/** `--g2g`: the testbed's glass-to-glass and latency readout fields only. */
const ONLY_G2G = process.argv.includes('--g2g');
/** Ends the run after the ttff fields (`--ttff`). */
class TtffOnly extends Error {}

interface Ctx {
  app: FastifyInstance;
  base: string;
  testbed: TestbedVideo;
  token: string;
}

type Mode = 'webrtc' | 'direct_h264';

async function setMode(ctx: Ctx, mode: Mode): Promise<void> {
  const res = await fetch(`${ctx.base}/api/system/set_config`, {
    method: 'POST',
    headers: { token: ctx.token, 'content-type': 'application/json' },
    body: JSON.stringify({ video_mode: mode }),
  });
  if (!res.ok) throw new Error(`set_config: ${res.status}`);
}

async function setParams(ctx: Ctx, query: string): Promise<void> {
  const res = await fetch(`${ctx.base}/api/streamer/set_params?${query}`, {
    method: 'POST',
    headers: { token: ctx.token },
  });
  if (!res.ok) throw new Error(`set_params: ${res.status}`);
}

function openConsole(browser: Browser, ctx: Ctx): Promise<Page> {
  return openPage(browser, `${ctx.base}/`, ctx.token);
}

async function glassToGlass(browser: Browser, ctx: Ctx, mode: Mode): Promise<G2g> {
  await setMode(ctx, mode);
  const page = await openConsole(browser, ctx);
  await firstFrame(page);
  const keys = keyFrameCounts(ctx);
  try {
    return await measureG2g(page, ctx.testbed.picture, mode, mode, ctx.app.ctx.video);
  } finally {
    keys.off();
    note(`g2g ${mode}: server ${JSON.stringify(keys.counts)}`);
  }
}

/**
 * The hub's encoder restarts by reason while a measure ran (a viewer's key frame request is
 * 'key frame requested'): each one interrupts every viewer. Wraps the hub's private
 * restartEncoder, as encoderTimes does its startEncoder.
 */
function keyFrameCounts(ctx: Ctx): { counts: Record<string, number>; off: () => void } {
  const counts: Record<string, number> = {};
  const hub = ctx.app.ctx.video as unknown as { restartEncoder: (reason: string) => void };
  const restart = hub.restartEncoder;
  hub.restartEncoder = function (this: typeof hub, reason: string) {
    counts[`restart: ${reason}`] = (counts[`restart: ${reason}`] ?? 0) + 1;
    restart.call(this, reason);
  };
  return { counts, off: () => (hub.restartEncoder = restart) };
}

interface Ttff {
  ms: number;
  parts: Parts;
}

/** A median load, and the median of the loads' console_toolbar part (NaN if one had none). */
interface TtffMedian extends Ttff {
  consoleMs: number;
}

/** The median of the loads' times, with the parts of the load that has it (lower middle). */
function medianLoad(loads: Ttff[], label: string): TtffMedian {
  for (const l of loads) note(`ttff ${label} ${round(l.ms)} ms: ${JSON.stringify(l.parts)}`);
  const sorted = [...loads].sort((a, b) => a.ms - b.ms);
  return {
    ms: median(loads.map((l) => l.ms)),
    parts: sorted[Math.floor((sorted.length - 1) / 2)]!.parts,
    consoleMs: median(loads.map((l) => l.parts['console_toolbar'] ?? NaN)),
  };
}

/** Waits (10 s at most) until the probe saw the console's toolbar: the chrome has rendered. */
async function consoleShown(page: Page): Promise<void> {
  await page
    .waitForFunction(
      () => (window as unknown as { __ttff?: Record<string, number> }).__ttff?.console_toolbar,
      null,
      { timeout: 10_000, polling: 50 },
    )
    .catch(() => undefined); // the part is then missing and the field NaN: shown, not hidden
}

/** A console build of an A/B run (KVM_BENCH_WEB_DIR_B): the path of its page. */
type Arm = { name: 'a' | 'b'; path: string };

/** B's page as the server serves it (mergedWebDir). */
const PAGE_B = '/index-b.html';

/** Shows either arm's page as / (no query) before the console's scripts read the location. */
function asRoot(pageB: string): void {
  if (location.pathname === pageB || location.search.startsWith('?load=')) {
    history.replaceState(null, '', '/');
  }
}

let loadCount = 0;

function openProbed(browser: Browser, ctx: Ctx, arm: Arm): Promise<Page> {
  const probe = ARMS.length > 1 ? `(${asRoot.toString()})(${JSON.stringify(PAGE_B)});` : '';
  // the query keeps a page of either arm from the browser's cache (B's is a static file)
  const query = ARMS.length > 1 ? `?load=${(loadCount += 1)}` : '';
  return openPage(browser, `${ctx.base}${arm.path}${query}`, ctx.token, {
    page: probe ? `${probe}(${ttffProbe.toString()})();` : ttffProbe,
    worker: ttffWorkerProbe,
  });
}

/** The arms of this run: A alone, or A and B (KVM_BENCH_WEB_DIR_B) alternating. */
let ARMS: Arm[] = [{ name: 'a', path: '/' }];

/** Load i's arm: A, B, A, B... */
function armOf(i: number): Arm {
  return ARMS[i % ARMS.length]!;
}

/** The medians of each arm's loads. */
function medianArms(loads: { arm: Arm; load: Ttff }[], label: string): Record<string, TtffMedian> {
  const out: Record<string, TtffMedian> = {};
  for (const arm of ARMS) {
    const mine = loads.filter((l) => l.arm === arm).map((l) => l.load);
    out[arm.name] = medianLoad(mine, ARMS.length > 1 ? `${label} (${arm.name})` : label);
  }
  return out;
}

async function ttff(browser: Browser, ctx: Ctx, mode: Mode): Promise<Record<string, TtffMedian>> {
  await setMode(ctx, mode);
  const loads: { arm: Arm; load: Ttff }[] = [];
  for (let i = 0; i < TTFF_LOADS * ARMS.length; i += 1) {
    const arm = armOf(i);
    const page = await openProbed(browser, ctx, arm);
    const ms = await firstFrame(page).catch(async (err: unknown) => {
      // what the load got to, for the notes
      note(`ttff ${mode}: no frame; ${JSON.stringify(await readParts(page, null))}`);
      throw err;
    });
    // the steps that finish after the first frame (a late event) still count where they fell
    await consoleShown(page);
    await new Promise((r) => setTimeout(r, 200));
    loads.push({ arm, load: { ms, parts: await readParts(page, ms) } });
    await saveTrace(page, `ttff-${mode}-${i}`);
    await page.close();
    await new Promise((r) => setTimeout(r, 300));
  }
  return medianArms(loads, mode);
}

/**
 * The server's side of a cold start (epoch ms, this process's clock): when the hub created its
 * encoder, when ffmpeg ran, when the first unit came. Wraps the hub's private startEncoder.
 */
function encoderTimes(ctx: Ctx): { times: Record<string, number>; off: () => void } {
  const times: Record<string, number> = {};
  const epoch = () => performance.timeOrigin + performance.now();
  const hub = ctx.app.ctx.video as unknown as {
    startEncoder: (...a: unknown[]) => void;
    encoder: H264Encoder | null;
  };
  const original = hub.startEncoder;
  hub.startEncoder = function (this: typeof hub, ...a: unknown[]) {
    times['encoder_spawn'] ??= epoch();
    original.apply(this, a);
    // the spare's ffmpeg runs already: its 'started' came before
    if (this.encoder?.running) times['encoder_running'] ??= epoch();
    this.encoder?.once('started', () => (times['encoder_running'] ??= epoch()));
    this.encoder?.once('unit', () => (times['encoder_first_unit'] ??= epoch()));
  };
  return { times, off: () => (hub.startEncoder = original) };
}

/** Waits until the encoder is stopped, as the streamer state and the process table say. */
async function encoderStopped(ctx: Ctx): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    const res = await fetch(`${ctx.base}/api/streamer`, { headers: { token: ctx.token } });
    const state = (
      (await res.json()) as {
        result: { streamer: { h264: { online: boolean }; stream: { clients: number } } };
      }
    ).result.streamer;
    if (!state.h264.online && state.stream.clients === 0 && ctx.app.ctx.video.encoderPid === null)
      return performance.now() - t0;
    if (performance.now() - t0 > 60_000) throw new Error('the encoder did not stop');
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * The hub's spare ffmpeg on (the default) or off: off also kills the one waiting, which the
 * hub then drops (a spare that dies is not kept).
 */
async function setSpare(ctx: Ctx, on: boolean): Promise<void> {
  const hub = ctx.app.ctx.video;
  (hub as unknown as { opts: { spareEncoder?: boolean } }).opts.spareEncoder = on;
  const t0 = performance.now();
  while (!on && hub.sparePid !== null) {
    process.kill(hub.sparePid, 'SIGKILL');
    if (performance.now() - t0 > 10_000) throw new Error('the spare did not go');
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The CPU ticks (user + system) of a process so far; null when it is gone. */
async function cpuTicks(pid: number): Promise<number | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15)
  } catch {
    return null;
  }
}

/**
 * Waits until the hub's spare ffmpeg has finished starting (it links 215 shared libraries,
 * 450-630 ms here) and waits on stdin: its CPU time stood still for SPARE_STILL_MS. Loaded the
 * moment the encoder stopped, a fast page met a spare still starting (its first unit 600 ms
 * after the watch, as with none); a viewer who comes later than that meets a waiting one.
 * The run's first cold load waits for the spare the hub starts before any viewer (PRIME_MS,
 * media/video-hub.ts), as the first viewer after a device's start meets it.
 * Returns the ms waited (SPARE_SETTLE_MAX_MS at most: then the load meets whatever runs).
 */
async function spareStarted(ctx: Ctx): Promise<number> {
  const t0 = performance.now();
  let last: number | null = null;
  while (performance.now() - t0 < SPARE_SETTLE_MAX_MS) {
    const pid = ctx.app.ctx.video.sparePid;
    const ticks = pid === null ? null : await cpuTicks(pid);
    if (ticks !== null && ticks === last) break;
    last = ticks;
    await new Promise((r) => setTimeout(r, SPARE_STILL_MS));
  }
  return performance.now() - t0;
}

/** Time to first frame with the encoder stopped (WebRTC): its start is part of the wait. */
async function ttffCold(
  browser: Browser,
  ctx: Ctx,
  spare: boolean,
  count: number,
): Promise<Record<string, TtffMedian>> {
  await setMode(ctx, 'webrtc');
  const loads: { arm: Arm; load: Ttff }[] = [];
  for (let i = 0; i < count * ARMS.length; i += 1) {
    const arm = armOf(i);
    const waited = await encoderStopped(ctx);
    await setSpare(ctx, spare);
    const settled = spare ? await spareStarted(ctx) : 0;
    const server = encoderTimes(ctx);
    const sparePid = ctx.app.ctx.video.sparePid;
    let tookSpare = false;
    try {
      const page = await openProbed(browser, ctx, arm);
      const ms = await firstFrame(page, 30_000).catch(async (err: unknown) => {
        note(`ttff cold (${arm.name}): no frame; ${JSON.stringify(await readParts(page, null))}`);
        throw err;
      });
      // the encoder that gave the first frame is the spare that waited (not a restarted one)
      tookSpare = sparePid !== null && ctx.app.ctx.video.encoderPid === sparePid;
      await consoleShown(page);
      await new Promise((r) => setTimeout(r, 200));
      const origin = await pageOrigin(page);
      const parts = await readParts(page, ms);
      for (const [k, t] of Object.entries(server.times)) parts[k] = t - origin;
      loads.push({ arm, load: { ms, parts: sortParts(parts) } });
      await saveTrace(page, `ttff-cold-${spare ? 'spare' : 'no-spare'}-${i}`);
      await page.close();
    } finally {
      server.off();
    }
    note(
      `ttff cold (spare ${spare ? 'on' : 'off'}): encoder stopped after ` +
        `${round(waited / 1000)} s${spare ? `, its spare started after ${round(settled)} ms` : ''}` +
        `${spare ? `, the first frame came from ${tookSpare ? 'the spare' : 'another ffmpeg'}` : ''}; ` +
        `${round(loads.at(-1)!.load.ms)} ms${ARMS.length > 1 ? ` (${arm.name})` : ''}`,
    );
  }
  await setSpare(ctx, true);
  return medianArms(loads, 'cold');
}

interface Steady {
  dropped: number;
  droppedBy: Record<string, number>;
  kbps: number;
  bitrateErr: number;
  windowS: number;
  page: Page;
}

/** The seen entry of marker value v, waiting until the page has presented it. */
async function seenOf(page: Page, v: number): Promise<Seen> {
  const deadline = performance.now() + 10_000;
  for (;;) {
    const s = (await rec(page)).seen.find((e) => e.v === v && e.rtp);
    if (s) return s;
    if (performance.now() > deadline) throw new Error(`marker ${v} never presented`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function steady(browser: Browser, ctx: Ctx): Promise<Steady> {
  await setMode(ctx, 'webrtc');
  const fps = 30;
  const bitrate = 5000;
  await setParams(
    ctx,
    `h264_bitrate=${bitrate}&h264_gop=60&desired_fps=${fps}&video_processing=quality_first`,
  );
  ctx.testbed.picture.setNoiseRows(128);
  const page = await openConsole(browser, ctx);
  await firstFrame(page);
  await new Promise((r) => setTimeout(r, 3000));
  await page.evaluate(() => {
    (window as unknown as { __bench: Rec }).__bench.statsOnChange = true;
  });
  const hub = ctx.app.ctx.video;
  // Every unit the encoder emits from now on (the GOP cache replayed by subscribe is not).
  const units: Array<{ capturedAt: number; bytes: number }> = [];
  let live = false;
  const off = hub.subscribe((u) => {
    if (live) units.push({ capturedAt: u.capturedAt, bytes: u.data.length });
  });
  live = true;
  const picture = ctx.testbed.picture;
  // The window: from change A to change B, each drawn into the next source frame.
  const drops0 = hub.getDrops();
  const tA = performance.now();
  const a = picture.markChange(tA) & 0xff;
  const frames0 = hub.totals().frames;
  await new Promise((r) => setTimeout(r, STEADY_MS));
  const tB = performance.now();
  const b = picture.markChange(tB) & 0xff;
  const frames1 = hub.totals().frames;
  const drops1 = hub.getDrops();
  const seenA = await seenOf(page, a);
  const seenB = await seenOf(page, b);
  // the units of the window's frames, whenever the encoder finished them
  await new Promise((r) => setTimeout(r, 1000));
  off();
  const inWindow = units.filter((u) => u.capturedAt >= tA && u.capturedAt < tB);
  const windowMs = tB - tA;
  const expected = Math.round((windowMs / 1000) * fps);
  const captured = frames1 - frames0;
  const encoded = inWindow.length;
  const bytes = inWindow.reduce((s, u) => s + u.bytes, 0);
  const kbps = (bytes * 8) / windowMs;
  const rtpA = seenA.rtp!;
  const rtpB = seenB.rtp!;
  const received = rtpB.received - rtpA.received;
  const decoded = rtpB.decoded - rtpA.decoded;
  const presented = seenB.presented - seenA.presented;
  const encoderDrops = Object.fromEntries(
    Object.entries(drops1).map(([k, v]) => [k, v - drops0[k as keyof typeof drops0]]),
  );
  const droppedBy = {
    source_late: expected - captured,
    encoder: captured - encoded,
    network: encoded - received,
    decoder: received - decoded,
    not_presented: decoded - presented,
  };
  note(
    `steady ${round(windowMs / 1000)} s: source ${captured} of ${expected} frames, encoder ` +
      `${encoded} units (drop counters ${JSON.stringify(encoderDrops)}), page received ` +
      `${received}, decoded ${decoded} (framesDropped ${rtpB.dropped - rtpA.dropped}), ` +
      `presented ${presented}; ${round(kbps)} kbit/s`,
  );
  return {
    dropped: expected - presented,
    droppedBy,
    kbps,
    bitrateErr: (Math.abs(kbps - bitrate) / bitrate) * 100,
    windowS: windowMs / 1000,
    page,
  };
}

/**
 * Server CPU (this process) with 1 and with 4 viewers, same preset and noise. The viewers are
 * werift peers in a child process (bench/video-viewers.ts) that receive without decoding, and
 * Chromium is closed: four decoding pages would saturate both cores and starve the server,
 * which makes its own CPU use fall, not rise.
 */
async function cpuPerViewer(ctx: Ctx): Promise<number> {
  const script = join(REPO_ROOT, '.cache', 'bench', 'video-viewers.mjs');
  await esbuild({
    entryPoints: [join(REPO_ROOT, 'bench', 'video-viewers.ts')],
    outfile: script,
    bundle: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    logLevel: 'error',
  });
  const url = `${ctx.base.replace('http', 'ws')}/janus/ws?auth_token=${ctx.token}`;
  const start = async (n: number): Promise<ChildProcess> => {
    const child = spawn(process.execPath, [script, url, String(n)], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (d: Buffer) =>
        String(d).includes('ready') ? resolve() : undefined,
      );
      child.once('exit', (code) => reject(new Error(`viewers exited ${code}`)));
    });
    return child;
  };
  const cpu = async (): Promise<number> => {
    await new Promise((r) => setTimeout(r, CPU_SETTLE_MS));
    const u0 = process.cpuUsage();
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, CPU_WINDOW_MS));
    const u = process.cpuUsage(u0);
    return ((u.user + u.system) / 1000 / (performance.now() - t0)) * 100;
  };
  // Alternate 1 and 4 viewers three times and take the median of the differences: the
  // server's CPU drifts by several % of a core on this shared machine (GC, teardown timers of
  // closed peers), more than one viewer costs.
  const one = await start(1);
  await new Promise((r) => setTimeout(r, CPU_SETTLE_MS));
  const diffs: number[] = [];
  for (let round_ = 0; round_ < CPU_ROUNDS; round_ += 1) {
    const base = await cpu();
    const three = await start(3);
    const more = await cpu();
    three.kill();
    note(`server cpu: 1 viewer ${round(base)} %, 4 viewers ${round(more)} %`);
    diffs.push((more - base) / 3);
  }
  one.kill();
  return median(diffs);
}

const dataDir = await mkdtemp(join(tmpdir(), 'kvm-bench-video-'));
/**
 * KVM_BENCH_WEB_DIR_B: one folder the server serves both builds from (A's files, and B's
 * assets beside them: their names are hashes of their content, so a name both have is the
 * same file). Each load's page picks its build (ARMS).
 */
async function mergedWebDir(a: string, b: string): Promise<string> {
  const dir = join(dataDir, 'web-ab');
  await cp(a, dir, { recursive: true });
  await cp(join(b, 'assets'), join(dir, 'assets'), { recursive: true, force: false });
  await cp(join(b, 'index.html'), join(dir, PAGE_B.slice(1)));
  return dir;
}

const WEB_DIR_B = process.env['KVM_BENCH_WEB_DIR_B'];
const WEB_DIR = WEB_DIR_B
  ? await mergedWebDir(process.env['KVM_BENCH_WEB_DIR'] ?? join(REPO_ROOT, 'web/dist'), WEB_DIR_B)
  : process.env['KVM_BENCH_WEB_DIR'];
const app = await buildTestApp(dataDir, {
  testbed: { width: 1280, height: 720 },
  ...(WEB_DIR ? { server: { web_dir: WEB_DIR } } : {}),
});
await app.listen({ host: '127.0.0.1', port: 0 });
const addr = app.server.address();
const base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
let browser: Browser | null = null;
/** The testbed's g2g fields and the latency readout's error (g2g.ts ReadoutError), p95. */
function g2gFields(webrtc: G2g, direct: G2g): Record<string, number | null> {
  const p = (errors: number[] | undefined, q: number): number | null =>
    errors?.length ? round(percentile(errors, q), 2) : null;
  const all = [...(webrtc.readout?.errors ?? []), ...(direct.readout?.errors ?? [])];
  return {
    g2g_webrtc_p50_ms: round(webrtc.p50),
    g2g_webrtc_p95_ms: round(webrtc.p95),
    g2g_webrtc_samples: webrtc.samples,
    g2g_webrtc_outliers: webrtc.outliers,
    g2g_webrtc_missed: webrtc.missed,
    g2g_direct_p50_ms: round(direct.p50),
    g2g_direct_p95_ms: round(direct.p95),
    g2g_direct_samples: direct.samples,
    g2g_direct_outliers: direct.outliers,
    g2g_direct_missed: direct.missed,
    latency_readout_error_webrtc_ms: p(webrtc.readout?.errors, 50),
    latency_readout_error_direct_ms: p(direct.readout?.errors, 50),
    latency_readout_error_ms: p(all, 50),
    latency_readout_error_p95_ms: p(all, 95),
    latency_readout_samples: all.length,
  };
}

try {
  const token = await initAndLogin(base, PASSWORD);
  const testbed = app.ctx.drivers.testbed;
  if (!testbed) throw new Error('no testbed');
  const ctx: Ctx = { app, base, testbed, token };
  browser = await Browser.launch();

  await setParams(
    ctx,
    'h264_bitrate=5000&h264_gop=60&desired_fps=60&video_processing=low_latency_first',
  );
  if (ONLY_G2G) {
    const webrtc = await glassToGlass(browser, ctx, 'webrtc');
    const direct = await glassToGlass(browser, ctx, 'direct_h264');
    process.stdout.write(
      `${JSON.stringify({ ...runMarks(), g2g_only: true, ...g2gFields(webrtc, direct) })}\n`,
    );
    throw new TtffOnly(); // skips the rest; the finally below still closes everything
  }
  if (WEB_DIR_B) {
    ARMS = [
      { name: 'a', path: '/' },
      { name: 'b', path: PAGE_B },
    ];
  }
  const cold = await ttffCold(browser, ctx, true, COLD_LOADS);
  const coldNoSpare =
    COLD_NO_SPARE_LOADS > 0 ? await ttffCold(browser, ctx, false, COLD_NO_SPARE_LOADS) : null;
  const webrtcLoads = await ttff(browser, ctx, 'webrtc');
  const directLoads = await ttff(browser, ctx, 'direct_h264');
  const ttffFields: Record<string, unknown> = {};
  for (const { name } of ARMS) {
    const sfx = name === 'a' ? '' : `_${name}`;
    const [webrtc, direct, cold_] = [webrtcLoads[name]!, directLoads[name]!, cold[name]!];
    Object.assign(ttffFields, {
      [`ttff_webrtc${sfx}_ms`]: round(webrtc.ms),
      [`ttff_direct${sfx}_ms`]: round(direct.ms),
      [`ttff_cold${sfx}_ms`]: round(cold_.ms),
      ...(coldNoSpare ? { [`ttff_cold_no_spare${sfx}_ms`]: round(coldNoSpare[name]!.ms) } : {}),
      [`ttff_webrtc${sfx}_console_ms`]: round(webrtc.consoleMs),
      [`ttff_direct${sfx}_console_ms`]: round(direct.consoleMs),
      [`ttff_cold${sfx}_console_ms`]: round(cold_.consoleMs),
      [`ttff_webrtc${sfx}_parts`]: webrtc.parts,
      [`ttff_direct${sfx}_parts`]: direct.parts,
      [`ttff_cold${sfx}_parts`]: cold_.parts,
    });
  }
  if (ONLY_TTFF) {
    process.stdout.write(`${JSON.stringify({ ...runMarks(), ttff_only: true, ...ttffFields })}\n`);
    // the rest of the try block is skipped: the finally below still closes everything
    throw new TtffOnly();
  }
  const g2gWebrtc = await glassToGlass(browser, ctx, 'webrtc');
  const g2gDirect = await glassToGlass(browser, ctx, 'direct_h264');
  const s = await steady(browser, ctx);
  await s.page.close();
  // after the testbed figures: the guest's boot (TCG) takes a core for ~10 s
  const qemu = await QemuVideoTarget.start();
  let g2gQemu: QemuG2g;
  try {
    await qemu.ready();
    g2gQemu = await qemu.measure(browser);
  } finally {
    await qemu.dispose();
  }
  await browser.close();
  browser = null;
  const perViewer = await cpuPerViewer(ctx);
  testbed.picture.setNoiseRows(0);
  // the page's clock as the largest of the g2g runs' offsets
  const clock = [g2gWebrtc.clock, g2gDirect.clock, g2gQemu.clock].sort(
    (x, y) => Math.abs(y.offset) - Math.abs(x.offset),
  )[0]!;
  process.stdout.write(
    `${JSON.stringify({
      ...runMarks(),
      ...ttffFields,
      ...g2gFields(g2gWebrtc, g2gDirect),
      ...qemuFields(g2gQemu),
      clock_offset_ms: round(clock.offset, 2),
      clock_offset_bound_ms: round(clock.bound, 2),
      dropped_frames_60s: s.dropped,
      dropped_by: s.droppedBy,
      steady_window_s: round(s.windowS),
      bitrate_kbps: round(s.kbps),
      bitrate_error_pct: round(s.bitrateErr),
      cpu_pct_per_extra_viewer: round(perViewer),
    })}\n`,
  );
} catch (err) {
  if (!(err instanceof TtffOnly)) throw err;
} finally {
  await browser?.close();
  await app.close();
  await rm(dataDir, { recursive: true, force: true });
}

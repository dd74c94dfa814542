/**
 * The QEMU part of `npm run bench -- video` (bench/video.ts runs it last; `npm run bench --
 * video-qemu` runs it alone): g2g_qemu, a change of the QEMU guest's screen to the frame that
 * shows it presented in the console, WebRTC.
 *
 * The server is the built one in a process of its own on the qemu target (ServerProcess, as
 * the e2e specs run it), with video_mode webrtc and the testbed g2g's preset (5000 kbit/s, gop
 * 60, 60 fps, low latency). Once the guest's USB keyboard is up, the bench types a loop into the
 * guest's shell (tty1) that waits for one key and then clears the whole 1024x768 console with a
 * grey background, or black again on the next key (the Linux console erases with the current
 * background colour) and turns the Scroll Lock LED on, or off again.
 *
 * - g2g_qemu_*: the bench starts POST /api/hid/events/send_key?key=Space (t0, this process's
 *   epoch ms; the serial port is write-only for the host, a file QEMU writes, so the trigger is
 *   a key through the server's own HID path; the request's round trip, a few ms, is in the
 *   notes: the server answers once the key is queued for QMP) to the first frame whose
 *   requestVideoFrameCallback reports most of the screen in the new colour (its `now`, the page's
 *   epoch ms corrected by the measured clock offset, as in video.ts). So it includes the whole
 *   way round: HTTP and the HID driver, QMP input-send-event, the guest's USB keyboard poll, its
 *   shell and console drawing, QEMU's display refresh and VNC, the server's RFB client, encoder
 *   and WebRTC, and the page's decode and presentation. The frame's pixels are read from the
 *   VideoFrame the callback describes (a newer frame is skipped, see video.ts). Each change waits
 *   for the last one to be presented, then 500-1000 ms; all samples count in the percentiles,
 *   `*_outliers` counts those outside 0-5000 ms, `*_missed` the changes never presented (10 s).
 * - g2g_qemu_guest_p50_ms: the guest's own part, from its kernel's timestamp of the key press
 *   to its timestamp of the LED change that the fill's write makes right after the clear (the
 *   input logger's evdev lines on the serial port, both the guest's clock, no process started
 *   in between). An upper bound of its reaction up to the console drawn (the LED is set by a
 *   softirq after the clear, which can run late; one stamped with the next key is left out),
 *   while the framebuffer's flush to the VGA memory comes after it.
 *
 * - qemu_idle_frames_per_s, qemu_idle_encoder_cpu_pct, qemu_idle_server_cpu_pct: then, with
 *   the page still watching and nobody typing (the guest's cursor blinks), for 10 s: the frames
 *   the video source handed on a second (its `frame` stage lines), and the CPU time of the
 *   server's ffmpeg and of the server, in % of one core. The cost of the repeats that follow each
 *   change (server/src/drivers/video/qemu.ts FOLLOW_UPS).
 *
 * - stage times, in the notes for each change (ms after the key was sent): `vnc`, when the
 *   bench's own RFB client on the VM's vnc.sock (QEMU serves it the same screen as the server's
 *   client) saw the new colour; `rfb`, `frame`, `enc`, `piped`, `unit`, the server's times of the
 *   frame that carried it (KVM_VIDEO_TRACE=1, set here, makes the server print them:
 *   server/src/process/stage-trace.ts; matched by the presented frame's RTP timestamp): its RFB
 *   arrival, handed on by the video source, written to the encoder, its last byte in ffmpeg's
 *   pipe, its access unit out; `rx` and `pres`, the page's rVFC receiveTime (the frame's last
 *   packet in) and presentationTime. KVM_BENCH_QEMU_RENICE=<nice> runs the second half of the
 *   changes with the server's threads at that nice value and prints each half's percentiles.
 *   The `vnc` times need KVM_BENCH_QEMU_VNC_PROBE=on (or `ab`: every other change), off by
 *   default (see VNC_PROBE); KVM_BENCH_QEMU_FLIPS=<n> changes n times.
 *
 * QEMU's VNC server slows its refresh while the screen is still (30 ms, +50 ms after every
 * refresh without a change, up to 3 s), so a change after a longer pause waits longer: the notes
 * print each sample with the pause before it; KVM_BENCH_QEMU_PAUSE_MS=<ms> makes every pause
 * that long, to see it.
 */
import { readdir, readFile } from 'node:fs/promises';
import { setPriority } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { Browser } from '../e2e/fixtures/browser';
import { ServerProcess } from '../e2e/fixtures/server';
import { RfbClient } from '../server/src/platform/qemu/rfb';
import {
  clockOffset,
  epochNow,
  median,
  note,
  percentile,
  round,
  runMarks,
  sized,
  initAndLogin,
} from './lib';

const PASSWORD = 'benchpass';
const FLIPS = Number(process.env['KVM_BENCH_QEMU_FLIPS'] ?? sized(20, 3));
/** Latencies outside 0..this are counted as outliers. */
const OUTLIER_MS = 5000;
/** A change not presented within this is missed. */
const MISSED_MS = 10_000;
/** How long the idle console's cost is measured (idleCost). */
const IDLE_MS = sized(10_000, 3_000);
/** The kernel's clock ticks a second (USER_HZ) in /proc/<pid>/stat. */
const CLOCK_TICKS = 100;
// linux/input-event-codes.h
const EV_KEY = 1;
const EV_LED = 17;
const KEY_SPACE = 57;
const LED_SCROLLL = 2;
/** KVM_BENCH_QEMU_PAUSE_MS fixes the pause before each change (see the header). */
const PAUSE_MS = Number(process.env['KVM_BENCH_QEMU_PAUSE_MS'] ?? NaN);
/**
 * KVM_BENCH_QEMU_RENICE=<nice>: the second half of the changes runs with every thread of the
 * server process at this nice value (the first half as it starts), an A/B in one run of what the
 * server's CPU share costs on a busy machine; the notes give each half's percentiles.
 */
const RENICE = process.env['KVM_BENCH_QEMU_RENICE'];
/**
 * KVM_BENCH_QEMU_VNC_PROBE: `off` (the default) leaves the bench's own VNC client (VncProbe)
 * out, `on` keeps it open through every change (the `vnc` stage times), `ab` opens it for the
 * even changes only (at the start of the pause before the change, closed once the change was
 * presented) and the notes give each half's percentiles. Off by default because it costs the
 * figure it diagnoses: QEMU has one VNC worker for both clients, and with the probe open the
 * presented p50 was 70.8 and 67.5 ms against 63.6 and 62.0 closed (two `ab` runs of 40
 * changes, docs/performance.md, the twentieth round). The product has one client.
 */
const VNC_PROBE = process.env['KVM_BENCH_QEMU_VNC_PROBE'] ?? 'off';
if (!['on', 'off', 'ab'].includes(VNC_PROBE)) {
  throw new Error(`KVM_BENCH_QEMU_VNC_PROBE=${VNC_PROBE}: on, off or ab`);
}

/**
 * Typed into the guest's shell: each key read flips the screen between a grey and a black
 * clear; the same write then sets the Scroll Lock LED, or clears it (`ESC [ n q`), which the
 * guest's input logger stamps: its kernel's time of the fill. `read -s -n 1` returns at the key
 * press (no Enter).
 */
const FLIP_LOOP =
  "echo flips armed >/dev/ttyS0; i=0; while read -s -n 1 k; do i=$((1-i)); if [ $i = 1 ]; then printf '\\033[47m\\033[2J\\033[1q'; else printf '\\033[0m\\033[2J\\033[0q'; fi; done\n";

export interface QemuG2g {
  p50: number;
  p95: number;
  samples: number;
  outliers: number;
  missed: number;
  /** median of the guest's own part, NaN when its log had none */
  guestP50: number;
  clock: { offset: number; bound: number };
  /** frames the video source handed on a second while the console stood still (idleCost) */
  idleFramesPerS: number;
  /** the encoder's and the server's CPU meanwhile, % of one core */
  idleEncoderCpu: number;
  idleServerCpu: number;
}

/** A presented frame whose screen state (mostly grey or not) differs from the one before. */
interface Transition {
  /** epoch ms, the page's clock: the update's frame time (rVFC `now`) */
  t: number;
  lit: boolean;
  frac: number;
  /** epoch ms, the page's clock: when the frame's last packet came in (rVFC receiveTime) */
  received?: number;
  /** epoch ms, the server's capture time as Chromium maps it to the page's clock (rVFC captureTime, from abs-capture-time) */
  captured?: number;
  /** epoch ms, the page's clock: when the frame was handed to the compositor (rVFC) */
  presented?: number;
  /** the frame's RTP timestamp (rVFC), which names the server's frame (stage trace) */
  rtp?: number;
}

interface Probe {
  frames: number;
  lit: boolean | null;
  transitions: Transition[];
}

/** Runs in the page before the console: the screen state of every frame the <video> presents. */
function probe(): void {
  const rec: Probe = { frames: 0, lit: null, transitions: [] };
  (window as unknown as { __qemu: Probe }).__qemu = rec;
  const W = 32;
  const H = 24;
  const canvas = document.createElement('canvas');
  canvas.width = W;
  canvas.height = H;
  const ctx = canvas.getContext('2d', { willReadFrequently: true })!;
  // The share of a W x H grid of the frame's points that are lit: read from the luma plane as
  // it is (a copy, no colour conversion) where drawing the frame on a canvas costs the page's
  // main thread 10-20 ms a frame in a Chromium without a GPU (g2g.ts says what that did).
  // The grey background is 0xaa (luma about 160); text on black is sparse.
  const litFraction = async (frame: VideoFrame): Promise<number> => {
    try {
      const vr = frame.visibleRect;
      let lit = 0;
      if (vr && frame.format && /^(I4|NV12)/.test(frame.format)) {
        const rect = { x: vr.x, y: vr.y, width: vr.width, height: vr.height };
        const buf = new Uint8Array(frame.allocationSize({ rect }));
        const [luma] = await frame.copyTo(buf, { rect });
        for (let j = 0; j < H; j += 1) {
          const row = luma!.offset + Math.floor(((j + 0.5) * vr.height) / H) * luma!.stride;
          for (let i = 0; i < W; i += 1) {
            if (buf[row + Math.floor(((i + 0.5) * vr.width) / W)]! > 85) lit += 1;
          }
        }
      } else {
        ctx.drawImage(frame, 0, 0, W, H);
        const d = ctx.getImageData(0, 0, W, H).data;
        for (let i = 0; i < d.length; i += 4) if (d[i]! > 85) lit += 1;
      }
      return lit / (W * H);
    } finally {
      frame.close();
    }
  };
  const watch = (video: HTMLVideoElement): void => {
    const onFrame = (
      now: number,
      meta: {
        mediaTime: number;
        receiveTime?: number;
        captureTime?: number;
        rtpTimestamp?: number;
        presentationTime: number;
      },
    ): void => {
      video.requestVideoFrameCallback(onFrame as unknown as VideoFrameRequestCallback);
      // only the frame this callback describes (see g2g.ts's harness)
      const frame = new VideoFrame(video);
      if (Math.abs(frame.timestamp - meta.mediaTime * 1e6) > 500) {
        frame.close();
        return;
      }
      void litFraction(frame).then(
        (frac) => onState(frac, now, meta),
        () => undefined,
      );
    };
    const onState = (
      frac: number,
      now: number,
      meta: {
        receiveTime?: number;
        captureTime?: number;
        rtpTimestamp?: number;
        presentationTime: number;
      },
    ): void => {
      rec.frames += 1;
      const state = frac > 0.5;
      if (state === rec.lit) return;
      rec.lit = state;
      rec.transitions.push({
        t: performance.timeOrigin + now,
        lit: state,
        frac,
        ...(meta.captureTime ? { captured: performance.timeOrigin + meta.captureTime } : {}),
        ...(meta.receiveTime ? { received: performance.timeOrigin + meta.receiveTime } : {}),
        presented: performance.timeOrigin + meta.presentationTime,
        ...(meta.rtpTimestamp !== undefined ? { rtp: meta.rtpTimestamp } : {}),
      });
    };
    video.requestVideoFrameCallback(onFrame as unknown as VideoFrameRequestCallback);
  };
  const watched = new WeakSet<Element>();
  new MutationObserver(() => {
    for (const v of document.querySelectorAll('video')) {
      if (!watched.has(v)) {
        watched.add(v);
        watch(v);
      }
    }
  }).observe(document, { childList: true, subtree: true });
}

/**
 * The bench's own VNC client on the VM's vnc.sock, beside the server's (QEMU serves both the
 * same screen): when QEMU's VNC server delivered each change, this process's epoch ms. One
 * incremental request always outstanding, as the server's RFB client keeps one.
 */
class VncProbe {
  private lit: boolean | null = null;

  private constructor(
    private readonly rfb: RfbClient,
    /** Where the changes go (shared by the probes of one run). */
    readonly transitions: Transition[],
  ) {
    rfb.on('update', (arrivedAt) => {
      rfb.requestUpdate(true);
      const frac = litFraction(rfb.framebuffer, rfb.width, rfb.height);
      const state = frac > 0.5;
      if (state === this.lit) return;
      this.lit = state;
      this.transitions.push({ t: performance.timeOrigin + arrivedAt, lit: state, frac });
    });
    rfb.requestUpdate(false);
  }

  static async open(path: string, transitions: Transition[]): Promise<VncProbe> {
    return new VncProbe(await RfbClient.connect(path), transitions);
  }

  close(): void {
    this.rfb.close();
  }
}

/** A server frame's stage times (epoch ms), by the RTP timestamp made from its capture time. */
interface ServerStages {
  captured: number;
  received?: number;
  frame?: number;
  'encoder-in'?: number;
  piped?: number;
  unit?: number;
}

/** The stage trace lines of the server's output (stage-trace.ts), by RTP timestamp. */
function serverStages(log: string): Map<number, ServerStages> {
  const out = new Map<number, ServerStages>();
  for (const m of log.matchAll(/^video-stage (\S+) (\S+) (\S+) (\S+)$/gm)) {
    const rtp = Math.round(Number(m[2]) * 90) >>> 0;
    const entry = out.get(rtp) ?? { captured: Number(m[3]) };
    const stage = m[1] as 'received' | 'frame' | 'encoder-in' | 'piped' | 'unit';
    entry[stage] ??= Number(m[4]);
    out.set(rtp, entry);
  }
  return out;
}

/** The share of a 32x24 grid of a `bgr0` screen's pixels whose red is over 85 (as probe()). */
function litFraction(fb: Buffer, width: number, height: number): number {
  const W = 32;
  const H = 24;
  let lit = 0;
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x++) {
      const px = Math.floor(((y + 0.5) * height) / H) * width + Math.floor(((x + 0.5) * width) / W);
      if ((fb[px * 4 + 2] ?? 0) > 85) lit += 1;
    }
  }
  return lit / (W * H);
}

function probeOf(page: Page): Promise<Probe> {
  return page.evaluate(() => (window as unknown as { __qemu: Probe }).__qemu);
}

/** The QEMU target's server process, initialised and logged in, its guest's shell up. */
export class QemuVideoTarget {
  private constructor(
    private readonly server: ServerProcess,
    private readonly token: string,
  ) {}

  /** Starts the server (QEMU boots meanwhile); `ready()` waits for the guest. */
  static async start(): Promise<QemuVideoTarget> {
    // the server's stage times of each frame (server/src/media/stage-trace.ts)
    process.env['KVM_VIDEO_TRACE'] = '1';
    const server = await ServerProcess.start({ target: 'qemu' });
    try {
      const token = await initAndLogin(server.url, PASSWORD);
      const target = new QemuVideoTarget(server, token);
      await target.post('/api/system/set_config', JSON.stringify({ video_mode: 'webrtc' }));
      await target.post(
        '/api/streamer/set_params?h264_bitrate=5000&h264_gop=60&desired_fps=60&video_processing=low_latency_first',
      );
      return target;
    } catch (err) {
      await server.dispose();
      throw err;
    }
  }

  private async post(path: string, body = '{}', type = 'application/json'): Promise<void> {
    const res = await fetch(`${this.server.url}${path}`, {
      method: 'POST',
      headers: { token: this.token, 'content-type': type },
      body,
    });
    if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  }

  /** The guest's serial log ('' before QEMU made it), CR dropped. */
  private async serial(): Promise<string> {
    const log = await readFile(join(this.server.dataDir, 'run', 'serial.log'), 'utf8').catch(
      () => '',
    );
    return log.replace(/\r/g, '');
  }

  /** Waits until the serial log after `from` (characters) matches `re`. */
  private async serialMatch(from: number, re: RegExp, timeoutMs: number): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const log = await this.serial();
      if (re.test(log.slice(from))) return;
      if (performance.now() > deadline) {
        throw new Error(`guest: no ${re} on the serial port:\n${log.slice(-1500)}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Waits for the guest's shell and types the flip loop into it. */
  async ready(): Promise<void> {
    const t0 = performance.now();
    // the shell is up once its USB keyboard is (the e2e QEMU specs wait the same way)
    await this.serialMatch(0, /add QEMU QEMU USB Keyboard/, 90_000);
    await new Promise((r) => setTimeout(r, 1000));
    const mark = (await this.serial()).length;
    await this.post('/api/hid/print?limit=0&keymap=en-us', FLIP_LOOP, 'text/plain; charset=utf-8');
    await this.serialMatch(mark, /flips armed/, 30_000);
    note(`g2g qemu: guest shell ready ${round((performance.now() - t0) / 1000)} s after start`);
  }

  async measure(browser: Browser): Promise<QemuG2g> {
    const page = await browser.context.newPage();
    try {
      return await this.measureOn(page);
    } finally {
      await page.close();
    }
  }

  private async measureOn(page: Page): Promise<QemuG2g> {
    await page.addInitScript(probe);
    await page.addInitScript(
      (token: string) => localStorage.setItem('auth_token', token),
      this.token,
    );
    await page.goto(`${this.server.url}/`);
    // the black screen with the prompt and the loop's command line
    await page.waitForFunction(
      () => (window as unknown as { __qemu: Probe }).__qemu.lit === false,
      null,
      { timeout: 30_000 },
    );
    await new Promise((r) => setTimeout(r, 1500));
    const clock = await clockOffset(() =>
      page.evaluate(() => performance.timeOrigin + performance.now()),
    );
    const vncPath = join(this.server.dataDir, 'run', 'vnc.sock');
    const vncSeen: Transition[] = [];
    let vnc: VncProbe | null = null;
    const mark = (await this.serial()).length;
    const flips: Array<{
      t0: number;
      request: number;
      pause: number;
      lit: boolean;
      probe: boolean;
    }> = [];
    let lit = false;
    for (let k = 0; k < FLIPS; k += 1) {
      if (RENICE !== undefined && k === Math.floor(FLIPS / 2)) await this.renice(Number(RENICE));
      const probe = VNC_PROBE === 'on' || (VNC_PROBE === 'ab' && k % 2 === 0);
      if (probe && !vnc) vnc = await VncProbe.open(vncPath, vncSeen);
      if (!probe && vnc) {
        vnc.close();
        vnc = null;
      }
      const pause = Number.isFinite(PAUSE_MS) ? PAUSE_MS : 500 + Math.random() * 500;
      await new Promise((r) => setTimeout(r, pause));
      lit = !lit;
      const before = (await probeOf(page)).transitions.length;
      const t0 = epochNow();
      await this.post('/api/hid/events/send_key?key=Space');
      flips.push({ t0, request: epochNow() - t0, pause, lit, probe });
      const deadline = performance.now() + MISSED_MS;
      while (performance.now() < deadline) {
        const p = await probeOf(page);
        if (p.transitions.slice(before).some((x) => x.lit === lit)) break;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    await new Promise((r) => setTimeout(r, 500));
    vnc?.close();
    const after = await clockOffset(() =>
      page.evaluate(() => performance.timeOrigin + performance.now()),
    );
    const p = await probeOf(page);
    const lat: number[] = [];
    let outliers = 0;
    let missed = 0;
    const stages = serverStages(this.server.log);
    const lines: string[] = [];
    const vncLat: number[] = [];
    const halves: number[][] = [[], []];
    /** presented latency with the bench's VNC client open / closed (KVM_BENCH_QEMU_VNC_PROBE) */
    const byProbe: { on: number[]; off: number[] } = { on: [], off: [] };
    const rxLat: number[] = [];
    for (const [k, f] of flips.entries()) {
      const next = flips[k + 1]?.t0 ?? Infinity;
      // a change made with the probe closed has no VNC time (the next probe's first update
      // would come later, with the screen as it is then)
      const atVnc = !f.probe
        ? undefined
        : vncSeen.find((x) => x.lit === f.lit && x.t >= f.t0 && x.t < next);
      const vncMs = atVnc ? atVnc.t - f.t0 : NaN;
      if (atVnc) vncLat.push(vncMs);
      const shown = p.transitions.find(
        (x) =>
          x.lit === f.lit && x.t - clock.offset >= f.t0 - clock.bound && x.t - clock.offset < next,
      );
      if (!shown) {
        missed += 1;
        lines.push(`missed after ${round(f.pause)}`);
        continue;
      }
      const l = shown.t - clock.offset - f.t0;
      if (l < 0 || l > OUTLIER_MS) outliers += 1;
      lat.push(Math.max(0, l));
      halves[k < Math.floor(FLIPS / 2) ? 0 : 1]!.push(l);
      byProbe[f.probe ? 'on' : 'off'].push(l);
      const rx = shown.received !== undefined ? shown.received - clock.offset - f.t0 : NaN;
      const st = shown.rtp !== undefined ? stages.get(shown.rtp) : undefined;
      const at = (epoch: number | undefined): number => (epoch ?? NaN) - f.t0;
      const pres = shown.presented !== undefined ? shown.presented - clock.offset - f.t0 : NaN;
      if (Number.isFinite(rx)) rxLat.push(rx);
      lines.push(
        `${round(l)} (vnc ${round(vncMs)}, rfb ${round(at(st?.captured))}, ` +
          `recv ${round(at(st?.received))}, ` +
          `frame ${round(at(st?.frame))}, enc ${round(at(st?.['encoder-in']))}, ` +
          `piped ${round(at(st?.piped))}, ` +
          `unit ${round(at(st?.unit))}, rx ${round(rx)}, pres ${round(pres)}, pause ${round(f.pause)}` +
          `${VNC_PROBE === 'ab' ? `, probe ${f.probe ? 'on' : 'off'}` : ''})`,
      );
    }
    // the guest's part, both its kernel's evdev times (the input logger's lines) on the keyboard
    // that got the key: the key press, and the Scroll Lock LED that the fill's write sets right
    // after the clear (the PS/2 keyboard's own LED lines are left out: its logger repeats them
    // with a stale time)
    const log = (await this.serial()).slice(mark);
    const events = (type: number, code: number, value: number) =>
      [
        ...log.matchAll(new RegExp(`^input (\\S+) (\\d+\\.\\d+) ${type} ${code} ${value}$`, 'gm')),
      ].map((m) => ({ dev: m[1]!, t: Number(m[2]) * 1000 }));
    const presses = events(EV_KEY, KEY_SPACE, 1);
    const ledOn = events(EV_LED, LED_SCROLLL, 1);
    const ledOff = events(EV_LED, LED_SCROLLL, 0);
    const guest = presses
      .map((press, k) => {
        // An LED line stamped with the next key's time came in that key's packet: the LED's
        // softirq ran only then (seen up to ~1 s late, while the fill was on screen in 50 ms),
        // so it dates nothing of the fill and is left out (the notes count the matched ones).
        const next = presses[k + 1]?.t ?? Infinity;
        const led = (k % 2 === 0 ? ledOn : ledOff).find(
          (l) => l.dev === press.dev && l.t >= press.t && l.t < next,
        );
        return (led?.t ?? NaN) - press.t;
      })
      .filter((g) => Number.isFinite(g));
    note(
      `g2g qemu: ${lat.length} of ${flips.length} changes presented: ${lines.join(', ')} ms; ` +
        `send_key request ${round(median(flips.map((f) => f.request)), 2)} ms median; ` +
        (vncLat.length > 0
          ? `key sent -> change in the bench's own VNC client p50 ${round(percentile(vncLat, 50))} ` +
            `p95 ${round(percentile(vncLat, 95))} ms (${vncLat.length} seen); `
          : '') +
        `key sent -> frame received by the page p50 ${round(percentile(rxLat, 50))} ` +
        `p95 ${round(percentile(rxLat, 95))} ms; ` +
        (VNC_PROBE === 'ab'
          ? `with the bench's VNC client open p50 ${round(percentile(byProbe.on, 50))} ` +
            `p95 ${round(percentile(byProbe.on, 95))} ms (${byProbe.on.length}), closed p50 ` +
            `${round(percentile(byProbe.off, 50))} p95 ${round(percentile(byProbe.off, 95))} ms ` +
            `(${byProbe.off.length}); `
          : '') +
        (RENICE !== undefined
          ? `first half p50 ${round(percentile(halves[0]!, 50))} p95 ${round(percentile(halves[0]!, 95))} ms, ` +
            `second (server at nice ${RENICE}) p50 ${round(percentile(halves[1]!, 50))} ` +
            `p95 ${round(percentile(halves[1]!, 95))} ms; `
          : '') +
        `guest key press -> LED set after the fill ${guest.map((g) => round(g)).join(', ')} ms ` +
        `(${guest.length} of ${presses.length} key presses); page ${p.frames} frames; ` +
        `page clock ${round(clock.offset, 2)} ms ahead (±${round(clock.bound, 2)}), ` +
        `${round(after.offset - clock.offset, 2)} ms drift`,
    );
    const idle = await this.idleCost();
    note(
      `g2g qemu: idle console for ${IDLE_MS / 1000} s: ${idle.frames} frames from the video ` +
        `source, encoder ${round(idle.encoderCpu, 1)} % and server ${round(idle.serverCpu, 1)} % ` +
        `of a core`,
    );
    return {
      p50: percentile(lat, 50),
      p95: percentile(lat, 95),
      samples: lat.length,
      outliers,
      missed,
      guestP50: guest.length ? median(guest) : NaN,
      clock,
      idleFramesPerS: idle.frames / (IDLE_MS / 1000),
      idleEncoderCpu: idle.encoderCpu,
      idleServerCpu: idle.serverCpu,
    };
  }

  /**
   * What a watched console costs while nobody types (the cursor blinks): frames the video
   * source handed on (its `frame` stage lines) and the CPU of the encoder and the server, over
   * IDLE_MS, in % of one core.
   */
  private async idleCost(): Promise<{ frames: number; encoderCpu: number; serverCpu: number }> {
    const pid = this.server.pid;
    if (pid === undefined) return { frames: NaN, encoderCpu: NaN, serverCpu: NaN };
    const encoders = await childrenNamed(pid, 'ffmpeg');
    const cpu0 = await cpuMs([pid]);
    const enc0 = await cpuMs(encoders);
    const t0 = epochNow();
    await new Promise((r) => setTimeout(r, IDLE_MS));
    const t1 = epochNow();
    const cpu1 = await cpuMs([pid]);
    const enc1 = await cpuMs(encoders);
    let frames = 0;
    for (const m of this.server.log.matchAll(/^video-stage frame \S+ \S+ (\S+)$/gm)) {
      const at = Number(m[1]);
      if (at >= t0 && at < t1) frames += 1;
    }
    const pct = (ms: number): number => (ms / (t1 - t0)) * 100;
    return { frames, encoderCpu: pct(enc1 - enc0), serverCpu: pct(cpu1 - cpu0) };
  }

  /** Sets every thread of the server process to `nice` (KVM_BENCH_QEMU_RENICE). */
  private async renice(nice: number): Promise<void> {
    const pid = this.server.pid;
    if (pid === undefined) return;
    const tids = await readdir(`/proc/${pid}/task`);
    for (const tid of tids) setPriority(Number(tid), nice);
    note(`g2g qemu: server's ${tids.length} threads at nice ${nice} from change ${FLIPS / 2 + 1}`);
  }

  async dispose(): Promise<void> {
    await this.server.dispose();
  }
}

/** The pids of `pid`'s child processes whose command is `name`. */
async function childrenNamed(pid: number, name: string): Promise<number[]> {
  const out: number[] = [];
  for (const tid of await readdir(`/proc/${pid}/task`)) {
    const children = await readFile(`/proc/${pid}/task/${tid}/children`, 'utf8').catch(() => '');
    for (const child of children.split(' ').filter(Boolean).map(Number)) {
      const comm = await readFile(`/proc/${child}/comm`, 'utf8').catch(() => '');
      if (comm.trim() === name) out.push(child);
    }
  }
  return out;
}

/** CPU time (user + system, ms) the processes have used so far; 0 for one that is gone. */
async function cpuMs(pids: number[]): Promise<number> {
  let ticks = 0;
  for (const pid of pids) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    // the fields after the command's closing parenthesis: utime and stime are the 12th and 13th
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ticks += Number(fields[11] ?? 0) + Number(fields[12] ?? 0);
  }
  return ticks * (1000 / CLOCK_TICKS);
}

/** The JSON fields of a measurement. */
export function qemuFields(g: QemuG2g): Record<string, number> {
  return {
    g2g_qemu_p50_ms: round(g.p50),
    g2g_qemu_p95_ms: round(g.p95),
    g2g_qemu_samples: g.samples,
    g2g_qemu_outliers: g.outliers,
    g2g_qemu_missed: g.missed,
    ...(Number.isFinite(g.guestP50) ? { g2g_qemu_guest_p50_ms: round(g.guestP50) } : {}),
    qemu_idle_frames_per_s: round(g.idleFramesPerS, 1),
    qemu_idle_encoder_cpu_pct: round(g.idleEncoderCpu, 1),
    qemu_idle_server_cpu_pct: round(g.idleServerCpu, 1),
  };
}

// `npm run bench -- video-qemu`: this part alone.
if (process.argv[1]?.endsWith('video-qemu.mjs')) {
  const target = await QemuVideoTarget.start();
  let browser: Browser | null = null;
  try {
    await target.ready();
    browser = await Browser.launch();
    const g = await target.measure(browser);
    process.stdout.write(`${JSON.stringify({ ...runMarks(), ...qemuFields(g) })}\n`);
  } finally {
    await browser?.close();
    await target.dispose();
  }
}

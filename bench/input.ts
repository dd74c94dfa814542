/**
 * `npm run bench -- input`: one JSON object of the input figures of issue 4.
 *
 * - datachannel_p50/p99_ms, ws_p50/p99_ms: a key event in Chromium (CDP Input.dispatchKeyEvent
 *   through Playwright, so it runs the real event path and the console's own capture) to the
 *   HID driver's call in the server, 10,000 events each (KeyA down/up alternating). The page
 *   stamps each keydown/keyup with performance.timeOrigin + event.timeStamp in a capture-phase
 *   listener; the server stamps the driver call with performance.timeOrigin + now. Both are
 *   epoch ms of this machine. WebRTC mode puts input on the data channel, direct H.264 mode on
 *   /api/ws; the bench checks which one carried it.
 * - paste_chars_per_s: POST /api/hid/print of 600 characters of mixed English text (slow off)
 *   on the QEMU target, request to answer, with the guest's own key log checked for every
 *   press.
 * - release_after_drop_ms: three keys held through the data channel, then the tab is closed
 *   (its sockets and peer connection go with it); time until the driver saw all released.
 *   Median of 5.
 * The events are paced, one every 5 ms (KVM_BENCH_INPUT_GAP_MS), ten times a fast typist:
 * back to back they come faster than the data channel's SCTP takes them in, and the p99
 * measures the backlog the bench made instead of the latency of one key press.
 * The server runs in a process of its own (ServerChild): in the bench's process it shared an
 * event loop with Playwright, whose CDP pipe writes took ~0.5 ms per key event and stalled the
 * server's reads, so the old p99s measured the bench's own driver as much as the server.
 * - datachannel_samples, ws_samples: how many events each percentile is taken over (all of
 *   them; none is dropped). *_long_tasks: main-thread tasks over 50 ms the page reported
 *   (PerformanceObserver 'longtask') while those events were typed, a busy page's signature.
 *
 * `--only latency` measures the two latencies alone (no QEMU paste, no release-after-drop).
 * KVM_BENCH_WEB_DIR serves a console built elsewhere (e.g. to compare two builds).
 * KVM_BENCH_SERVER_PROF=<dir> writes a CPU profile of the server process there, and
 * KVM_BENCH_PAGE_PROF=<prefix> one of the page while it types (CDP Profiler, 250 us samples) to
 * <prefix>-<mode>.cpuprofile.
 * A note gives the machine's UDP receive-buffer drops (/proc/net/snmp Udp RcvbufErrors, all
 * sockets of this network namespace) while each mode typed: data channel packets a stalled
 * server could not take in time, whose SCTP recovery makes a tail of its own.
 * KVM_BENCH_INPUT_SCREEN=off takes the testbed's signal away once each mode's console shows
 * its first frame, so it types with no video flowing at all (no raw frames, no encoding, no RTP,
 * no decoding in the page): what the video costs the input path on this machine. Its figures
 * come as datachannel_no_picture_p50_ms and so on, never under the names of the real ones.
 * Either way a note gives the frames the console presented while each mode typed (its
 * data-frames): 0 with the signal off, about 30 a second with it.
 * KVM_BENCH_INPUT_DUMP=<prefix> writes each event's times (epoch ms: the page's event, its send,
 * the driver's call) to <prefix>-<mode>.json, to see whether a tail is one stall or many.
 */
// The server child runs with the young-generation setting the product's main.ts applies first.
import '../server/src/young-generation';
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildTestApp } from '../server/src/test-helpers';
import type { TestbedReport } from '../server/src/drivers/hid/testbed';
import { Browser } from '../e2e/fixtures/browser';
import { median, note, round, runMarks, sized, initAndLogin } from './lib';

const PASSWORD = 'benchpass';
const EVENTS = Number(process.env.KVM_BENCH_INPUT_EVENTS ?? sized(10_000, 200));
/** ms between two key events: 200 a second, ten times a fast typist (see the header). */
const GAP_MS = Number(process.env.KVM_BENCH_INPUT_GAP_MS ?? 5);
const onlyAt = process.argv.indexOf('--only');
const LATENCY_ONLY = onlyAt >= 0 && process.argv[onlyAt + 1] === 'latency';
const WEB_DIR = process.env.KVM_BENCH_WEB_DIR;
/** KVM_BENCH_PAGE_PROF=<prefix> (header). */
const PAGE_PROF = process.env['KVM_BENCH_PAGE_PROF'];
/** KVM_BENCH_INPUT_SCREEN=off: no picture while each mode types (header). */
const SCREEN_OFF = process.env['KVM_BENCH_INPUT_SCREEN'] === 'off';
const SCREEN_TAG = SCREEN_OFF ? '_no_picture' : '';
const DUMP = process.env.KVM_BENCH_INPUT_DUMP;
/** This process is the bench's server (see ServerChild). */
const SERVER_CHILD = process.argv.includes('--server-child');

interface Ctx {
  base: string;
  token: string;
  server: ServerChild;
}

async function serve(
  target: 'testbed' | 'qemu',
): Promise<{ app: FastifyInstance; base: string; token: string; dir: string }> {
  const dir = await mkdtemp(join(tmpdir(), `kvm-bench-input-${target}-`));
  const app = await buildTestApp(dir, {
    target,
    testbed: { width: 640, height: 480 },
    ...(WEB_DIR ? { server: { web_dir: WEB_DIR } } : {}),
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  const base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  const token = await initAndLogin(base, PASSWORD);
  return { app, base, token, dir };
}

async function post(ctx: { base: string; token: string }, path: string, body?: string) {
  const res = await fetch(`${ctx.base}${path}`, {
    method: 'POST',
    headers: {
      token: ctx.token,
      'content-type': body === undefined ? 'application/json' : 'text/plain; charset=utf-8',
    },
    body: body ?? '{}',
  });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json() as Promise<{ result: unknown }>;
}

/** Records the epoch time of every keydown/keyup the page sees, before the console does. */
function stampKeys(): void {
  const stamps: number[] = [];
  (window as unknown as { __keys: number[] }).__keys = stamps;
  const stamp = (e: KeyboardEvent): void => {
    if (e.code === 'KeyA') stamps.push(performance.timeOrigin + e.timeStamp);
  };
  window.addEventListener('keydown', stamp, true);
  window.addEventListener('keyup', stamp, true);
  // main-thread tasks over 50 ms (Chromium): what delays input on a busy page
  const longTasks = { count: 0, totalMs: 0, maxMs: 0 };
  (window as unknown as { __longTasks: typeof longTasks }).__longTasks = longTasks;
  try {
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        longTasks.count += 1;
        longTasks.totalMs += entry.duration;
        longTasks.maxMs = Math.max(longTasks.maxMs, entry.duration);
      }
    }).observe({ type: 'longtask' });
  } catch {
    // no longtask entries in this browser: the count stays 0
  }
  // when the console hands each frame to the data channel or the socket (for the breakdown)
  const sends: number[] = [];
  (window as unknown as { __sends: number[] }).__sends = sends;
  for (const proto of [RTCDataChannel.prototype, WebSocket.prototype]) {
    const original = proto.send as (this: unknown, data: unknown) => void;
    proto.send = function (this: unknown, data: unknown) {
      const bytes =
        data instanceof ArrayBuffer
          ? new Uint8Array(data)
          : ArrayBuffer.isView(data)
            ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
            : null;
      // key frames of KeyA: [0x01][flags]"KeyA"
      if (bytes && bytes[0] === 1 && bytes.length === 6 && bytes[2] === 0x4b && bytes[5] === 0x41) {
        sends.push(performance.timeOrigin + performance.now());
      }
      original.call(this, data);
    } as typeof proto.send;
  }
}

async function openConsole(browser: Browser, ctx: Ctx, mode: 'webrtc' | 'direct_h264') {
  await post(ctx, '/api/system/set_config', undefined);
  const res = await fetch(`${ctx.base}/api/system/set_config`, {
    method: 'POST',
    headers: { token: ctx.token, 'content-type': 'application/json' },
    body: JSON.stringify({ video_mode: mode }),
  });
  if (!res.ok) throw new Error(`set_config ${res.status}`);
  const page = await browser.context.newPage();
  await page.addInitScript(stampKeys);
  await page.addInitScript((token: string) => localStorage.setItem('auth_token', token), ctx.token);
  await page.goto(`${ctx.base}/`);
  const selector = mode === 'webrtc' ? '[data-testid=video-webrtc]' : '[data-testid=video-direct]';
  const video = page.locator(selector);
  await video.waitFor({ state: 'visible', timeout: 20_000 });
  await page.waitForFunction(
    (sel) => Number(document.querySelector(sel)?.getAttribute('data-frames') ?? 0) > 0,
    selector,
    { timeout: 20_000 },
  );
  // Capture starts with a click on the picture (focus), as a user does.
  await video.click();
  return { page, video };
}

/** What the server process answers; `id` pairs an answer with its request. */
type ServerRequest =
  | { cmd: 'watch' }
  | { cmd: 'collect'; n: number }
  | { cmd: 'held'; n: number }
  | { cmd: 'arm' }
  | { cmd: 'signal'; on: boolean }
  | { cmd: 'released' }
  | { cmd: 'close' };

interface Collected {
  /** epoch ms of every KeyA press/release the HID driver made */
  driverTimes: number[];
  /** HID frames by client kind: 'rtc' (data channel) or 'ws' */
  counts: Record<string, number>;
  loop: { p50: number; p99: number; max: number };
}

/**
 * The server under test runs in a process of its own. In this one it shared its event loop
 * with Playwright, whose CDP writes to Chromium (a pipe) and stack captures cost ~0.5 ms per
 * key event on a loaded machine and held up the server's own reads: the p99 measured the
 * bench's driver as much as the server. The child stamps the HID driver's calls with its own
 * epoch clock (performance.timeOrigin + now), as the page does.
 */
class ServerChild {
  private nextId = 1;
  private readonly waiting = new Map<number, (answer: { error?: string }) => void>();

  private constructor(private readonly child: ChildProcess) {
    child.on('message', (m: { id: number; error?: string }) => {
      this.waiting.get(m.id)?.(m);
      this.waiting.delete(m.id);
    });
  }

  static async start(): Promise<{ server: ServerChild; base: string; token: string }> {
    // KVM_BENCH_SERVER_PROF=<dir>: a CPU profile of the server process goes there.
    const prof = process.env.KVM_BENCH_SERVER_PROF;
    const child = fork(process.argv[1]!, ['--server-child'], {
      stdio: ['ignore', 2, 2, 'ipc'],
      execArgv: prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`, '--cpu-prof-interval=250'] : [],
    });
    const ready = await new Promise<{ base: string; token: string }>((resolve, reject) => {
      child.once('message', (m: { base: string; token: string }) => resolve(m));
      child.once('exit', (code) => reject(new Error(`server process exited (${code})`)));
    });
    return { server: new ServerChild(child), ...ready };
  }

  call<T>(request: ServerRequest): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, (answer) =>
        answer.error ? reject(new Error(answer.error)) : resolve(answer as T),
      );
      this.child.send({ id, ...request });
    });
  }

  async close(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((r) => this.child.once('exit', r));
    await this.call({ cmd: 'close' }).catch(() => undefined);
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
    if (this.child.exitCode === null) this.child.kill('SIGKILL');
  }
}

/** The server process: the testbed server, its HID driver's calls and event loop watched. */
async function runServerChild(): Promise<void> {
  const s = await serve('testbed');
  const hid = s.app.ctx.drivers.testbedHid;
  if (!hid) throw new Error('no testbed hid');
  let driverTimes: number[] = [];
  let counts: Record<string, number> = {};
  let loop = monitorEventLoopDelay({ resolution: 1 });
  hid.on('report', (r: TestbedReport, at: number) => {
    if (r.kind === 'key' && r.key === 'KeyA') driverTimes.push(performance.timeOrigin + at);
  });
  const service = s.app.ctx.hid;
  const handleFrame = service.handleFrame.bind(service);
  service.handleFrame = (client, frame) => {
    const kind = client.split(':')[0]!;
    counts[kind] = (counts[kind] ?? 0) + 1;
    handleFrame(client, frame);
  };
  let released: Promise<number> | null = null;
  const until = async (done: () => boolean, ms: number): Promise<boolean> => {
    const deadline = Date.now() + ms;
    while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    return done();
  };
  const answer = async (request: ServerRequest): Promise<object> => {
    switch (request.cmd) {
      case 'watch':
        driverTimes = [];
        counts = {};
        loop = monitorEventLoopDelay({ resolution: 1 });
        loop.enable();
        return {};
      case 'collect': {
        await until(() => driverTimes.length >= request.n, 10_000);
        loop.disable();
        const ms = (ns: number): number => round(ns / 1e6, 2);
        return {
          driverTimes,
          counts,
          loop: { p50: ms(loop.percentile(50)), p99: ms(loop.percentile(99)), max: ms(loop.max) },
        } satisfies Collected;
      }
      case 'signal':
        s.app.ctx.drivers.testbed?.setSignal(request.on);
        return {};
      case 'held':
        await until(() => hid.held.length >= request.n, 5000);
        return { held: hid.held };
      case 'arm':
        released = new Promise<number>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error('never released')), 5000);
          const onReport = (_r: TestbedReport, at: number): void => {
            if (hid.held.length > 0) return;
            hid.off('report', onReport);
            clearTimeout(timer);
            resolve(performance.timeOrigin + at);
          };
          hid.on('report', onReport);
        });
        released.catch(() => undefined);
        return {};
      case 'released':
        if (!released) throw new Error('not armed');
        return { at: await released };
      case 'close':
        await s.app.close();
        await rm(s.dir, { recursive: true, force: true });
        setImmediate(() => process.exit(0));
        return {};
    }
  };
  process.on('message', (m: ServerRequest & { id: number }) => {
    answer(m).then(
      (result) => process.send!({ id: m.id, ...result }),
      (err: unknown) => process.send!({ id: m.id, error: String(err) }),
    );
  });
  // The parent went away without closing: do not outlive it.
  process.on('disconnect', () => {
    void s.app
      .close()
      .finally(() => rm(s.dir, { recursive: true, force: true }).finally(() => process.exit(1)));
  });
  process.send!({ base: s.base, token: s.token });
}

/** Udp RcvbufErrors of this network namespace (null where /proc has no such line). */
async function udpReceiveBufferErrors(): Promise<number | null> {
  const snmp = await readFile('/proc/net/snmp', 'utf8').catch(() => '');
  const [names, values] = snmp.split('\n').filter((l) => l.startsWith('Udp: '));
  const at = names?.split(' ').indexOf('RcvbufErrors') ?? -1;
  const value = at > 0 ? Number(values?.split(' ')[at]) : NaN;
  return Number.isFinite(value) ? value : null;
}

function percentile(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

async function latency(
  browser: Browser,
  ctx: Ctx,
  mode: 'webrtc' | 'direct_h264',
): Promise<{ p50: number; p99: number; samples: number; longTasks: number }> {
  const { page, video } = await openConsole(browser, ctx, mode);
  if (mode === 'webrtc') {
    // The data channel opens a moment after the first frame.
    await new Promise((r) => setTimeout(r, 1500));
  }
  if (SCREEN_OFF) {
    await ctx.server.call({ cmd: 'signal', on: false });
    await new Promise((r) => setTimeout(r, 1000));
  }
  await ctx.server.call({ cmd: 'watch' });
  type LongTasks = { count: number; totalMs: number; maxMs: number };
  const readLongTasks = (): Promise<LongTasks> =>
    page.evaluate(() => ({ ...(window as unknown as { __longTasks: LongTasks }).__longTasks }));
  const tasksBefore = await readLongTasks();
  // frames the console presented (its data-frames): how much picture there was while typing
  const readFrames = async (): Promise<number> =>
    Number((await video.getAttribute('data-frames')) ?? NaN);
  const framesBefore = await readFrames();
  const dropsBefore = await udpReceiveBufferErrors();
  const cdp = PAGE_PROF ? await page.context().newCDPSession(page) : null;
  if (cdp) {
    await cdp.send('Profiler.enable');
    await cdp.send('Profiler.setSamplingInterval', { interval: 250 });
    await cdp.send('Profiler.start');
  }
  // Paced, drift-free: one event every GAP_MS (see the header).
  const typingStart = performance.now();
  for (let i = 0; i < EVENTS; i += 1) {
    const wait = typingStart + i * GAP_MS - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    if (i % 2 === 0) await page.keyboard.down('KeyA');
    else await page.keyboard.up('KeyA');
  }
  const typingMs = performance.now() - typingStart;
  if (cdp) {
    const { profile } = await cdp.send('Profiler.stop');
    await writeFile(`${PAGE_PROF}-${mode}.cpuprofile`, JSON.stringify(profile));
  }
  note(`${mode}: typed at ${round((EVENTS * 1000) / typingMs)} events/s`);
  const { driverTimes, counts, loop } = await ctx.server.call<Collected>({
    cmd: 'collect',
    n: EVENTS,
  });
  const tasksAfter = await readLongTasks();
  note(`${mode}: ${(await readFrames()) - framesBefore} frames presented while typing`);
  const dropsAfter = await udpReceiveBufferErrors();
  if (dropsBefore !== null && dropsAfter !== null) {
    note(`${mode}: ${dropsAfter - dropsBefore} UDP datagrams dropped (receive buffers full)`);
  }
  const longTasks = tasksAfter.count - tasksBefore.count;
  note(
    `${mode}: ${longTasks} long tasks in the page while typing, ${round(tasksAfter.totalMs - tasksBefore.totalMs)} ms in all, longest (whole page life) ${round(tasksAfter.maxMs)} ms`,
  );
  note(`${mode}: server event loop delay p50 ${loop.p50} p99 ${loop.p99} max ${loop.max} ms`);
  const browserTimes = await page.evaluate(
    () => (window as unknown as { __keys: number[] }).__keys,
  );
  const sendTimes = await page.evaluate(() => (window as unknown as { __sends: number[] }).__sends);
  await page.close();
  if (SCREEN_OFF) await ctx.server.call({ cmd: 'signal', on: true });
  if (sendTimes.length === browserTimes.length) {
    // where the time goes: the page (event to send) and the rest (transport + server)
    const inPage = sendTimes.map((t, i) => t - browserTimes[i]!);
    const rest = sendTimes.map((t, i) => driverTimes[i]! - t);
    note(
      `${mode}: event to send p50 ${round(percentile(inPage, 50), 2)} p99 ${round(percentile(inPage, 99), 2)} ms; send to driver p50 ${round(percentile(rest, 50), 2)} p99 ${round(percentile(rest, 99), 2)} ms`,
    );
  } else {
    note(`${mode}: ${sendTimes.length} sends seen in the page, no breakdown`);
  }
  if (DUMP) {
    const events = { browserTimes, sendTimes, driverTimes };
    await writeFile(`${DUMP}-${mode}.json`, JSON.stringify(events));
  }
  const wanted = mode === 'webrtc' ? 'rtc' : 'ws';
  note(
    `${mode}: ${browserTimes.length} browser events, ${driverTimes.length} driver calls, frames by transport ${JSON.stringify(counts)}`,
  );
  if (browserTimes.length !== EVENTS || driverTimes.length !== EVENTS) {
    throw new Error(`${mode}: expected ${EVENTS} events on both sides`);
  }
  if ((counts[wanted] ?? 0) < EVENTS) {
    throw new Error(`${mode}: input did not go through ${wanted}`);
  }
  const deltas = browserTimes.map((t, i) => driverTimes[i]! - t);
  return {
    p50: percentile(deltas, 50),
    p99: percentile(deltas, 99),
    samples: deltas.length,
    longTasks,
  };
}

async function releaseAfterDrop(browser: Browser, ctx: Ctx): Promise<number> {
  const results: number[] = [];
  for (let round_ = 0; round_ < sized(5, 2); round_ += 1) {
    const { page } = await openConsole(browser, ctx, 'webrtc');
    await new Promise((r) => setTimeout(r, 1500));
    for (const key of ['ShiftLeft', 'KeyW', 'KeyD']) await page.keyboard.down(key);
    const { held } = await ctx.server.call<{ held: string[] }>({ cmd: 'held', n: 3 });
    if (held.length < 3) throw new Error(`keys not held: ${held.join(',')}`);
    await ctx.server.call({ cmd: 'arm' });
    // both epoch ms of this machine (the server stamps in its own process)
    const cutAt = performance.timeOrigin + performance.now();
    await page.close({ runBeforeUnload: false });
    const { at } = await ctx.server.call<{ at: number }>({ cmd: 'released' });
    results.push(at - cutAt);
  }
  note(`release after drop: ${results.map((r) => round(r)).join(', ')} ms`);
  return median(results);
}

/** 600 characters of ordinary mixed text. */
function pasteText(): string {
  const sentence = 'The quick brown fox jumps over the lazy dog, then Types 42 more words: OK? ';
  let text = '';
  while (text.length < 600) text += sentence;
  return text.slice(0, 600);
}

async function pasteRate(): Promise<number> {
  const s = await serve('qemu');
  try {
    const serial = join(s.dir, 'run', 'serial.log');
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      const log = await readFile(serial, 'utf8').catch(() => '');
      if (/add .*Keyboard/.test(log)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const text = pasteText();
    // Typed as a shell command, so the guest's screen shows it twice: the command line and the
    // output. Its own text buffer (the guest's `screen` command) is the oracle.
    await new Promise((r) => setTimeout(r, 1000));
    const t0 = performance.now();
    const answer = (await post(s, '/api/hid/print?limit=0&keymap=en-us', `echo '${text}'`)) as {
      result: { typed: number; unmapped: string[] };
    };
    const ms = performance.now() - t0;
    const before = (await readFile(serial, 'utf8')).length;
    await post(s, '/api/hid/print?limit=0&keymap=en-us', '\nscreen\n');
    let screen = '';
    const until = Date.now() + 10_000;
    while (Date.now() < until) {
      const log = (await readFile(serial, 'utf8')).slice(before).replace(/\r/g, '');
      const match = /screen begin \S+\n([\s\S]*?)\nscreen end/.exec(log);
      if (match) {
        screen = match[1]!;
        break;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    const squeeze = (t: string): string => t.replace(/\s+/g, '');
    const shown = squeeze(screen).split(squeeze(text)).length - 1;
    note(
      `paste: ${answer.result.typed} typed in ${round(ms)} ms; the guest's screen shows it ${shown} times`,
    );
    if (shown < 2) throw new Error(`paste: the guest's screen does not show the text:\n${screen}`);
    return (answer.result.typed / ms) * 1000;
  } finally {
    await s.app.close();
    await rm(s.dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const served = await ServerChild.start();
  let browser: Browser | null = null;
  try {
    const ctx: Ctx = served;
    browser = await Browser.launch();
    const dc = await latency(browser, ctx, 'webrtc');
    const ws = await latency(browser, ctx, 'direct_h264');
    const drop = LATENCY_ONLY ? null : await releaseAfterDrop(browser, ctx);
    await browser.close();
    browser = null;
    await served.server.close();
    const paste = LATENCY_ONLY ? null : await pasteRate();
    process.stdout.write(
      `${JSON.stringify({
        ...runMarks(),
        // with no picture the figures are of another condition: fields of their own
        [`datachannel${SCREEN_TAG}_p50_ms`]: round(dc.p50, 2),
        [`datachannel${SCREEN_TAG}_p99_ms`]: round(dc.p99, 2),
        [`ws${SCREEN_TAG}_p50_ms`]: round(ws.p50, 2),
        [`ws${SCREEN_TAG}_p99_ms`]: round(ws.p99, 2),
        [`datachannel${SCREEN_TAG}_samples`]: dc.samples,
        [`ws${SCREEN_TAG}_samples`]: ws.samples,
        [`datachannel${SCREEN_TAG}_long_tasks`]: dc.longTasks,
        [`ws${SCREEN_TAG}_long_tasks`]: ws.longTasks,
        ...(paste === null ? {} : { paste_chars_per_s: round(paste) }),
        ...(drop === null ? {} : { release_after_drop_ms: round(drop) }),
      })}\n`,
    );
  } finally {
    await browser?.close();
    await served.server.close();
  }
}

if (SERVER_CHILD) await runServerChild();
else await main();

/**
 * The Janus gateway against the official janus.js in Debian's Chromium: a minimal Fastify app
 * in this process serves the gateway (fed by real H.264 from ffmpeg, grouped into access units
 * by AUD), a page and janus.js bundled with its adapter by esbuild. The page drives janus.js
 * like the console does (features → watch → createAnswer → start) and the test checks that the
 * <video> really decodes frames and that the server's data channel carries input both ways.
 *
 * Chromium runs with its default mDNS candidate hiding: the gateway drops `.local` candidates
 * and connects through the browser's own checks (architecture.md).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { build } from 'esbuild';
import Fastify, { type FastifyInstance } from 'fastify';
import fastifyWebsocket from '@fastify/websocket';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { Browser } from './fixtures/browser';
import { REPO_ROOT } from './fixtures/server';
import { janusFeatures, registerJanus, type JanusGateway } from '../server/src/janus/gateway';
import { loadPeerModule } from '../server/src/janus/webrtc';
import { NalType, nalType, splitNalUnits } from '../server/src/media/annexb';
import type { AccessUnit, VideoFeed } from '../server/src/media/types';

/** Real H.264 from ffmpeg in real time, one access unit per AUD, with a GOP cache. */
class FfmpegFeed implements VideoFeed {
  readonly profileLevelId = '42e01f';
  private readonly viewers = new Set<(unit: AccessUnit) => void>();
  private gop: AccessUnit[] = [];
  private child: ChildProcess | null = null;
  private pending = Buffer.alloc(0);
  private seq = 0;
  units = 0;
  keyFrameRequests = 0;

  start(): void {
    const args = [
      ['-hide_banner', '-loglevel', 'error', '-re'],
      ['-f', 'lavfi', '-i', 'testsrc2=size=640x360:rate=30'],
      ['-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-profile:v', 'baseline', '-tune', 'zerolatency'],
      ['-x264-params', 'keyint=30:aud=1:repeat-headers=1', '-f', 'h264', '-'],
    ].flat();
    const child = spawn('ffmpeg', args, { stdio: ['ignore', 'pipe', 'inherit'] });
    this.child = child;
    child.stdout?.on('data', (chunk: Buffer) => this.onData(chunk));
  }

  stop(): void {
    this.child?.kill('SIGKILL');
    this.child = null;
  }

  subscribe(onUnit: (unit: AccessUnit) => void): () => void {
    this.viewers.add(onUnit);
    for (const unit of this.gop) onUnit(unit);
    return () => this.viewers.delete(onUnit);
  }

  requestKeyFrame(): void {
    this.keyFrameRequests += 1;
  }

  private onData(chunk: Buffer): void {
    this.pending = Buffer.concat([this.pending, chunk]);
    // An access unit runs from one AUD (00 00 00 01 09) to the next.
    for (;;) {
      const first = this.pending.indexOf(AUD);
      const next = first < 0 ? -1 : this.pending.indexOf(AUD, first + AUD.length);
      if (next < 0) return;
      this.emit(Buffer.from(this.pending.subarray(first, next)));
      this.pending = this.pending.subarray(next);
    }
  }

  private emit(data: Buffer): void {
    const key = splitNalUnits(data).some((nal) => nalType(nal) === NalType.sliceIdr);
    const capturedAt = performance.now();
    const unit: AccessUnit = {
      data,
      key,
      seq: ++this.seq,
      capturedAt,
      pts90k: Math.round(capturedAt * 90),
    };
    this.units += 1;
    if (key) this.gop = [];
    if (key || this.gop.length > 0) this.gop.push(unit);
    for (const viewer of this.viewers) viewer(unit);
  }
}

const AUD = Buffer.from([0, 0, 0, 1, 0x09]);

/** The page: janus.js as the console drives it, with timings and data channel results. */
const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>janus e2e</title></head>
<body><video id="v" muted playsinline autoplay></video>
<script src="/janus.js"></script>
<script>
const stats = { frames: 0, marks: {}, errors: [], data: [], dataOpen: [] };
window.__stats = stats;
const mark = (name) => { if (!(name in stats.marks)) stats.marks[name] = Math.round(performance.now()); };
const video = document.getElementById('v');
function onFrame() {
  stats.frames += 1;
  if (stats.frames === 1) mark('firstFrame');
  stats.width = video.videoWidth;
  stats.height = video.videoHeight;
  video.requestVideoFrameCallback(onFrame);
}
video.requestVideoFrameCallback(onFrame);
Janus.init({ debug: false, callback: () => {
  const janus = new Janus({
    server: 'ws://' + location.host + '/janus/ws',
    iceServers: [],
    destroyOnUnload: false,
    error: (e) => stats.errors.push('janus: ' + e),
    success: () => {
      mark('session');
      janus.attach({
        plugin: 'janus.plugin.ustreamer',
        opaqueId: 'oid-' + Janus.randomString(12),
        error: (e) => stats.errors.push('attach: ' + e),
        success: (handle) => {
          mark('attached');
          window.__handle = handle;
          handle.send({ message: { request: 'features' } });
        },
        onmessage: (msg, jsep) => {
          const handle = window.__handle;
          const result = msg.result || {};
          if (msg.error) stats.errors.push('plugin: ' + msg.error_code + ' ' + msg.error);
          if (result.status === 'features') {
            stats.features = result.features;
            mark('features');
            handle.send({ message: { request: 'watch', params: {
              orientation: 0, audio: false, video: true, mic: false, camera: false } } });
          }
          if (result.status) stats.statuses = (stats.statuses || []).concat(result.status);
          if (jsep) {
            mark('offer');
            stats.offer = jsep.sdp;
            handle.createAnswer({
              jsep,
              tracks: [{ type: 'video', capture: false, recv: true, add: true }, { type: 'data' }],
              success: (answer) => {
                mark('answer');
                handle.send({ message: { request: 'start' }, jsep: answer });
              },
              error: (e) => stats.errors.push('answer: ' + e),
            });
          }
        },
        webrtcState: (up) => { if (up) mark('webrtcup'); },
        iceState: (s) => { stats.ice = s; },
        onremotetrack: (track, mid, added) => {
          // janus.js may report the same track again (e.g. on unmute): attach it once.
          if (!added || track.kind !== 'video' || video.srcObject) return;
          mark('track');
          video.srcObject = new MediaStream([track]);
          video.play().catch((e) => stats.errors.push('play: ' + e));
        },
        ondataopen: (label) => {
          stats.dataOpen.push(label);
          const handle = window.__handle;
          if (label === 'hid') {
            handle.data({ label: 'hid', data: new Uint8Array([0x00]).buffer });
            handle.data({ label: 'hid', data: new Uint8Array([0x03, 0x00, 0x10, 0xff, 0xf0]).buffer });
          } else {
            handle.data({ label, data: new Uint8Array([0x05, 0x00, 0x00, 0x01]).buffer });
          }
        },
        ondata: async (data, label) => {
          const bytes = new Uint8Array(data instanceof Blob ? await data.arrayBuffer() : data);
          stats.data.push(label + ':' + Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join(''));
        },
      });
    },
  });
} });
</script></body></html>`;

interface PageStats {
  frames: number;
  width?: number;
  height?: number;
  marks: Record<string, number>;
  errors: string[];
  data: string[];
  dataOpen: string[];
  statuses?: string[];
  features?: unknown;
  offer?: string;
}

let app: FastifyInstance;
let gateway: JanusGateway;
let feed: FfmpegFeed;
let browser: Browser;
let page: Page;
let baseUrl: string;
const inputs: [string, string][] = [];
const gone: string[] = [];
const serverLog: string[] = [];
const pageLog: string[] = [];

beforeAll(async () => {
  const bundle = await build({
    stdin: {
      // janus.js reads webrtc-adapter from the global `adapter` (the UMD way): provide it.
      contents: [
        "import adapter from 'webrtc-adapter';",
        "import Janus from 'janus-gateway';",
        'window.adapter = adapter;',
        'window.Janus = Janus;',
      ].join('\n'),
      resolveDir: REPO_ROOT,
      loader: 'js',
    },
    bundle: true,
    format: 'iife',
    platform: 'browser',
    write: false,
    logLevel: 'silent',
  });
  const janusJs = bundle.outputFiles[0]!.text;

  feed = new FfmpegFeed();
  feed.start();
  app = Fastify();
  await app.register(fastifyWebsocket);
  const note = (level: string) => (obj: object, msg?: string) =>
    serverLog.push(`${level} ${msg ?? ''} ${JSON.stringify(obj)}`);
  gateway = registerJanus(app, {
    feed,
    iceServers: () => [],
    features: () => janusFeatures([]),
    onInput: (key, data) => inputs.push([key, data.toString('hex')]),
    onViewerGone: (key) => gone.push(key),
    log: { debug: note('debug'), info: note('info'), warn: note('warn'), error: note('error') },
  });
  // The server loads werift at its first /janus/ws socket (janus/webrtc.ts): ~0.15 s from the
  // bundle, ~1 s from source under vitest. Loaded here, the timeline below is the gateway's.
  await (await loadPeerModule()).prewarmDtlsCertificate();
  app.get('/', async (_req, reply) => reply.type('text/html').send(PAGE));
  app.get('/janus.js', async (_req, reply) => reply.type('text/javascript').send(janusJs));
  await app.listen({ port: 0, host: '127.0.0.1' });
  const addr = app.server.address();
  baseUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  browser = await Browser.launch();
  page = await browser.page();
  page.on('console', (msg) => {
    if (msg.type() === 'error' || msg.type() === 'warning') pageLog.push(msg.text());
  });
  page.on('pageerror', (err) => pageLog.push(`pageerror: ${err.message}`));
  // A warm encoder: the GOP cache holds a key frame before the page asks (as on a device
  // whose console is already streaming).
  const t0 = Date.now();
  while (feed.units < 5 && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 20));
});

afterAll(async () => {
  await browser?.close();
  await app?.close();
  feed?.stop();
});

function readStats(): Promise<PageStats> {
  return page.evaluate(() => (window as unknown as { __stats: PageStats }).__stats);
}

/** Waits for a condition in the page; on timeout, fails with what the page and server saw. */
async function waitForPage(fn: () => boolean, timeout = 20_000): Promise<void> {
  try {
    await page.waitForFunction(fn, undefined, { timeout });
  } catch (err) {
    const stats = await readStats().catch(() => null);
    const { offer: _offer, ...rest } = stats ?? { offer: undefined };
    throw new Error(
      [
        (err as Error).message,
        `page: ${JSON.stringify(rest)}`,
        `console: ${pageLog.join('\n')}`,
        `server: ${serverLog.join('\n')}`,
      ].join('\n'),
    );
  }
}

describe('janus gateway with janus.js in Chromium', () => {
  it('connects, answers via start, decodes H.264 frames and carries input on the data channel', async () => {
    await page.goto(baseUrl);
    await waitForPage(() => (window as unknown as { __stats: PageStats }).__stats.frames > 10);
    const stats = await readStats();
    expect(stats.errors).toEqual([]);
    expect(stats.features).toEqual({ audio: false, mic: false });
    expect(stats.offer).toContain('H264/90000');
    expect(stats.offer).toMatch(/^m=application /m);
    expect(stats.statuses).toEqual(['features', 'started', 'started']);
    expect(stats.width).toBe(640);
    expect(stats.height).toBe(360);
    expect(stats.frames).toBeGreaterThan(10);

    // Data channel: the server's `hid` channel answers a ping and relays input; the channel
    // janus.js opens itself (`JanusDataChannel`) works without renegotiation.
    await waitForPage(() => (window as unknown as { __stats: PageStats }).__stats.data.length > 0);
    const after = await readStats();
    expect(after.dataOpen.sort()).toEqual(['JanusDataChannel', 'hid']);
    expect(after.data).toEqual(['hid:ff']);
    await expect.poll(() => inputs.map(([, d]) => d).sort()).toEqual(['030010fff0', '05000001']);
    expect(new Set(inputs.map(([key]) => key)).size).toBe(1);

    const m = stats.marks;
    const order = ['session', 'attached', 'features', 'offer', 'track', 'answer', 'webrtcup'];
    const timeline = Object.fromEntries(
      [...order, 'firstFrame'].filter((k) => k in m).map((k) => [k, m[k]]),
    );
    // Measured: page load (navigation start) to the first decoded frame.
    console.log(`janus e2e timeline (ms since navigation start): ${JSON.stringify(timeline)}`);
    console.log(serverLog.filter((l) => / ms\b|"ms"/.test(l)).join('\n'));
    expect(m['firstFrame']).toBeLessThan(5_000);
  });

  it('releases the viewer when the page goes away', async () => {
    expect(gateway.peerCount).toBe(1);
    await page.goto('about:blank');
    await expect.poll(() => gateway.sessionCount, { timeout: 10_000 }).toBe(0);
    await expect.poll(() => gateway.peerCount).toBe(0);
    // once for the data channel closing, once for the peer: the same input client each time
    expect(gone.length).toBeGreaterThanOrEqual(1);
    expect(new Set(gone)).toEqual(new Set([inputs[0]![0]]));
  });
});

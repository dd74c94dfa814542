/**
 * The parts of the time to first frame (bench/video.ts `ttff_*_parts`): where a page load
 * spends the time between navigation start and the first presented frame.
 *
 * Each part is the first time (ms since navigation start, the page's clock) something happened:
 * - from the Resource/Navigation Timing entries (their responseEnd: the response fully
 *   received): the HTML, the entry bundle, `DOMContentLoaded` (the entry module has run), each
 *   API request and lazy chunk on the way to the video;
 * - from `ttffProbe`, an init script that wraps WebSocket and RTCPeerConnection: the Janus
 *   socket's open, each Janus step as its message leaves or arrives (session create, attach,
 *   features, watch, the offer, the answer), ICE connected (`iceconnectionstatechange`), DTLS
 *   up (`connectionstatechange` connected), the remote track, its first RTP (`unmute`: the
 *   first packet), the <video>'s `loadedmetadata` (its first frame decoded); for direct H.264
 *   the worker's start (`worker_started`: its first script runs), the media socket's open,
 *   first unit and first key unit (`ttffWorkerProbe`, in the console's worker), the first chunk
 *   given to the decoder and its first output;
 * - the console's performance marks named `kvm:*` (`kvm:webrtc:start` and `kvm:direct:start`:
 *   the client started), as `kvm_webrtc_start`;
 * - `root_mounted`: React's first commit into #root; `console_toolbar`: the console's toolbar
 *   in the page (its chrome rendered: bench/video.ts waits for it, `ttff_*_console_ms`);
 * - `presented`: the g2g harness's first presented frame (bench/video.ts says what that is);
 *   `frame_submitted` (WebRTC): that frame's `presentationTime`, when it went to the
 *   compositor, which needs no main thread: `presented` minus it is the callback's wait for a
 *   busy main thread;
 * - cold loads add the server's side (this process, epoch clock converted to the page's):
 *   `encoder_spawn` (H264Encoder created), `encoder_running` (ffmpeg spawned: `started`),
 *   `encoder_first_unit` (its first access unit).
 * A part that did not happen is left out.
 */
import type { Page } from 'playwright-core';

export type Parts = Record<string, number>;

interface TtffWindow {
  __ttff: Parts;
}

/** Page init script: records the first time of each WebSocket / WebRTC step into __ttff. */
export function ttffProbe(): void {
  const marks: Parts = {};
  (window as unknown as TtffWindow).__ttff = marks;
  const at = (name: string, t = performance.now()): void => {
    if (marks[name] === undefined) marks[name] = t;
  };
  new BroadcastChannel('kvm-bench-ttff').onmessage = (
    e: MessageEvent<{ name: string; t: number }>,
  ) => at(e.data.name, e.data.t - performance.timeOrigin);
  new MutationObserver(() => {
    if (document.getElementById('root')?.firstChild) at('root_mounted');
    if (document.querySelector('[data-testid="toolbar"]')) at('console_toolbar');
    const video = document.querySelector('video');
    if (video && !video.dataset['ttff']) {
      video.dataset['ttff'] = '1';
      at('video_element');
      video.addEventListener('loadedmetadata', () => at('video_metadata'));
    }
  }).observe(document, { childList: true, subtree: true });

  const NativeWS = window.WebSocket;
  const janusStep = (prefix: string, raw: unknown): void => {
    if (typeof raw !== 'string') return;
    let m: {
      janus?: string;
      body?: { request?: string };
      jsep?: { type?: string };
      plugindata?: { data?: { result?: { status?: string } } };
    };
    try {
      m = JSON.parse(raw) as typeof m;
    } catch {
      return;
    }
    if (m.janus === 'keepalive' || m.janus === 'ack') return;
    const what = m.jsep?.type ?? m.body?.request ?? m.plugindata?.data?.result?.status ?? m.janus;
    if (what) at(`janus_${prefix}_${what}`);
  };
  window.WebSocket = class extends NativeWS {
    constructor(url: string | URL, protocols?: string | string[]) {
      super(url, protocols);
      const janus = String(url).includes('/janus/');
      const kind = janus ? 'janus_ws' : String(url).includes('/media/') ? 'media_ws' : null;
      if (!kind) return;
      at(`${kind}_created`);
      this.addEventListener('open', () => at(`${kind}_open`));
      if (janus) this.addEventListener('message', (e) => janusStep('in', e.data));
    }
    override send(data: string | ArrayBufferLike | Blob | ArrayBufferView): void {
      if (this.url.includes('/janus/')) janusStep('out', data);
      super.send(data);
    }
  };

  const NativePC = window.RTCPeerConnection;
  const Wrapped = function (
    this: unknown,
    ...args: ConstructorParameters<typeof RTCPeerConnection>
  ) {
    const pc = new NativePC(...args);
    at('pc_created');
    pc.addEventListener('iceconnectionstatechange', () => {
      if (pc.iceConnectionState === 'connected' || pc.iceConnectionState === 'completed')
        at('ice_connected');
    });
    pc.addEventListener('connectionstatechange', () => {
      if (pc.connectionState === 'connected') at('dtls_connected');
    });
    pc.addEventListener('track', (e) => {
      if (e.track.kind !== 'video') return;
      at('track');
      if (!e.track.muted) at('first_rtp');
      e.track.addEventListener('unmute', () => at('first_rtp'));
    });
    return pc;
  } as unknown as typeof RTCPeerConnection;
  Wrapped.prototype = NativePC.prototype;
  // the g2g harness wraps the constructor too (it runs before or after this one)
  window.RTCPeerConnection = Wrapped;
}

/** Worker prelude (direct H.264's worker): its media socket and decoder steps, epoch ms. */
export function ttffWorkerProbe(): void {
  const channel = new BroadcastChannel('kvm-bench-ttff');
  const seen = new Set<string>();
  const at = (name: string): void => {
    if (seen.has(name)) return;
    seen.add(name);
    channel.postMessage({ name, t: performance.timeOrigin + performance.now() });
  };
  at('worker_started');
  const NativeWS = self.WebSocket;
  self.WebSocket = class extends NativeWS {
    constructor(url: string | URL, protocols?: string | string[]) {
      super(url, protocols);
      at('media_ws_created');
      this.addEventListener('open', () => at('media_ws_open'));
      this.addEventListener('message', (e: MessageEvent) => {
        if (typeof e.data === 'string') {
          at('media_hello');
          return;
        }
        const b = new Uint8Array(e.data as ArrayBuffer);
        if (b.length < 3 || b[0] !== 0x01) return;
        at('media_first_unit');
        if (b[1] !== 0) at('media_first_key');
      });
    }
  } as typeof WebSocket;
  const scope = self as unknown as { VideoDecoder?: typeof VideoDecoder };
  const NativeDecoder = scope.VideoDecoder;
  if (NativeDecoder) {
    scope.VideoDecoder = class extends NativeDecoder {
      constructor(init: VideoDecoderInit) {
        super({
          ...init,
          output: (frame: VideoFrame) => {
            at('decoder_first_output');
            init.output(frame);
          },
        });
      }
      override decode(chunk: EncodedVideoChunk): void {
        at('decoder_first_chunk');
        super.decode(chunk);
      }
    };
  }
}

/** Resource Timing picks, in load order: part name → a substring of the request's URL. */
const RESOURCES: Array<[string, string]> = [
  ['entry_js', '/assets/index-'],
  ['is_inited', '/api/init/is_inited'],
  ['auth_check', '/api/auth/check'],
  ['shell_chunk', '/assets/ProtectedShell-'],
  ['layout_chunk', '/assets/MainLayout-'],
  ['page_chunk', '/assets/MainPage-'],
  ['video_session_chunk', '/assets/video-session-'],
  ['get_config', '/api/system/get_config'],
  ['streamer_state', '/api/streamer'],
  ['janus_stream_chunk', '/assets/janus-stream-'],
  ['janus_js_chunk', '/assets/janus.es-'],
  ['janus_auth', '/janus/auth'],
  ['get_turn', '/api/turn/get_turn'],
  ['direct_chunk', '/assets/h264-direct-'],
];

/** The parts of the page's load so far (ms since navigation start), sorted by time. */
export async function readParts(page: Page, presented: number | null): Promise<Parts> {
  const { probe, resources, nav, marks, submitted } = await page.evaluate(() => {
    const n = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming;
    return {
      probe: (window as unknown as { __ttff?: Parts }).__ttff ?? {},
      submitted:
        (window as unknown as { __bench?: { firstSubmitted: number | null } }).__bench
          ?.firstSubmitted ?? null,
      resources: performance
        .getEntriesByType('resource')
        .map((r) => r as PerformanceResourceTiming)
        .map((r) => ({ name: r.name, start: r.startTime, end: r.responseEnd })),
      nav: { html: n.responseEnd, dcl: n.domContentLoadedEventStart },
      marks: performance
        .getEntriesByType('mark')
        .filter((m) => m.name.startsWith('kvm:'))
        .map((m) => ({ name: m.name, t: m.startTime })),
    };
  });
  const parts: Parts = { html: nav.html, dom_content_loaded: nav.dcl };
  for (const [name, needle] of RESOURCES) {
    const hit = resources.find(
      (r) =>
        r.name.includes(needle) &&
        !(needle === '/api/streamer' && r.name.includes('/api/streamer/')),
    );
    if (hit) {
      parts[`${name}_sent`] = hit.start;
      parts[name] = hit.end;
    }
  }
  // the console's own marks (kvm:webrtc:start...) as kvm_webrtc_start..., the first of each
  for (const m of marks) parts[m.name.replace(/:/g, '_')] ??= m.t;
  Object.assign(parts, probe);
  if (presented !== null) parts['presented'] = presented;
  if (submitted !== null) parts['frame_submitted'] = submitted;
  return sortParts(parts);
}

export function sortParts(parts: Parts): Parts {
  return Object.fromEntries(
    Object.entries(parts)
      .sort((a, b) => a[1] - b[1])
      .map(([k, v]) => [k, Math.round(v * 10) / 10]),
  );
}

/** The page's navigation start, epoch ms (to put the server's times on the page's axis). */
export function pageOrigin(page: Page): Promise<number> {
  return page.evaluate(() => performance.timeOrigin);
}

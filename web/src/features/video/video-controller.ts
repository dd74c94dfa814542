/**
 * Which video client runs, and the WebRTC → direct H.264 fallback (architecture.md "Beyond the
 * peers": WebRTC blocked? The console falls back to direct H.264 by itself, and says so). A
 * plain class; React subscribes through useSyncExternalStore.
 *
 * - start(mode) runs the client of the `video_mode` setting; a new mode switches live.
 * - WebRTC that shows no frame within WEBRTC_FALLBACK_MS (docs/webrtc.md "Fallback": measured
 *   under load, with margin), or cannot run at all in this browser, is joined by direct H.264,
 *   which is shown instead; `fallback` says so and the stored setting is left as it is. While
 *   the streamer reports its source offline there is no picture to wait for: the wait starts over.
 *   Once WebRTC has shown a frame, a later outage is left to its own retries.
 * - After the fallback WebRTC is tried again in the background (issue 21 item 14): the attempt
 *   that was too slow keeps going until WEBRTC_PROBE_MS after its start; a failed attempt is
 *   stopped and a new one follows after a backoff (5 s, doubling, at most 60 s). An attempt that
 *   decodes a frame is handed over: the snapshot shows WebRTC (`handover`) while direct H.264
 *   still runs, and direct stops only once the view says the WebRTC video presented a frame
 *   (webrtcPresented()), so the user keeps a picture throughout. No frame presented within
 *   HANDOVER_MS: the attempt counts as failed and direct H.264 stays.
 * - Each client retries by itself (SPEC 4); the controller only picks and reports.
 *
 *   webrtc ──no frame in time──▶ direct + background attempt ──frame decoded──▶ handover
 *     ▲                              ▲   │ failed: stop, wait 5…60 s, try again    │
 *     │                              │   ▼                                         │
 *     │                              └── direct + waiting ◀── not presented ───────┤
 *     └──────────────────────────────── view presented a WebRTC frame ◀────────────┘
 *
 * The attempts leave performance marks (`kvm:webrtc:start`, `kvm:webrtc:active`, detail
 * {attempt}) that bench/webrtc-connect.ts reads to measure how long a connection takes.
 */
import type { VideoMode } from '@kvm/protocol/enums';
import { Emitter } from '../../lib/emitter';
import type { H264DirectStream } from '../../lib/h264-direct';
import type { JanusStream } from '../../lib/janus-stream';
import {
  EMPTY_STREAM_INFO,
  type StreamClient,
  type StreamInfo,
  type StreamMessage,
  type StreamState,
} from '../../lib/stream-types';
import { WEBRTC_FALLBACK_MS, WEBRTC_PROBE_MS } from './webrtc-timing';

// The two waits live apart so the bench can import them without the console's Vite code.
export { WEBRTC_FALLBACK_MS, WEBRTC_PROBE_MS } from './webrtc-timing';
/** The wait before the next background attempt: doubles after each failure, from the first. */
export const WEBRTC_RETRY_MIN_MS = 5_000;
export const WEBRTC_RETRY_MAX_MS = 60_000;
/** A decoded WebRTC frame that the view does not present within this is a failed attempt. */
export const HANDOVER_MS = 10_000;
/** A client module that failed to load (offline) is tried again after this. */
export const CLIENT_LOAD_RETRY_MS = 5_000;

export type WebRtcClient = Pick<
  JanusStream,
  | 'kind'
  | 'start'
  | 'stop'
  | 'getState'
  | 'getInfo'
  | 'getTrack'
  | 'on'
  | 'inputChannel'
  | 'getAudioTrack'
  | 'getFeatures'
  | 'micChanged'
  | 'cameraChanged'
>;
export type DirectClient = Pick<
  H264DirectStream,
  | 'kind'
  | 'start'
  | 'stop'
  | 'getState'
  | 'getInfo'
  | 'getSize'
  | 'on'
  | 'attachCanvas'
  | 'attachedCanvas'
  | 'releaseGoneCanvases'
> & { readonly framesDrawn: number };

export interface VideoSnapshot {
  /** What the `video_mode` setting asks for; null while nothing runs. */
  requestedMode: VideoMode | null;
  /** What runs: the requested mode, or direct_h264 after the fallback. */
  mode: VideoMode | null;
  /** WebRTC did not work and direct H.264 runs instead (also during the handover back). */
  fallback: boolean;
  /**
   * A background WebRTC attempt decoded a frame: WebRTC is shown (`mode` webrtc, `webrtc`,
   * `track`) while direct H.264 (`direct`) still draws, until webrtcPresented().
   */
  handover: boolean;
  /** After a fallback: WebRTC is tried again in the background. */
  retrying: boolean;
  /** The running mode cannot work in this browser (direct H.264 without WebCodecs). */
  unsupported: boolean;
  state: StreamState;
  info: StreamInfo;
  /** WebRTC: the remote video track. */
  track: MediaStreamTrack | null;
  webrtc: WebRtcClient | null;
  direct: DirectClient | null;
}

export interface VideoControllerOptions {
  createWebRtc: () => Promise<WebRtcClient>;
  createDirect: () => Promise<DirectClient>;
  /** streamer.source.online; null when unknown. */
  isSourceOnline?: () => boolean | null;
  fallbackMs?: number;
  probeMs?: number;
  retryMinMs?: number;
  retryMaxMs?: number;
  handoverMs?: number;
}

/** The snapshot while nothing runs. */
export const IDLE: VideoSnapshot = {
  requestedMode: null,
  mode: null,
  fallback: false,
  handover: false,
  retrying: false,
  unsupported: false,
  state: 'idle',
  info: EMPTY_STREAM_INFO,
  track: null,
  webrtc: null,
  direct: null,
};

/** A WebRTC client tried in the background after the fallback. */
interface Attempt {
  client: WebRtcClient;
  number: number;
  offs: Array<() => void>;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/** Marks for bench/webrtc-connect.ts (no-op where the timeline API is missing). */
function mark(name: 'kvm:webrtc:start' | 'kvm:webrtc:active', attempt: number): void {
  try {
    globalThis.performance?.mark?.(name, { detail: { attempt } });
  } catch {
    // An old timeline without `detail`: the bench is the only reader.
  }
}

function now(): number {
  return globalThis.performance?.now?.() ?? Date.now();
}

export class VideoController {
  private readonly options: VideoControllerOptions;
  private snapshot: VideoSnapshot = IDLE;
  private readonly listeners = new Set<() => void>();
  private readonly messages = new Emitter<{ message: StreamMessage }>();
  /** Bumped by start/stop/reconnected: the timers and callbacks of an older run do nothing. */
  private generation = 0;
  /** Bumped whenever the shown client changes: callbacks of the one before do nothing. */
  private shown = 0;
  /** The client on screen (the snapshot's state is its state). */
  private client: WebRtcClient | DirectClient | null = null;
  private unsubscribeClient: (() => void) | null = null;
  /** The shown WebRTC client's attempt number and start (ms, performance clock). */
  private shownAttempt = { number: 0, startedAt: 0 };
  private attempt: Attempt | null = null;
  private attempts = 0;
  private backoffMs: number;
  private fallbackTimer: ReturnType<typeof setTimeout> | undefined;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private attemptTimer: ReturnType<typeof setTimeout> | undefined;
  private handoverTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(options: VideoControllerOptions) {
    this.options = options;
    this.backoffMs = this.retryMinMs();
  }

  getSnapshot = (): VideoSnapshot => this.snapshot;

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  /** Stream errors to show as info messages (SPEC 4/8). */
  onMessage(handler: (message: StreamMessage) => void): () => void {
    return this.messages.on('message', handler);
  }

  /** Runs the client of `mode`; the same mode again changes nothing. */
  start(mode: VideoMode): void {
    if (this.snapshot.requestedMode === mode) return;
    this.run(mode, mode, false);
  }

  stop(): void {
    this.generation += 1;
    this.dropAll();
    this.update(IDLE);
  }

  /**
   * The connection to the device came back (heartbeat): a client that is not showing video
   * starts over now instead of waiting for its own retry, and WebRTC gets another chance.
   */
  reconnected(): void {
    const { requestedMode, state } = this.snapshot;
    if (!requestedMode || state === 'active') return;
    this.run(requestedMode, requestedMode, false);
  }

  /**
   * The view presented a frame of the WebRTC video. During a handover that ends direct H.264:
   * the WebRTC client is the one shown from now on.
   */
  webrtcPresented(): void {
    const attempt = this.attempt;
    if (!this.snapshot.handover || !attempt) return;
    this.attempt = null;
    this.forget(attempt);
    clearTimeout(this.handoverTimer);
    this.backoffMs = this.retryMinMs();
    this.dropShown();
    this.update({
      ...this.snapshot,
      fallback: false,
      handover: false,
      retrying: false,
      direct: null,
    });
    this.shownAttempt = { number: attempt.number, startedAt: 0 };
    this.adopt(++this.shown, attempt.client, true);
  }

  // --- the shown client ---------------------------------------------------------------------

  private run(requestedMode: VideoMode, mode: VideoMode, fallback: boolean): void {
    this.generation += 1;
    this.dropAll();
    this.backoffMs = this.retryMinMs();
    this.update({ ...IDLE, requestedMode, mode, fallback, state: 'connecting' });
    this.show(mode);
  }

  /** Creates and shows the client of `mode` (the snapshot says `mode` already). */
  private show(mode: VideoMode): void {
    const token = ++this.shown;
    const create = mode === 'webrtc' ? this.options.createWebRtc : this.options.createDirect;
    create().then(
      (client) => {
        if (token === this.shown) this.adopt(token, client, false);
      },
      () => {
        if (token !== this.shown) return;
        // The client's chunk did not load (offline): try again.
        this.update({ ...this.snapshot, state: 'error' });
        this.retryTimer = setTimeout(() => {
          if (token === this.shown) this.show(mode);
        }, CLIENT_LOAD_RETRY_MS);
      },
    );
  }

  /** Shows `client`: starts it unless `started` (a WebRTC attempt handed over). */
  private adopt(token: number, client: WebRtcClient | DirectClient, started: boolean): void {
    this.client = client;
    const live = () => token === this.shown;
    // During a handover the snapshot already shows the WebRTC attempt: direct keeps drawing
    // but no longer speaks for the screen.
    const speaks = () => live() && !this.snapshot.handover;
    const base: StreamClient = client;
    const offs: Array<() => void> = [
      base.on('state', (state) => {
        if (!speaks()) return;
        if (client.kind === 'webrtc' && state === 'active' && !started) {
          // WebRTC works here: a later outage is for its own retries, not for the fallback.
          if (this.fallbackTimer !== undefined) mark('kvm:webrtc:active', this.shownAttempt.number);
          clearTimeout(this.fallbackTimer);
          this.fallbackTimer = undefined;
        }
        this.update({ ...this.snapshot, state });
      }),
      base.on('info', (info) => {
        if (speaks()) this.update({ ...this.snapshot, info });
      }),
      base.on('message', (message) => {
        if (speaks()) this.messages.emit('message', message);
      }),
      base.on('fatal', () => {
        if (!live()) return;
        if (client.kind === 'webrtc') this.fallBack('fatal');
        else this.update({ ...this.snapshot, unsupported: true });
      }),
    ];
    if (client.kind === 'webrtc') {
      offs.push(
        client.on('track', (track) => {
          if (live()) this.update({ ...this.snapshot, track });
        }),
      );
      this.update({ ...this.snapshot, webrtc: client, track: client.getTrack() });
      if (!started) {
        this.attempts += 1;
        this.shownAttempt = { number: this.attempts, startedAt: now() };
        mark('kvm:webrtc:start', this.attempts);
        this.armFallback(token);
      }
    } else {
      this.update({ ...this.snapshot, direct: client });
    }
    this.unsubscribeClient = () => offs.forEach((off) => off());
    if (!started) client.start();
    if (live() && !this.snapshot.handover) {
      this.update({ ...this.snapshot, state: client.getState(), info: client.getInfo() });
    }
  }

  private armFallback(token: number): void {
    clearTimeout(this.fallbackTimer);
    this.fallbackTimer = setTimeout(() => {
      if (token !== this.shown || this.client?.kind !== 'webrtc') return;
      if (this.client.getState() === 'active') return;
      // No picture from the source either: nothing WebRTC could have shown yet. Wait again.
      if (this.options.isSourceOnline?.() === false) this.armFallback(token);
      else this.fallBack('timeout');
    }, this.options.fallbackMs ?? WEBRTC_FALLBACK_MS);
  }

  /**
   * Direct H.264 takes the screen. A WebRTC client that was only slow goes on in the background;
   * one that failed is stopped and tried again later; one that cannot run here is never retried.
   */
  private fallBack(reason: 'timeout' | 'fatal'): void {
    if (this.snapshot.mode !== 'webrtc' || this.snapshot.fallback) return;
    const webrtc = this.client?.kind === 'webrtc' ? this.client : null;
    const { number, startedAt } = this.shownAttempt;
    this.unsubscribeClient?.();
    this.unsubscribeClient = null;
    this.client = null;
    clearTimeout(this.fallbackTimer);
    this.fallbackTimer = undefined;
    this.update({
      ...this.snapshot,
      mode: 'direct_h264',
      fallback: true,
      retrying: reason === 'timeout',
      state: 'connecting',
      info: EMPTY_STREAM_INFO,
      track: null,
      webrtc: null,
    });
    if (reason === 'fatal' || !webrtc) {
      webrtc?.stop();
    } else {
      const state = webrtc.getState();
      if (state === 'error' || state === 'stopped') {
        webrtc.stop();
        this.scheduleAttempt();
      } else {
        this.watchAttempt(webrtc, number, startedAt);
      }
    }
    this.show('direct_h264');
  }

  // --- WebRTC in the background -------------------------------------------------------------

  private scheduleAttempt(): void {
    clearTimeout(this.attemptTimer);
    const wait = this.backoffMs;
    this.backoffMs = Math.min(wait * 2, this.options.retryMaxMs ?? WEBRTC_RETRY_MAX_MS);
    const gen = this.generation;
    this.attemptTimer = setTimeout(() => {
      if (gen === this.generation) this.beginAttempt();
    }, wait);
  }

  private beginAttempt(): void {
    const gen = this.generation;
    this.options.createWebRtc().then(
      (client) => {
        if (gen !== this.generation || !this.snapshot.retrying || this.attempt) return;
        this.attempts += 1;
        mark('kvm:webrtc:start', this.attempts);
        this.watchAttempt(client, this.attempts, now());
        client.start();
      },
      () => {
        if (gen === this.generation && this.snapshot.retrying) this.scheduleAttempt();
      },
    );
  }

  private watchAttempt(client: WebRtcClient, number: number, startedAt: number): void {
    const attempt: Attempt = { client, number, offs: [], timer: undefined };
    this.attempt = attempt;
    const live = () => this.attempt === attempt;
    const handingOver = () => live() && this.snapshot.handover;
    attempt.offs.push(
      client.on('state', (state) => {
        if (!live()) return;
        if (state === 'active' && !this.snapshot.handover) this.handOver(attempt);
        else if (state === 'error' || state === 'stopped') this.attemptFailed(false);
      }),
      client.on('fatal', () => {
        if (live()) this.attemptFailed(true);
      }),
      client.on('track', (track) => {
        if (handingOver()) this.update({ ...this.snapshot, track });
      }),
      client.on('info', (info) => {
        if (handingOver()) this.update({ ...this.snapshot, info });
      }),
    );
    const probeMs = this.options.probeMs ?? WEBRTC_PROBE_MS;
    attempt.timer = setTimeout(
      () => {
        if (live() && !this.snapshot.handover) this.attemptFailed(false);
      },
      Math.max(0, probeMs - (now() - startedAt)),
    );
  }

  /** A background attempt decoded a frame: show it while direct H.264 goes on drawing. */
  private handOver(attempt: Attempt): void {
    mark('kvm:webrtc:active', attempt.number);
    clearTimeout(attempt.timer);
    this.update({
      ...this.snapshot,
      mode: 'webrtc',
      handover: true,
      state: 'active',
      webrtc: attempt.client,
      track: attempt.client.getTrack(),
      info: attempt.client.getInfo(),
    });
    this.handoverTimer = setTimeout(() => {
      if (this.attempt === attempt) this.attemptFailed(false);
    }, this.options.handoverMs ?? HANDOVER_MS);
  }

  /** The background attempt failed: direct H.264 stays; another after the backoff. */
  private attemptFailed(final: boolean): void {
    const attempt = this.attempt;
    if (!attempt) return;
    this.attempt = null;
    this.forget(attempt);
    attempt.client.stop();
    clearTimeout(this.handoverTimer);
    if (this.snapshot.handover) {
      const direct = this.client;
      this.update({
        ...this.snapshot,
        mode: 'direct_h264',
        handover: false,
        webrtc: null,
        track: null,
        state: direct?.getState() ?? 'connecting',
        info: direct?.kind === 'direct_h264' ? direct.getInfo() : EMPTY_STREAM_INFO,
      });
    }
    if (final) this.update({ ...this.snapshot, retrying: false });
    else this.scheduleAttempt();
  }

  private forget(attempt: Attempt): void {
    attempt.offs.forEach((off) => off());
    attempt.offs = [];
    clearTimeout(attempt.timer);
  }

  // --- teardown -----------------------------------------------------------------------------

  private retryMinMs(): number {
    return this.options.retryMinMs ?? WEBRTC_RETRY_MIN_MS;
  }

  private dropShown(): void {
    this.shown += 1;
    clearTimeout(this.fallbackTimer);
    this.fallbackTimer = undefined;
    clearTimeout(this.retryTimer);
    this.unsubscribeClient?.();
    this.unsubscribeClient = null;
    const client = this.client;
    this.client = null;
    client?.stop();
  }

  private dropAll(): void {
    this.dropShown();
    clearTimeout(this.attemptTimer);
    clearTimeout(this.handoverTimer);
    const attempt = this.attempt;
    this.attempt = null;
    if (attempt) {
      this.forget(attempt);
      attempt.client.stop();
    }
  }

  private update(snapshot: VideoSnapshot): void {
    this.snapshot = snapshot;
    for (const listener of [...this.listeners]) listener();
  }
}

/**
 * Which video client runs, and the WebRTC → direct H.264 fallback (architecture.md "Beyond the
 * peers": WebRTC blocked? The console falls back to direct H.264 by itself, and says so). A
 * plain class; React subscribes through useSyncExternalStore.
 *
 * - start(mode) runs the client of the `video_mode` setting; a new mode switches live.
 * - WebRTC that shows no frame within 4 s (or cannot run at all in this browser) is replaced by
 *   direct H.264, `fallback` says so, and the stored setting is left as it is. While the
 *   streamer reports its source offline there is no picture to wait for: the 4 s start over.
 *   Once WebRTC has shown a frame, a later outage is left to its own retries.
 * - Each client retries by itself (SPEC 4); the controller only picks and reports.
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

/** How long WebRTC has for its first frame before the console falls back. */
export const WEBRTC_FALLBACK_MS = 4_000;
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
>;
export type DirectClient = Pick<
  H264DirectStream,
  'kind' | 'start' | 'stop' | 'getState' | 'getInfo' | 'getSize' | 'on' | 'attachCanvas'
> & { readonly framesDrawn: number };

export interface VideoSnapshot {
  /** What the `video_mode` setting asks for; null while nothing runs. */
  requestedMode: VideoMode | null;
  /** What runs: the requested mode, or direct_h264 after the fallback. */
  mode: VideoMode | null;
  /** WebRTC did not work and direct H.264 runs instead. */
  fallback: boolean;
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
}

const IDLE: VideoSnapshot = {
  requestedMode: null,
  mode: null,
  fallback: false,
  unsupported: false,
  state: 'idle',
  info: EMPTY_STREAM_INFO,
  track: null,
  webrtc: null,
  direct: null,
};

export class VideoController {
  private readonly options: VideoControllerOptions;
  private snapshot: VideoSnapshot = IDLE;
  private readonly listeners = new Set<() => void>();
  private readonly messages = new Emitter<{ message: StreamMessage }>();
  private generation = 0;
  private client: WebRtcClient | DirectClient | null = null;
  private unsubscribeClient: (() => void) | null = null;
  private fallbackTimer: ReturnType<typeof setTimeout> | undefined;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(options: VideoControllerOptions) {
    this.options = options;
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
    this.dropClient();
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

  private run(requestedMode: VideoMode, mode: VideoMode, fallback: boolean): void {
    this.generation += 1;
    const gen = this.generation;
    this.dropClient();
    this.update({
      ...IDLE,
      requestedMode,
      mode,
      fallback,
      state: 'connecting',
    });
    const create = mode === 'webrtc' ? this.options.createWebRtc : this.options.createDirect;
    create().then(
      (client) => {
        if (gen !== this.generation) return;
        this.adopt(gen, client);
      },
      () => {
        if (gen !== this.generation) return;
        // The client's chunk did not load (offline): try again.
        this.update({ ...this.snapshot, state: 'error' });
        this.retryTimer = setTimeout(() => {
          if (gen === this.generation) this.run(requestedMode, mode, fallback);
        }, CLIENT_LOAD_RETRY_MS);
      },
    );
  }

  private adopt(gen: number, client: WebRtcClient | DirectClient): void {
    this.client = client;
    const base: StreamClient = client;
    const offs: Array<() => void> = [
      base.on('state', (state) => {
        if (gen !== this.generation) return;
        // WebRTC works here: a later outage is for its own retries, not for the fallback.
        if (state === 'active') clearTimeout(this.fallbackTimer);
        this.update({ ...this.snapshot, state });
      }),
      base.on('info', (info) => {
        if (gen === this.generation) this.update({ ...this.snapshot, info });
      }),
      base.on('message', (message) => {
        if (gen === this.generation) this.messages.emit('message', message);
      }),
      base.on('fatal', () => {
        if (gen !== this.generation) return;
        if (client.kind === 'webrtc') this.fallBack(gen);
        else this.update({ ...this.snapshot, unsupported: true });
      }),
    ];
    if (client.kind === 'webrtc') {
      offs.push(
        client.on('track', (track) => {
          if (gen === this.generation) this.update({ ...this.snapshot, track });
        }),
      );
      this.update({ ...this.snapshot, webrtc: client, track: client.getTrack() });
      this.armFallback(gen);
    } else {
      this.update({ ...this.snapshot, direct: client });
    }
    this.unsubscribeClient = () => offs.forEach((off) => off());
    client.start();
    if (gen === this.generation) {
      this.update({ ...this.snapshot, state: client.getState(), info: client.getInfo() });
    }
  }

  private armFallback(gen: number): void {
    clearTimeout(this.fallbackTimer);
    this.fallbackTimer = setTimeout(() => {
      if (gen !== this.generation || this.client?.kind !== 'webrtc') return;
      if (this.client.getState() === 'active') return;
      // No picture from the source either: nothing WebRTC could have shown yet. Wait again.
      if (this.options.isSourceOnline?.() === false) this.armFallback(gen);
      else this.fallBack(gen);
    }, this.options.fallbackMs ?? WEBRTC_FALLBACK_MS);
  }

  private fallBack(gen: number): void {
    if (gen !== this.generation || this.snapshot.mode !== 'webrtc') return;
    const requestedMode = this.snapshot.requestedMode ?? 'webrtc';
    this.run(requestedMode, 'direct_h264', true);
  }

  private dropClient(): void {
    clearTimeout(this.fallbackTimer);
    clearTimeout(this.retryTimer);
    this.unsubscribeClient?.();
    this.unsubscribeClient = null;
    const client = this.client;
    this.client = null;
    client?.stop();
  }

  private update(snapshot: VideoSnapshot): void {
    this.snapshot = snapshot;
    for (const listener of [...this.listeners]) listener();
  }
}

/**
 * Direct H.264 over `/api/media/ws` (wire-protocol.md 4), decoded in the browser with WebCodecs
 * and drawn on a canvas. A plain class with a state machine and typed events; React subscribes.
 *
 *   idle/stopped/error ──start()──▶ connecting ──media hello, start sent──▶ watching
 *   ──first frame decoded──▶ active ──socket closed / 5 pongs missed──▶ error ──1 s──▶ connecting
 *
 * The media path itself (socket, decoder, canvas: h264-direct-pipeline.ts) runs in a Worker
 * with the canvas's OffscreenCanvas, so decoding and drawing never hold up the page's main
 * thread, where keyboard and mouse are captured (issue 10: input p99). Without Worker or
 * OffscreenCanvas it runs here on the main thread, as before.
 */
import { socketUrl } from './base';
import type { WebSocketFactory } from './event-socket';
import { Emitter } from './emitter';
import { addCounters, emptyCounters, type DirectCounters } from './h264-direct-counters';
import { webCodecsSupported, type DecoderFactory } from './h264-direct-decoder';
import { DirectPipeline, globalAnimationFrame, type PipelineEvent } from './h264-direct-pipeline';
import type { CanvasLike } from './h264-direct-presenter';
import type { FromWorker, ToWorker } from './h264-direct-worker-host';
import type { StreamClient, StreamClientEvents, StreamInfo, StreamState } from './stream-types';
import { checkTransition, type TransitionMap } from '@kvm/protocol/transitions';

// What the media path is made of (h264-direct-*.ts), importable from here as before.
export { KEY_REQUEST_MIN_MS, MAX_DECODE_QUEUE, MEDIA_INFO_MS } from './h264-direct-pipeline';
export {
  DEFAULT_PROFILE_LEVEL_ID,
  MEDIA_KEY_REQUEST,
  MEDIA_MAX_MISSED_PONGS,
  MEDIA_OP_VIDEO,
  MEDIA_PING,
  MEDIA_PING_MS,
  MEDIA_PONG,
  h264Codec,
  parseMediaFrame,
} from './h264-direct-wire';
export type { MediaFrame } from './h264-direct-wire';
export { createWebCodecsDecoder, webCodecsSupported } from './h264-direct-decoder';
export type {
  DecoderFactory,
  EncodedChunkInit,
  VideoDecoderLike,
  VideoFrameLike,
} from './h264-direct-decoder';
export type { DirectCounters, DropReason } from './h264-direct-counters';
export type { CanvasLike } from './h264-direct-presenter';

export const MEDIA_RECONNECT_MS = 1_000;

/**
 * Who may follow whom (noVNC's `_updateConnectionState`). `attached` is Janus's alone. Video
 * frames count only after the hello, so `active` is reached through `watching`.
 */
export const H264_DIRECT_TRANSITIONS: TransitionMap<StreamState> = {
  idle: ['connecting', 'error', 'stopped'],
  connecting: ['watching', 'error', 'stopped'],
  attached: [],
  watching: ['active', 'error', 'stopped'],
  active: ['error', 'stopped'],
  error: ['connecting', 'stopped'],
  stopped: ['connecting', 'error'],
};

export function mediaSocketUrl(
  location: { protocol: string; host: string },
  token: string | null,
): string {
  const query = token ? `?auth_token=${encodeURIComponent(token)}` : '';
  return socketUrl(location, `/api/media/ws${query}`);
}

export interface H264DirectEvents extends StreamClientEvents {
  /** The decoded picture size changed. */
  resize: { width: number; height: number };
  /** A frame was drawn: its capture time (device epoch ms) and when (epoch ms, this browser). */
  latency: { capturedAt: number; shownAt: number; liveFrom: number };
  /**
   * The canvas attached now shows a picture: its first frame was drawn, or the picture of the
   * canvas it replaced was copied onto it (the first frame preview's hand-over to the view).
   */
  painted: { canvas: CanvasLike };
}

/** A <canvas> whose drawing can move to a worker (HTMLCanvasElement; tests pass a fake). */
export interface TransferableCanvasLike {
  readonly isConnected: boolean;
  transferControlToOffscreen(): unknown;
}

/** The parts of a Worker used here (tests pass one that runs the host in-process). */
export interface DirectWorkerLike {
  postMessage(message: ToWorker, transfer?: Transferable[]): void;
  addEventListener(type: 'message', listener: (event: { data: FromWorker }) => void): void;
  addEventListener(type: 'error', listener: () => void): void;
}

export interface H264DirectOptions {
  /** Evaluated on every (re)connect. */
  url: () => string;
  /** Main-thread path only (a worker opens its own sockets). */
  createSocket?: WebSocketFactory;
  /** Main-thread path only. */
  createDecoder?: DecoderFactory;
  isSupported?: () => boolean;
  /** ms, monotonic. */
  now?: () => number;
  requestFrame?: (callback: (time?: number) => void) => number;
  cancelFrame?: (id: number) => void;
  /**
   * The worker the pipeline runs in; null: the main thread. By default the page's shared one
   * where Worker and OffscreenCanvas exist and no socket or decoder factory was given.
   */
  worker?: DirectWorkerClient | null;
}

/** The worker's script failed to load or threw: it cannot show video. */
interface WorkerFailed {
  type: 'worker_failed';
}

/** One pipeline session, here or in the worker. */
interface PipelineLink {
  connect(conn: number, url: string): void;
  disconnect(): void;
  /** `seq` names the attachment in the `painted` events about it. */
  attachCanvas(canvas: CanvasLike | null, seq: number): void;
  /** Lets go of the canvases that left the page (the worker's copies of them). */
  releaseGone(): void;
  requestKeyFrame(): void;
  /** Asks for a counters report now, answering `ask` (here: reported before this returns). */
  reportCounters(ask: number): void;
  close(): void;
}

// --- the shared worker ---------------------------------------------------------------------

/**
 * The page's one direct H.264 worker, shared by every stream it makes: a <canvas> handed to a
 * worker stays there, and the console keeps its <canvas> across streams (a reconnect makes a
 * new stream for the same element).
 */
export class DirectWorkerClient {
  private readonly handlers = new Map<number, (event: PipelineEvent | WorkerFailed) => void>();
  /** The worker's script failed (did not load, or threw): nothing it was asked will happen. */
  failed = false;
  private readonly canvasIds = new Map<TransferableCanvasLike, number>();
  private nextSid = 1;
  private nextCanvasId = 1;

  constructor(private readonly worker: DirectWorkerLike) {
    worker.addEventListener('message', ({ data }) => {
      if ('closed' in data) this.handlers.delete(data.sid);
      else this.handlers.get(data.sid)?.(data.event);
    });
    worker.addEventListener('error', () => {
      this.failed = true;
      for (const handler of [...this.handlers.values()]) handler({ type: 'worker_failed' });
    });
  }

  open(handler: (event: PipelineEvent | WorkerFailed) => void): PipelineLink {
    const sid = this.nextSid++;
    this.handlers.set(sid, handler);
    const post = (message: ToWorker, transfer?: Transferable[]): void =>
      transfer ? this.worker.postMessage(message, transfer) : this.worker.postMessage(message);
    return {
      connect: (conn, url) => post({ op: 'connect', sid, conn, url }),
      disconnect: () => post({ op: 'disconnect', sid }),
      attachCanvas: (canvas, seq) => {
        if (canvas === null) {
          post({ op: 'canvas', sid, canvasId: null, seq });
          this.releaseGone(null);
          return;
        }
        const element = canvas as unknown as Partial<TransferableCanvasLike>;
        if (typeof element.transferControlToOffscreen !== 'function') {
          // Nothing a worker can draw on: frames are counted as not shown.
          post({ op: 'canvas', sid, canvasId: null, seq });
          return;
        }
        let canvasId = this.canvasIds.get(element as TransferableCanvasLike);
        if (canvasId !== undefined) {
          post({ op: 'canvas', sid, canvasId, seq });
        } else {
          canvasId = this.nextCanvasId++;
          this.canvasIds.set(element as TransferableCanvasLike, canvasId);
          const offscreen = element.transferControlToOffscreen();
          post({ op: 'canvas', sid, canvasId, seq, canvas: offscreen as CanvasLike }, [
            offscreen as Transferable,
          ]);
        }
        // after the attachment: the canvas it replaces may still give it its picture
        this.releaseGone(element as TransferableCanvasLike);
      },
      releaseGone: () => this.releaseGone(null),
      requestKeyFrame: () => post({ op: 'key', sid }),
      reportCounters: (ask) => post({ op: 'counters', sid, ask }),
      close: () => post({ op: 'close', sid }),
    };
  }

  /** The worker forgets the OffscreenCanvas of every <canvas> that left the page. */
  private releaseGone(keep: TransferableCanvasLike | null): void {
    for (const [element, canvasId] of this.canvasIds) {
      if (element === keep || element.isConnected) continue;
      this.canvasIds.delete(element);
      this.worker.postMessage({ op: 'release', canvasId });
    }
  }
}

let shared: DirectWorkerClient | null | undefined;

/** The page's worker, made on first use; null where it cannot run (then: main thread). */
export function sharedDirectWorker(): DirectWorkerClient | null {
  if (shared !== undefined) return shared;
  shared = null;
  const canTransfer =
    typeof Worker === 'function' &&
    typeof OffscreenCanvas === 'function' &&
    typeof HTMLCanvasElement === 'function' &&
    typeof HTMLCanvasElement.prototype.transferControlToOffscreen === 'function';
  if (!canTransfer) return shared;
  try {
    const worker = new Worker(new URL('./h264-direct-worker.ts', import.meta.url), {
      type: 'module',
      name: 'h264-direct',
    });
    shared = new DirectWorkerClient(worker as DirectWorkerLike);
  } catch {
    // A content security policy without worker-src, say: the main thread it is.
  }
  return shared;
}

// --- the stream ----------------------------------------------------------------------------

export class H264DirectStream implements StreamClient {
  readonly kind = 'direct_h264' as const;

  private readonly options: H264DirectOptions;
  private readonly worker: DirectWorkerClient | null;
  private readonly emitter = new Emitter<H264DirectEvents>();
  private state: StreamState = 'idle';
  private link: PipelineLink | null = null;
  /** Names the current connection: events of older ones are void. */
  private conn = 0;
  private canvas: CanvasLike | null = null;
  /** Bumped by every attachCanvas: a `painted` event of an older attachment is void. */
  private canvasSeq = 0;
  private size = { width: 0, height: 0 };
  private info: StreamInfo = { bitrateKbps: 0, fps: 0, connection: null };
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  /** The newest counters of every session this stream ran (one per start()). */
  private readonly sessionCounters: DirectCounters[] = [];
  /** readCounters() calls waiting for the report they asked for, by request number. */
  private readonly counterWaiters = new Map<number, () => void>();
  private nextAsk = 1;

  constructor(options: H264DirectOptions) {
    this.options = options;
    const injected = options.createSocket !== undefined || options.createDecoder !== undefined;
    this.worker =
      options.worker !== undefined ? options.worker : injected ? null : sharedDirectWorker();
  }

  getState = (): StreamState => this.state;

  getInfo = (): StreamInfo => this.info;

  /** Size of the decoded picture; 0x0 until the first frame. */
  getSize = (): { width: number; height: number } => this.size;

  /** Whether decoding and drawing run in a worker (false: on the main thread). */
  get inWorker(): boolean {
    return this.worker !== null;
  }

  on<K extends keyof H264DirectEvents>(
    type: K,
    handler: (payload: H264DirectEvents[K]) => void,
  ): () => void {
    return this.emitter.on(type, handler);
  }

  start(): void {
    if (this.state !== 'idle' && this.state !== 'stopped' && this.state !== 'error') return;
    if (!(this.options.isSupported ?? webCodecsSupported)()) {
      this.setState('error');
      this.emitter.emit('fatal', 'unsupported');
      return;
    }
    if (this.worker?.failed) {
      this.setState('error');
      this.emitter.emit('fatal', 'unsupported');
      return;
    }
    performance.mark('kvm:direct:start'); // a part of the first frame (bench/ttff-probe.ts)
    if (!this.link) this.link = this.openLink();
    this.connect();
  }

  stop(): void {
    if (this.state === 'stopped') return;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.conn += 1;
    const link = this.link;
    this.link = null;
    link?.close();
    this.resetInfo();
    this.setState('stopped');
  }

  /** The canvas the newest frame is drawn on (null detaches). */
  attachCanvas(canvas: CanvasLike | null): void {
    this.canvas = canvas;
    this.canvasSeq += 1;
    this.link?.attachCanvas(canvas, this.canvasSeq);
  }

  /** The canvas attached now (attachCanvas), null: none. */
  get attachedCanvas(): CanvasLike | null {
    return this.canvas;
  }

  /** Lets go of what the worker keeps of the canvases that left the page. */
  releaseGoneCanvases(): void {
    this.link?.releaseGone();
  }

  /** Asks the server for a key frame (op 0x01), at most every 500 ms. */
  requestKeyFrame(): void {
    this.link?.requestKeyFrame();
  }

  /**
   * Frames received, decoded, presented and dropped since this stream was made. In the worker
   * they are reported at most every 100 ms while they change (and on every call, for the next
   * one): `readCounters()` waits for the exact figures.
   */
  counters(): DirectCounters {
    this.link?.reportCounters(0);
    return this.sessionCounters.reduce(addCounters, emptyCounters());
  }

  /** The exact counters, once the pipeline has reported them. */
  readCounters(): Promise<DirectCounters> {
    const link = this.link;
    if (!link) return Promise.resolve(this.counters());
    const ask = this.nextAsk++;
    return new Promise((resolve) => {
      this.counterWaiters.set(ask, () => resolve(this.counters()));
      link.reportCounters(ask);
    });
  }

  /** Frames decoded / drawn since this object was made (the console and the e2e read these). */
  get framesDecoded(): number {
    return this.counters().decoded;
  }

  get framesDrawn(): number {
    return this.counters().presented;
  }

  private openLink(): PipelineLink {
    const index = this.sessionCounters.length;
    this.sessionCounters.push(emptyCounters());
    const onEvent = (event: PipelineEvent | WorkerFailed): void => this.onPipeline(index, event);
    const link = this.worker ? this.worker.open(onEvent) : this.localLink(onEvent);
    if (this.canvas) link.attachCanvas(this.canvas, this.canvasSeq);
    return link;
  }

  private localLink(emit: (event: PipelineEvent) => void): PipelineLink {
    const { requestFrame, cancelFrame } = this.options;
    const pipeline = new DirectPipeline({
      emit,
      createSocket: this.options.createSocket,
      createDecoder: this.options.createDecoder,
      now: this.options.now,
      ...(requestFrame ? { requestFrame, cancelFrame } : globalAnimationFrame()),
    });
    return {
      connect: (conn, url) => pipeline.connect(conn, url),
      disconnect: () => pipeline.disconnect(),
      attachCanvas: (canvas, seq) => pipeline.attachCanvas(canvas, seq),
      releaseGone: () => undefined, // the page's own canvases: nothing held elsewhere
      requestKeyFrame: () => pipeline.requestKeyFrame(),
      reportCounters: (ask) => pipeline.flushCounters(ask),
      close: () => {
        pipeline.disconnect();
        pipeline.attachCanvas(null);
        pipeline.flushCounters(0);
      },
    };
  }

  private connect(): void {
    this.conn += 1;
    this.setState('connecting');
    this.link?.connect(this.conn, this.options.url());
  }

  private onPipeline(session: number, event: PipelineEvent | WorkerFailed): void {
    if (event.type === 'counters') {
      this.sessionCounters[session] = event.counters;
      const waiter = event.ask ? this.counterWaiters.get(event.ask) : undefined;
      if (event.ask) this.counterWaiters.delete(event.ask);
      waiter?.();
      return;
    }
    // What a stopped or replaced session still says is void (its counters are kept above).
    if (session !== this.sessionCounters.length - 1 || this.state === 'stopped') return;
    switch (event.type) {
      case 'hello':
        if (event.conn === this.conn && this.state === 'connecting') this.setState('watching');
        break;
      case 'active':
        if (event.conn === this.conn) this.setState('active');
        break;
      case 'lost':
        if (event.conn === this.conn) this.lost();
        break;
      case 'resize':
        this.size = { width: event.width, height: event.height };
        this.emitter.emit('resize', this.size);
        break;
      case 'info':
        this.info = event.info;
        this.emitter.emit('info', this.info);
        break;
      case 'latency':
        this.emitter.emit('latency', {
          capturedAt: event.capturedAt,
          shownAt: event.shownAt,
          liveFrom: event.liveFrom,
        });
        break;
      case 'painted':
        if (event.seq === this.canvasSeq && this.canvas)
          this.emitter.emit('painted', { canvas: this.canvas });
        break;
      case 'worker_failed':
        // Say so rather than wait in `connecting` for ever: the console shows its notice.
        this.stop();
        this.setState('error');
        this.emitter.emit('fatal', 'unsupported');
        break;
    }
  }

  /** The socket closed or stopped answering: a new one after 1 s. */
  private lost(): void {
    this.setState('error');
    const conn = this.conn;
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => {
      if (conn === this.conn && this.state === 'error') this.connect();
    }, MEDIA_RECONNECT_MS);
  }

  private resetInfo(): void {
    if (this.info.bitrateKbps === 0 && this.info.fps === 0 && this.info.connection === null) {
      return;
    }
    this.info = { bitrateKbps: 0, fps: 0, connection: null };
    this.emitter.emit('info', this.info);
  }

  private setState(state: StreamState): void {
    if (!checkTransition('H264DirectStream', H264_DIRECT_TRANSITIONS, this.state, state)) return;
    this.state = state;
    this.emitter.emit('state', state);
  }
}

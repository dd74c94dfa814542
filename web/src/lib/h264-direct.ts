/**
 * Direct H.264 over `/api/media/ws` (wire-protocol.md 4), decoded in the browser with WebCodecs
 * and drawn on a canvas. A plain class with a state machine and typed events; React subscribes.
 *
 *   idle/stopped/error ──start()──▶ connecting ──media event, start sent──▶ watching
 *   ──first frame decoded──▶ active ──socket closed / 5 pongs missed──▶ error ──1 s──▶ connecting
 *
 * Wire: the server sends `{"event_type":"media","event":{"video":{"h264":{"profile_level_id"}}}}`,
 * the client answers `{"event_type":"start","event":{"type":"video","format":"h264"}}`, then
 * binary frames `[0x01][key 0|1][Annex B access unit]` follow. The client pings with 0x00 every
 * second (answer 0xFF) and asks for a key frame with 0x01.
 *
 * Decoding: configured on a key frame (codec `avc1.<profile_level_id>`, no description: Annex
 * B), low-latency mode, strictly increasing timestamps. Delta frames before the first key frame
 * are dropped. Drawing: on every animation frame the newest decoded frame is drawn and closed;
 * a frame that a newer one overtakes is closed undrawn (never queue behind the remote screen).
 */
import { Emitter } from './emitter';
import type { WebSocketFactory, WebSocketLike } from './event-socket';
import type { StreamClient, StreamClientEvents, StreamInfo, StreamState } from './stream-types';

export const MEDIA_PING_MS = 1_000;
/** Reconnect after this many pings without a pong. */
export const MEDIA_MAX_MISSED_PONGS = 5;
export const MEDIA_RECONNECT_MS = 1_000;
export const MEDIA_INFO_MS = 1_000;
/** Constrained Baseline 3.1, what the server encodes when it does not say. */
export const DEFAULT_PROFILE_LEVEL_ID = '42E01F';
/** More undecoded chunks than this: the decoder cannot keep up; start over on a key frame. */
export const MAX_DECODE_QUEUE = 30;
/** Key frame requests are not repeated more often than this. */
export const KEY_REQUEST_MIN_MS = 500;

export const MEDIA_OP_VIDEO = 0x01;
export const MEDIA_PING = 0x00;
export const MEDIA_PONG = 0xff;
export const MEDIA_KEY_REQUEST = 0x01;

export type MediaFrame = { kind: 'video'; key: boolean; data: Uint8Array } | { kind: 'pong' };

/** One binary message of the media socket; null for anything not understood (ignored). */
export function parseMediaFrame(message: ArrayBuffer | Uint8Array): MediaFrame | null {
  const bytes = message instanceof Uint8Array ? message : new Uint8Array(message);
  if (bytes.length === 1 && bytes[0] === MEDIA_PONG) return { kind: 'pong' };
  if (bytes.length >= 3 && bytes[0] === MEDIA_OP_VIDEO) {
    return { kind: 'video', key: bytes[1] !== 0, data: bytes.subarray(2) };
  }
  return null;
}

/** The WebCodecs codec string for a profile-level-id such as 42E01F. */
export function h264Codec(profileLevelId: string | undefined): string {
  const id = /^[0-9a-f]{6}$/i.test(profileLevelId ?? '')
    ? profileLevelId!
    : DEFAULT_PROFILE_LEVEL_ID;
  return `avc1.${id.toLowerCase()}`;
}

/** The parts of VideoFrame used here. */
export interface VideoFrameLike {
  readonly displayWidth: number;
  readonly displayHeight: number;
  close(): void;
}

export interface EncodedChunkInit {
  type: 'key' | 'delta';
  /** microseconds */
  timestamp: number;
  data: Uint8Array;
}

/** The parts of VideoDecoder used here (tests pass a fake). */
export interface VideoDecoderLike {
  readonly state: CodecState;
  readonly decodeQueueSize: number;
  configure(config: { codec: string; optimizeForLatency: boolean }): void;
  decode(chunk: EncodedChunkInit): void;
  reset(): void;
  close(): void;
}

export type DecoderFactory = (
  output: (frame: VideoFrameLike) => void,
  error: (error: unknown) => void,
) => VideoDecoderLike;

/** WebCodecs needs a secure context (HTTPS or localhost). */
export function webCodecsSupported(): boolean {
  return typeof VideoDecoder === 'function' && typeof EncodedVideoChunk === 'function';
}

export const createWebCodecsDecoder: DecoderFactory = (output, error) => {
  const decoder = new VideoDecoder({ output, error: (e) => error(e) });
  return {
    get state() {
      return decoder.state;
    },
    get decodeQueueSize() {
      return decoder.decodeQueueSize;
    },
    configure: (config) => decoder.configure(config),
    decode: (chunk) => decoder.decode(new EncodedVideoChunk(chunk)),
    reset: () => decoder.reset(),
    close: () => decoder.close(),
  };
};

/** The parts of a canvas used here. */
export interface CanvasLike {
  width: number;
  height: number;
  getContext(type: '2d'): {
    drawImage(image: never, dx: number, dy: number, dw: number, dh: number): void;
  } | null;
}

export function mediaSocketUrl(
  location: { protocol: string; host: string },
  token: string | null,
): string {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const query = token ? `?auth_token=${encodeURIComponent(token)}` : '';
  return `${scheme}//${location.host}/api/media/ws${query}`;
}

export interface H264DirectEvents extends StreamClientEvents {
  /** The decoded picture size changed. */
  resize: { width: number; height: number };
}

export interface H264DirectOptions {
  /** Evaluated on every (re)connect. */
  url: () => string;
  createSocket?: WebSocketFactory;
  createDecoder?: DecoderFactory;
  isSupported?: () => boolean;
  /** ms, monotonic. */
  now?: () => number;
  requestFrame?: (callback: () => void) => number;
  cancelFrame?: (id: number) => void;
}

export class H264DirectStream implements StreamClient {
  readonly kind = 'direct_h264' as const;

  private readonly options: H264DirectOptions;
  private readonly now: () => number;
  private readonly emitter = new Emitter<H264DirectEvents>();
  private state: StreamState = 'idle';
  private generation = 0;
  private socket: WebSocketLike | null = null;
  private opened = false;
  private missedPongs = 0;
  private profileLevelId: string | undefined;
  private decoder: VideoDecoderLike | null = null;
  private configured = false;
  private lastTimestamp = 0;
  private lastKeyRequest = -Infinity;
  /** The newest decoded frame not drawn yet. */
  private pending: VideoFrameLike | null = null;
  private size = { width: 0, height: 0 };
  private canvas: CanvasLike | null = null;
  private frameRequest: number | null = null;
  private bytesSinceInfo = 0;
  private framesSinceInfo = 0;
  private infoAt = 0;
  private info: StreamInfo = { bitrateKbps: 0, fps: 0, connection: null };
  private pingTimer: ReturnType<typeof setInterval> | undefined;
  private infoTimer: ReturnType<typeof setInterval> | undefined;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  /** Frames decoded / drawn since this object was made (tests and the e2e read these). */
  framesDecoded = 0;
  framesDrawn = 0;

  constructor(options: H264DirectOptions) {
    this.options = options;
    this.now = options.now ?? (() => performance.now());
  }

  getState = (): StreamState => this.state;

  getInfo = (): StreamInfo => this.info;

  /** Size of the decoded picture; 0x0 until the first frame. */
  getSize = (): { width: number; height: number } => this.size;

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
    this.connect();
    this.scheduleDraw();
  }

  stop(): void {
    if (this.state === 'stopped') return;
    this.teardown();
    if (this.frameRequest !== null)
      (this.options.cancelFrame ?? cancelAnimationFrame)(this.frameRequest);
    this.frameRequest = null;
    this.setState('stopped');
  }

  /** The canvas the newest frame is drawn on (null detaches). */
  attachCanvas(canvas: CanvasLike | null): void {
    this.canvas = canvas;
  }

  /** Asks the server for a key frame (op 0x01), at most every 500 ms. */
  requestKeyFrame(): void {
    const now = this.now();
    if (now - this.lastKeyRequest < KEY_REQUEST_MIN_MS) return;
    if (this.sendBinary(MEDIA_KEY_REQUEST)) this.lastKeyRequest = now;
  }

  // --- socket ----------------------------------------------------------------------------

  private connect(): void {
    this.teardown();
    const gen = this.generation;
    this.setState('connecting');
    const create =
      this.options.createSocket ?? ((url: string) => new WebSocket(url) as WebSocketLike);
    const socket = create(this.options.url());
    socket.binaryType = 'arraybuffer';
    socket.onopen = () => {
      if (gen === this.generation) this.opened = true;
    };
    socket.onmessage = (event) => {
      if (gen === this.generation) this.receive(event.data);
    };
    socket.onclose = () => {
      if (gen === this.generation) this.lost();
    };
    socket.onerror = () => undefined; // Always followed by close.
    this.socket = socket;
    // The ping clock runs from the start: a socket that never opens counts as missed pongs too.
    this.pingTimer = setInterval(() => {
      if (gen === this.generation) this.pingTick();
    }, MEDIA_PING_MS);
    this.infoAt = this.now();
    this.infoTimer = setInterval(() => {
      if (gen === this.generation) this.infoTick();
    }, MEDIA_INFO_MS);
  }

  private pingTick(): void {
    if (this.missedPongs >= MEDIA_MAX_MISSED_PONGS) {
      this.lost();
      return;
    }
    this.missedPongs += 1;
    this.sendBinary(MEDIA_PING);
  }

  private sendBinary(op: number): boolean {
    if (!this.socket || !this.opened) return false;
    try {
      this.socket.send(new Uint8Array([op]));
      return true;
    } catch {
      return false;
    }
  }

  private receive(data: unknown): void {
    if (typeof data === 'string') {
      this.receiveText(data);
      return;
    }
    if (!(data instanceof ArrayBuffer)) return;
    const frame = parseMediaFrame(data);
    if (!frame) return;
    if (frame.kind === 'pong') {
      this.missedPongs = 0;
      return;
    }
    this.bytesSinceInfo += data.byteLength;
    this.decode(frame.key, frame.data);
  }

  private receiveText(text: string): void {
    let message: { event_type?: unknown; event?: unknown };
    try {
      message = JSON.parse(text) as typeof message;
    } catch {
      return;
    }
    if (message.event_type !== 'media') return;
    const event = message.event as { video?: { h264?: { profile_level_id?: unknown } } } | null;
    const id = event?.video?.h264?.profile_level_id;
    this.profileLevelId = typeof id === 'string' ? id : undefined;
    this.socket?.send(
      JSON.stringify({ event_type: 'start', event: { type: 'video', format: 'h264' } }),
    );
    if (this.state === 'connecting') this.setState('watching');
  }

  /** The socket closed or stopped answering: a new one after 1 s. */
  private lost(): void {
    this.teardown();
    this.setState('error');
    const gen = this.generation;
    this.retryTimer = setTimeout(() => {
      if (gen === this.generation) this.connect();
    }, MEDIA_RECONNECT_MS);
  }

  private teardown(): void {
    this.generation += 1;
    clearInterval(this.pingTimer);
    clearInterval(this.infoTimer);
    clearTimeout(this.retryTimer);
    this.pingTimer = this.infoTimer = this.retryTimer = undefined;
    const socket = this.socket;
    this.socket = null;
    this.opened = false;
    this.missedPongs = 0;
    if (socket) {
      socket.onopen = null;
      socket.onmessage = null;
      socket.onclose = null;
      socket.onerror = null;
      try {
        socket.close();
      } catch {
        // Closing a socket that never opened may throw in some engines.
      }
    }
    this.closeDecoder();
    this.pending?.close();
    this.pending = null;
    this.bytesSinceInfo = 0;
    this.framesSinceInfo = 0;
    if (this.info.bitrateKbps !== 0 || this.info.fps !== 0 || this.info.connection !== null) {
      this.info = { bitrateKbps: 0, fps: 0, connection: null };
      this.emitter.emit('info', this.info);
    }
  }

  // --- decoding --------------------------------------------------------------------------

  private decode(key: boolean, data: Uint8Array): void {
    if (!this.decoder || this.decoder.state === 'closed') {
      const gen = this.generation;
      this.configured = false;
      this.decoder = (this.options.createDecoder ?? createWebCodecsDecoder)(
        (frame) => this.output(gen, frame),
        () => this.decoderFailed(gen),
      );
    }
    const decoder = this.decoder;
    if (!this.configured) {
      if (!key) {
        this.requestKeyFrame(); // A delta frame cannot start a picture.
        return;
      }
      try {
        decoder.configure({ codec: h264Codec(this.profileLevelId), optimizeForLatency: true });
      } catch {
        this.decoderFailed(this.generation);
        return;
      }
      this.configured = true;
    } else if (decoder.decodeQueueSize > MAX_DECODE_QUEUE) {
      // Behind by more than a second: drop what is queued and start again on a key frame.
      try {
        decoder.reset();
      } catch {
        // Closed meanwhile: a new decoder comes with the next frame.
      }
      this.configured = false;
      this.requestKeyFrame();
      if (!key) return;
      decoder.configure({ codec: h264Codec(this.profileLevelId), optimizeForLatency: true });
      this.configured = true;
    }
    // Strictly increasing, in microseconds (the decoder wants no duplicates).
    this.lastTimestamp = Math.max(this.lastTimestamp + 1, Math.round(this.now() * 1000));
    try {
      decoder.decode({ type: key ? 'key' : 'delta', timestamp: this.lastTimestamp, data });
    } catch {
      this.decoderFailed(this.generation);
    }
  }

  private output(gen: number, frame: VideoFrameLike): void {
    if (gen !== this.generation) {
      frame.close();
      return;
    }
    // Never queue: a newer frame replaces one not drawn yet.
    this.pending?.close();
    this.pending = frame;
    this.framesDecoded += 1;
    this.framesSinceInfo += 1;
    if (frame.displayWidth !== this.size.width || frame.displayHeight !== this.size.height) {
      this.size = { width: frame.displayWidth, height: frame.displayHeight };
      this.emitter.emit('resize', this.size);
    }
    if (this.state !== 'active') {
      this.setState('active');
      this.info = { ...this.info, connection: 'direct' };
      this.emitter.emit('info', this.info);
    }
  }

  /** The decoder closed itself on an error: a new one starts at the next key frame. */
  private decoderFailed(gen: number): void {
    if (gen !== this.generation) return;
    this.closeDecoder();
    this.requestKeyFrame();
  }

  private closeDecoder(): void {
    const decoder = this.decoder;
    this.decoder = null;
    this.configured = false;
    if (decoder && decoder.state !== 'closed') {
      try {
        decoder.close();
      } catch {
        // Already closed.
      }
    }
  }

  // --- drawing and info ------------------------------------------------------------------

  private scheduleDraw(): void {
    if (this.frameRequest !== null) return;
    const request = this.options.requestFrame ?? ((cb: () => void) => requestAnimationFrame(cb));
    this.frameRequest = request(() => {
      this.frameRequest = null;
      if (this.state === 'stopped') return;
      this.draw();
      this.scheduleDraw();
    });
  }

  private draw(): void {
    const frame = this.pending;
    const canvas = this.canvas;
    if (!frame || !canvas) return;
    this.pending = null;
    try {
      if (canvas.width !== frame.displayWidth) canvas.width = frame.displayWidth;
      if (canvas.height !== frame.displayHeight) canvas.height = frame.displayHeight;
      canvas.getContext('2d')?.drawImage(frame as never, 0, 0, canvas.width, canvas.height);
      this.framesDrawn += 1;
    } finally {
      frame.close();
    }
  }

  private infoTick(): void {
    const now = this.now();
    const elapsed = now - this.infoAt;
    this.infoAt = now;
    if (elapsed <= 0) return;
    this.info = {
      bitrateKbps: Math.round((this.bytesSinceInfo * 8) / elapsed),
      fps: Math.round((this.framesSinceInfo * 1000) / elapsed),
      connection: this.state === 'active' ? 'direct' : null,
    };
    this.bytesSinceInfo = 0;
    this.framesSinceInfo = 0;
    this.emitter.emit('info', this.info);
  }

  private setState(state: StreamState): void {
    if (this.state === state) return;
    this.state = state;
    this.emitter.emit('state', state);
  }
}

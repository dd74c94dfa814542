/**
 * The media path of direct H.264 (wire-protocol.md 4): the `/api/media/ws` socket, the WebCodecs
 * decoder and the canvas it draws on. No state machine and no timers of its own beyond the
 * socket's ping and the info tick: `H264DirectStream` decides when to connect and what a lost
 * socket means. It runs in a Worker (with an OffscreenCanvas, so no frame ever touches the
 * page's main thread, where input is captured) or, where Workers or OffscreenCanvas are
 * missing, on the main thread. No DOM types: both places must be able to load it. Beside it:
 * the wire (h264-direct-wire.ts), the WebCodecs decoder (h264-direct-decoder.ts), the drawing
 * on animation frames (h264-direct-presenter.ts) and the counters (h264-direct-counters.ts).
 *
 * Wire: the server sends `{"event_type":"media","event":{"video":{"h264":{"profile_level_id"}}}}`,
 * the client answers `{"event_type":"start","event":{"type":"video","format":"h264"}}`, then
 * binary frames `[0x01][key 0|1][Annex B access unit]` follow. The client pings with 0x00 every
 * second (answer 0xFF) and asks for a key frame with 0x01.
 *
 * Decoding: configured at the media hello (codec `avc1.<profile_level_id>`, no description:
 * Annex B), so the decoder starts up while the first key frame is on its way; again on the next
 * key frame after a reset; low-latency mode, strictly increasing timestamps. Delta frames before
 * the first key frame after a configure are dropped. Drawing: on every animation frame the
 * newest decoded frame is drawn and closed; a frame that a newer one overtakes is closed undrawn
 * (never queue behind the remote screen).
 *
 * Counters (for the honest video bench): every video frame received is, in the end, either
 * presented or dropped for one reason; `received - presented - dropped` are in flight (in the
 * decoder or waiting for the next animation frame).
 */
import { emptyCounters, type DirectCounters, type DropReason } from './h264-direct-counters';
import {
  createWebCodecsDecoder,
  type DecoderFactory,
  type VideoDecoderLike,
  type VideoFrameLike,
} from './h264-direct-decoder';
import { FramePresenter, type CanvasLike } from './h264-direct-presenter';
import {
  MEDIA_KEY_REQUEST,
  MEDIA_MAX_MISSED_PONGS,
  MEDIA_PING,
  MEDIA_PING_MS,
  h264Codec,
  parseMediaFrame,
  type MediaSocketLike,
} from './h264-direct-wire';
import type { StreamInfo } from './stream-types';

export const MEDIA_INFO_MS = 1_000;
/** More undecoded chunks than this: the decoder cannot keep up; start over on a key frame. */
export const MAX_DECODE_QUEUE = 30;
/**
 * The same bound until the decoder's first picture since it was configured, and on until it
 * has worked its queue down to MAX_DECODE_QUEUE (CATCH_UP_MS at most). A viewer's start is a burst: the server sends
 * its cached GOP at once (up to 512 units, media/gop-cache.ts), and again when the page asks for
 * a key frame, while the decoder is still being set up (20 ms here, more on a busy machine).
 * Counted against MAX_DECODE_QUEUE, that burst reset the new decoder and the first picture
 * waited for another key frame: 280-650 ms more in `npm run bench -- video --ttff` on a slower
 * machine; and the burst's rest, still queued behind the first picture, could reset it again,
 * each reset asking for the GOP once more.
 */
export const MAX_DECODE_QUEUE_STARTING = 600;
/**
 * The most a start lasts after its first picture: a decoder still more than MAX_DECODE_QUEUE
 * behind then does not catch up (it decodes no faster than the frames come) and starts over
 * like any other that fell behind, rather than keeping the burst as a lasting delay.
 */
export const CATCH_UP_MS = 1_000;
/** Key frame requests are not repeated more often than this. */
export const KEY_REQUEST_MIN_MS = 500;
/** Counters are reported at most this often while they change (data-frames reads them). */
export const COUNTERS_REPORT_MS = 100;

/**
 * What the pipeline reports. `conn` names the connection an event belongs to (the stream drops
 * events of connections it has given up on).
 */
export type PipelineEvent =
  /** the server's media hello arrived and `start` was sent */
  | { type: 'hello'; conn: number }
  /** the first frame of this connection was decoded */
  | { type: 'active'; conn: number }
  /** the socket closed or stopped answering pings; the pipeline has let go of it */
  | { type: 'lost'; conn: number }
  | { type: 'resize'; width: number; height: number }
  | { type: 'info'; info: StreamInfo }
  /** `ask` answers the report asked for with that number (see flushCounters) */
  | { type: 'counters'; counters: DirectCounters; ask?: number }
  /**
   * a frame drawn: its capture time (device epoch ms), when it was drawn (epoch ms here), and
   * when this viewer last started or asked for a key frame (epoch ms here): the server answers
   * both with its cached GOP, frames captured before then (seconds before, on a still screen)
   */
  | { type: 'latency'; capturedAt: number; shownAt: number; liveFrom: number }
  /** the canvas attached as `seq` shows a picture now (FramePresenter's `painted`) */
  | { type: 'painted'; seq: number };

export interface PipelineOptions {
  emit: (event: PipelineEvent) => void;
  createSocket?: (url: string) => MediaSocketLike;
  createDecoder?: DecoderFactory;
  /** ms, monotonic. */
  now?: () => number;
  /** Without it, each frame is drawn as it is decoded. */
  requestFrame?: ((callback: (time?: number) => void) => number) | null;
  cancelFrame?: (id: number) => void;
}

const NO_INFO: StreamInfo = { bitrateKbps: 0, fps: 0, connection: null };

/** The animation-frame scheduler of this global scope (Window or DedicatedWorkerGlobalScope). */
export function globalAnimationFrame(): Pick<PipelineOptions, 'requestFrame' | 'cancelFrame'> {
  const scope = globalThis as {
    requestAnimationFrame?: (cb: (time: number) => void) => number;
    cancelAnimationFrame?: (id: number) => void;
  };
  if (typeof scope.requestAnimationFrame !== 'function') return { requestFrame: null };
  return {
    requestFrame: (cb) => scope.requestAnimationFrame!(cb),
    cancelFrame: (id) => scope.cancelAnimationFrame?.(id),
  };
}

/** Epoch ms on the clock the presented frames are dated by (performance's, as shownAt). */
function epochNow(): number {
  return performance.timeOrigin + performance.now();
}

export class DirectPipeline {
  private readonly options: PipelineOptions;
  private readonly now: () => number;
  private readonly presenter: FramePresenter;
  private conn = 0;
  /** Bumped on every connect and disconnect: callbacks of older sockets and decoders are void. */
  private generation = 0;
  private connected = false;
  private socket: MediaSocketLike | null = null;
  private opened = false;
  private started = false;
  private shown = false;
  private missedPongs = 0;
  private profileLevelId: string | undefined;
  private decoder: VideoDecoderLike | null = null;
  private configured = false;
  /** Configured, and no key frame decoded since: a delta frame cannot start a picture. */
  private awaitingKey = false;
  /** Chunks handed to the current decoder and not come out of it yet. */
  private inDecoder = 0;
  /**
   * The decoder gave a picture since it was last configured and has worked its queue down to
   * MAX_DECODE_QUEUE: its start's burst is over.
   */
  private decoding = false;
  /** When the decoder gave its first picture since it was last configured (ms, now()). */
  private firstPictureAt: number | null = null;
  /** Names the current decoder: callbacks of a closed one are void. */
  private decoderToken = 0;
  private lastTimestamp = 0;
  /** Chunk timestamp (us) -> capture time (device epoch ms) of the frames in the decoder. */
  private readonly captureOf = new Map<number, number>();
  private lastKeyRequest = -Infinity;
  /** Epoch ms here of the start or the last key request sent (see the 'latency' event). */
  private liveFrom = 0;
  /** The attachment the current canvas came with (attachCanvas). */
  private canvasSeq = 0;
  private size = { width: 0, height: 0 };
  private bytesSinceInfo = 0;
  private framesSinceInfo = 0;
  private infoAt = 0;
  private info: StreamInfo = NO_INFO;
  private readonly count = emptyCounters();
  private countersChanged = false;
  private countersAt = -Infinity;
  private pingTimer: ReturnType<typeof setInterval> | undefined;
  private infoTimer: ReturnType<typeof setInterval> | undefined;

  constructor(options: PipelineOptions) {
    this.options = options;
    this.now = options.now ?? (() => performance.now());
    this.presenter = new FramePresenter({
      requestFrame: options.requestFrame === undefined ? null : options.requestFrame,
      cancelFrame: options.cancelFrame,
      running: () => this.connected,
      drawn: (presented, timestamp, time) => this.drawn(presented, timestamp, time),
      painted: () => this.options.emit({ type: 'painted', seq: this.canvasSeq }),
    });
  }

  /** Opens a new socket (dropping the current one); its events carry `conn`. */
  connect(conn: number, url: string): void {
    this.disconnect();
    this.conn = conn;
    this.connected = true;
    const gen = this.generation;
    const socket = (this.options.createSocket ?? ((u: string) => new WebSocket(u)))(url);
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
    this.presenter.schedule();
  }

  /** Closes the socket and the decoder; nothing is reported for this connection any more. */
  disconnect(): void {
    this.generation += 1;
    this.connected = false;
    clearInterval(this.pingTimer);
    clearInterval(this.infoTimer);
    this.pingTimer = this.infoTimer = undefined;
    this.presenter.cancel();
    const socket = this.socket;
    this.socket = null;
    this.opened = false;
    this.started = false;
    this.shown = false;
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
    if (this.presenter.discard()) this.drop('not_shown');
    this.bytesSinceInfo = 0;
    this.framesSinceInfo = 0;
    this.setInfo(NO_INFO);
    this.flushCounters();
  }

  /**
   * The canvas the newest frame is drawn on (null detaches); `seq` names this attachment in
   * the `painted` events about it.
   */
  attachCanvas(canvas: CanvasLike | null, seq = 0): void {
    this.canvasSeq = seq;
    this.presenter.attach(canvas);
  }

  /** A canvas that left the page (the worker released it): no picture is copied from it. */
  forgetCanvas(canvas: CanvasLike): void {
    this.presenter.forget(canvas);
  }

  /** Asks the server for a key frame (op 0x01), at most every 500 ms. */
  requestKeyFrame(): void {
    const now = this.now();
    if (now - this.lastKeyRequest < KEY_REQUEST_MIN_MS) return;
    if (this.sendBinary(MEDIA_KEY_REQUEST)) {
      this.lastKeyRequest = now;
      this.liveFrom = epochNow();
    }
  }

  counters(): DirectCounters {
    return { ...this.count, droppedBy: { ...this.count.droppedBy } };
  }

  /**
   * Reports the counters now if they changed since the last report; always when asked for
   * (`ask` names the request the report answers).
   */
  flushCounters(ask?: number): void {
    if (!this.countersChanged && ask === undefined) return;
    this.countersChanged = false;
    this.countersAt = this.now();
    this.options.emit({ type: 'counters', counters: this.counters(), ask });
  }

  // --- socket ----------------------------------------------------------------------------

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
    this.count.received += 1;
    this.countersChanged = true;
    this.bytesSinceInfo += data.byteLength;
    // SPEC: binary frames follow the start; one before it has no codec to go with.
    if (!this.started) this.drop('before_start');
    else this.decode(frame.key, frame.data, frame.capturedAt);
    if (this.now() - this.countersAt >= COUNTERS_REPORT_MS) this.flushCounters();
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
      // capture_time: frames come as op 0x02 with their capture time (the latency readout)
      JSON.stringify({
        event_type: 'start',
        event: { type: 'video', format: 'h264', capture_time: true },
      }),
    );
    this.started = true;
    this.liveFrom = epochNow();
    this.options.emit({ type: 'hello', conn: this.conn });
    // The decoder starts up while the first key frame is on its way (its first output came
    // 150-300 ms after the first chunk when configured on it, on a busy 2-core machine).
    const decoder = this.ensureDecoder();
    if (!this.configured) this.configure(decoder);
  }

  /** The socket closed or stopped answering: let go of it and say so. */
  private lost(): void {
    const conn = this.conn;
    this.disconnect();
    this.options.emit({ type: 'lost', conn });
  }

  // --- decoding --------------------------------------------------------------------------

  private drop(reason: DropReason, n = 1): void {
    if (n <= 0) return;
    this.count.dropped += n;
    this.count.droppedBy[reason] += n;
    this.countersChanged = true;
  }

  /** Configures the decoder; its next chunk must be a key frame. */
  private configure(decoder: VideoDecoderLike): boolean {
    try {
      decoder.configure({ codec: h264Codec(this.profileLevelId), optimizeForLatency: true });
    } catch {
      this.decoderFailed(this.decoderToken);
      return false;
    }
    this.configured = true;
    this.awaitingKey = true;
    this.decoding = false;
    this.firstPictureAt = null;
    return true;
  }

  /** The current decoder, a new one when there is none or it closed itself. */
  private ensureDecoder(): VideoDecoderLike {
    if (!this.decoder || this.decoder.state === 'closed') {
      this.closeDecoder();
      const token = this.decoderToken;
      this.decoder = (this.options.createDecoder ?? createWebCodecsDecoder)(
        (frame) => this.output(token, frame),
        () => this.decoderFailed(token),
      );
    }
    return this.decoder;
  }

  private decode(key: boolean, data: Uint8Array, capturedAt?: number): void {
    const decoder = this.ensureDecoder();
    if (!this.configured || this.awaitingKey) {
      if (!key) {
        this.drop('before_key');
        this.requestKeyFrame(); // A delta frame cannot start a picture.
        return;
      }
      if (!this.configured && !this.configure(decoder)) {
        this.drop('decoder');
        return;
      }
    } else if (
      decoder.decodeQueueSize > (this.decoding ? MAX_DECODE_QUEUE : MAX_DECODE_QUEUE_STARTING)
    ) {
      // Behind by more than a second: drop what is queued and start again on a key frame.
      try {
        decoder.reset();
      } catch {
        // Closed meanwhile: a new decoder comes with the next frame.
      }
      this.drop('decoder', this.inDecoder);
      this.inDecoder = 0;
      this.configured = false;
      this.requestKeyFrame();
      if (!key) {
        this.drop('before_key');
        return;
      }
      if (!this.configure(decoder)) {
        this.drop('decoder');
        return;
      }
    }
    // Strictly increasing, in microseconds (the decoder wants no duplicates).
    this.lastTimestamp = Math.max(this.lastTimestamp + 1, Math.round(this.now() * 1000));
    if (key) this.awaitingKey = false;
    try {
      decoder.decode({ type: key ? 'key' : 'delta', timestamp: this.lastTimestamp, data });
      this.inDecoder += 1;
      if (capturedAt !== undefined) {
        this.captureOf.set(this.lastTimestamp, capturedAt);
        // frames the decoder never gave back are forgotten (the oldest first)
        if (this.captureOf.size > 64) this.captureOf.delete(this.captureOf.keys().next().value!);
      }
    } catch {
      this.drop('decoder');
      this.decoderFailed(this.decoderToken);
    }
  }

  private output(token: number, frame: VideoFrameLike): void {
    if (token !== this.decoderToken) {
      // Its decoder was closed: already counted as dropped there.
      frame.close();
      return;
    }
    this.inDecoder = Math.max(0, this.inDecoder - 1);
    // the rest of the start's burst after its first picture is not lag either, for a while
    if (!this.decoding) {
      const now = this.now();
      this.firstPictureAt ??= now;
      const queued = this.decoder?.decodeQueueSize ?? 0;
      if (queued <= MAX_DECODE_QUEUE || now - this.firstPictureAt >= CATCH_UP_MS)
        this.decoding = true;
    }
    this.count.decoded += 1;
    this.countersChanged = true;
    // Never queue: a newer frame replaces one not drawn yet.
    if (this.presenter.offer(frame))
      this.drop(this.presenter.hasCanvas ? 'overtaken' : 'not_shown');
    this.framesSinceInfo += 1;
    if (frame.displayWidth !== this.size.width || frame.displayHeight !== this.size.height) {
      this.size = { width: frame.displayWidth, height: frame.displayHeight };
      this.options.emit({ type: 'resize', width: this.size.width, height: this.size.height });
    }
    if (!this.shown) {
      this.shown = true;
      this.options.emit({ type: 'active', conn: this.conn });
      this.setInfo({ ...this.info, connection: 'direct' });
    }
    if (!this.presenter.scheduled) this.presenter.draw();
  }

  /** The decoder closed itself on an error: a new one starts at the next key frame. */
  private decoderFailed(token: number): void {
    if (token !== this.decoderToken) return;
    this.closeDecoder();
    this.requestKeyFrame();
  }

  private closeDecoder(): void {
    const decoder = this.decoder;
    this.decoder = null;
    this.configured = false;
    // What it still held never comes out (a closed decoder's outputs are ignored above).
    this.drop('decoder', this.inDecoder);
    this.inDecoder = 0;
    if (decoder && decoder.state !== 'closed') {
      try {
        decoder.close();
      } catch {
        // Already closed.
      }
    }
    // Its late outputs and errors are void (what it held is counted above).
    this.decoderToken += 1;
  }

  // --- presentation and info -------------------------------------------------------------

  /** The presenter drew the waiting frame or failed to (h264-direct-presenter.ts). */
  private drawn(presented: boolean, timestamp?: number, time?: number): void {
    const capturedAt = timestamp === undefined ? undefined : this.captureOf.get(timestamp);
    if (timestamp !== undefined) this.captureOf.delete(timestamp);
    if (presented) this.count.presented += 1;
    else this.drop('not_shown');
    if (presented && capturedAt !== undefined) {
      // the animation frame's time, as the page's requestVideoFrameCallback dates WebRTC frames
      const shownAt = performance.timeOrigin + (time ?? performance.now());
      this.options.emit({ type: 'latency', capturedAt, shownAt, liveFrom: this.liveFrom });
    }
    this.countersChanged = true;
    if (this.now() - this.countersAt >= COUNTERS_REPORT_MS) this.flushCounters();
  }

  private infoTick(): void {
    const now = this.now();
    const elapsed = now - this.infoAt;
    this.infoAt = now;
    this.flushCounters();
    if (elapsed <= 0) return;
    this.setInfo({
      bitrateKbps: Math.round((this.bytesSinceInfo * 8) / elapsed),
      fps: Math.round((this.framesSinceInfo * 1000) / elapsed),
      connection: this.shown ? 'direct' : null,
    });
    this.bytesSinceInfo = 0;
    this.framesSinceInfo = 0;
  }

  private setInfo(info: StreamInfo): void {
    const same =
      info.bitrateKbps === this.info.bitrateKbps &&
      info.fps === this.info.fps &&
      info.connection === this.info.connection;
    this.info = info;
    // An unchanged figure is not news: every 'info' re-renders the console's status bar.
    if (!same) this.options.emit({ type: 'info', info });
  }
}

/**
 * A tunnelled stream as its opener (the tunnel, or the bus bridging for another replica) sees it,
 * whatever carries it: the agent socket on this replica, or NATS to the replica holding it.
 *
 * Flow control (docs/cloud.md "Agent socket"): each direction has AGENT_STREAM_WINDOW bytes of
 * payload in flight at most; the receiver says `ack {n}` once it has passed n bytes on (written
 * to the browser's socket), and only then may the sender use them again. So a stream holds at
 * most one window per direction in any buffer of the path, whatever the speeds at either end.
 */
import { AGENT_STREAM_WINDOW, type StreamKind } from '@kvm/protocol';

export interface StreamHead {
  status: number;
  headers: Record<string, string>;
  protocol?: string;
}

/** What the device's side of a stream does, delivered to the opener. */
export interface StreamEvents {
  /** The response head (http) or the upgrade's outcome (ws: 101, else an error status). */
  head(head: StreamHead): void;
  /** Bytes of the device; the opener calls `ack(payload.byteLength)` once it passed them on. */
  data(kind: StreamKind, payload: Uint8Array): void;
  /**
   * The stream ended: http without `code` is the body's normal end, with one a failure; ws is
   * the close. Called once; nothing follows.
   */
  end(code?: number, reason?: string): void;
  /** The device took `n` bytes the opener sent (only a relay between replicas needs it). */
  acked?(n: number): void;
}

/** What the opener may do. */
export interface OpenedStream {
  /** Resolves once `n` more bytes fit in the window toward the device; rejects when ended. */
  writable(n: number): Promise<void>;
  /** Sends bytes toward the device; throws StreamClosedError / WindowExceededError. */
  send(kind: StreamKind, payload: Uint8Array): void;
  /** The opener passed `n` bytes of the device on: the device may send them again. */
  ack(n: number): void;
  /** The opener's side ends: http the request body is complete; ws the browser closed. */
  end(code?: number, reason?: string): void;
  /** The opener gives up (the browser left): the device drops the stream. */
  abort(reason: string): void;
}

/** What an opener asks of the device: the agent `open` frame without its sid. */
export interface StreamOpen {
  kind: 'http' | 'ws';
  method: string;
  path: string;
  headers: Record<string, string>;
  user: { id: string; name: string };
  protocols?: string[];
}

export class StreamClosedError extends Error {
  override readonly name = 'StreamClosedError';
}

export class WindowExceededError extends Error {
  override readonly name = 'WindowExceededError';
}

/** The sending side's window: bytes in flight, and who waits for room. */
export class SendWindow {
  private inFlight = 0;
  private closed: Error | null = null;
  private readonly waiters: Array<{ n: number; resolve: () => void; reject: (e: Error) => void }> =
    [];

  constructor(private readonly size: number = AGENT_STREAM_WINDOW) {}

  get used(): number {
    return this.inFlight;
  }

  fits(n: number): boolean {
    return this.inFlight + n <= this.size;
  }

  wait(n: number): Promise<void> {
    if (this.closed) return Promise.reject(this.closed);
    if (n > this.size)
      return Promise.reject(new WindowExceededError(`${n} bytes exceed the window`));
    if (this.waiters.length === 0 && this.fits(n)) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiters.push({ n, resolve, reject }));
  }

  /** Counts bytes sent; throws when they do not fit (the sender ignored the window). */
  take(n: number): void {
    if (this.closed) throw this.closed;
    if (!this.fits(n)) {
      throw new WindowExceededError(`window exceeded: ${this.inFlight} + ${n} > ${this.size}`);
    }
    this.inFlight += n;
  }

  /** The receiver acknowledged `n` bytes; false when it acknowledged more than was sent. */
  release(n: number): boolean {
    if (n < 0 || n > this.inFlight) return false;
    this.inFlight -= n;
    while (this.waiters.length > 0 && this.fits(this.waiters[0]!.n))
      this.waiters.shift()!.resolve();
    return true;
  }

  close(err: Error = new StreamClosedError('stream ended')): void {
    if (this.closed) return;
    this.closed = err;
    for (const w of this.waiters.splice(0)) w.reject(err);
  }
}

/** The receiving side's count: bytes received and not yet acknowledged, at most one window. */
export class ReceiveWindow {
  private unacked = 0;

  constructor(private readonly size: number = AGENT_STREAM_WINDOW) {}

  /** False when the sender went past the window (a protocol violation). */
  receive(n: number): boolean {
    this.unacked += n;
    return this.unacked <= this.size;
  }

  /** Clamps a consumer's ack to what was received. */
  ack(n: number): number {
    const k = Math.max(0, Math.min(n, this.unacked));
    this.unacked -= k;
    return k;
  }
}

/** Hop-by-hop headers (RFC 9110 7.6.1) plus those a proxy must not forward. */
export const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** What consumes a stream's bytes once its head is handled. */
export interface StreamConsumer {
  data(kind: StreamKind, payload: Uint8Array): void;
  end(code?: number, reason?: string): void;
}

/**
 * StreamEvents that keep what comes before the opener is ready for it (bytes may follow the
 * head in the same tick). What waits is at most one window: nothing is acknowledged unread.
 */
export class StreamInbox implements StreamEvents {
  readonly headed: Promise<StreamHead>;
  private resolveHead!: (h: StreamHead) => void;
  private rejectHead!: (e: { code?: number; reason?: string }) => void;
  private gotHead = false;
  private ended: { code?: number; reason?: string } | null = null;
  private readonly queue: Array<{ kind: StreamKind; payload: Uint8Array }> = [];
  private consumer: StreamConsumer | null = null;

  constructor() {
    this.headed = new Promise<StreamHead>((res, rej) => {
      this.resolveHead = res;
      this.rejectHead = rej;
    });
    // Nobody may await it (the opener gave up first): not an unhandled rejection.
    this.headed.catch(() => undefined);
  }

  head(head: StreamHead): void {
    if (this.gotHead) return;
    this.gotHead = true;
    this.resolveHead(head);
  }

  data(kind: StreamKind, payload: Uint8Array): void {
    if (this.consumer) this.consumer.data(kind, payload);
    else this.queue.push({ kind, payload });
  }

  end(code?: number, reason?: string): void {
    if (this.ended) return;
    this.ended = {
      ...(code !== undefined ? { code } : {}),
      ...(reason !== undefined ? { reason } : {}),
    };
    if (!this.gotHead) this.rejectHead(this.ended);
    if (this.consumer) this.consumer.end(code, reason);
  }

  /** Hands everything so far, and all that follows, to `consumer`. */
  attach(consumer: StreamConsumer): void {
    this.consumer = consumer;
    for (const q of this.queue.splice(0)) consumer.data(q.kind, q.payload);
    if (this.ended) consumer.end(this.ended.code, this.ended.reason);
  }
}

/**
 * What every WebSocket of the server (`/api/ws`, `/api/media/ws`, `/janus/ws`) puts between a
 * client and the handlers: one place that survives any frame and bounds what a client can make
 * the server hold or do (issue 9 items 1, 2, 5, 21).
 *
 * - A message (text, binary, or a protocol ping/pong) costs a token of the message bucket and
 *   its length of the byte bucket. A message that finds a bucket empty is dropped; a client
 *   that keeps sending after that (the strike bucket runs dry) is closed with 1008.
 * - A message longer than the kind's `maxMessageBytes` closes the socket with 1009.
 * - A handler that throws or rejects closes this socket with 1011; the process never sees it.
 * - Replies a client asks for (pongs) come out of a reply bucket; the excess is dropped and a
 *   client far over it is closed with 1008.
 * - Nothing is queued while the socket holds more than `maxBufferedBytes` unsent: droppable
 *   sends are dropped, an essential one (state the client must not miss) closes with 1013, and
 *   a client whose buffer stays over the bound for `stallMs` is closed with 1013.
 * - Sockets are counted per login session and per address (`SocketRegistry`), and every socket
 *   of a session closes with 4001 when the session ends.
 */
import type { FastifyRequest } from 'fastify';
import type { RawData, WebSocket } from 'ws';
import { BadRequestError, TooManyRequestsError } from '../errors';
import type { Logger } from '../log';
import type { RequestAuth } from '../http/request-auth';

/** Close codes (RFC 6455 7.4.1 and the private 4000-4999 range). */
export const CLOSE_POLICY = 1008;
export const CLOSE_TOO_BIG = 1009;
export const CLOSE_INTERNAL = 1011;
export const CLOSE_SLOW = 1013;
/** A login session ended (logout, expiry, password change); as kvmd. */
export const CLOSE_SESSION_ENDED = 4001;

/** A socket asked to close but whose peer does not answer is cut after this long. */
const CLOSE_GRACE_MS = 2_000;
/**
 * A client over its message budget is not read for this long (TCP pushes back on it), so a flood
 * costs the server its budget and no more: frames left unread are never parsed or allocated.
 */
export const THROTTLE_MS = 100;

export interface SocketLimits {
  /** Longest message accepted, bytes. */
  maxMessageBytes: number;
  /** Messages (any frame, pings included) per second, and the burst above that rate. */
  messagesPerSecond: number;
  messageBurst: number;
  /** Bytes of messages per second, and the burst. */
  bytesPerSecond: number;
  byteBurst: number;
  /** Replies (pongs) per second, and the burst. */
  repliesPerSecond: number;
  replyBurst: number;
  /** Unsent bytes the socket may hold before sends are refused. */
  maxBufferedBytes: number;
  /** How long the buffer may stay over `maxBufferedBytes` before the client is closed. */
  stallMs: number;
}

/**
 * `/api/ws`: HID input is the busiest legitimate traffic: a 1 kHz mouse plus typing is about
 * 1,050 small JSON or binary frames per second, so 2,000/s with a 4,000 burst leaves room.
 */
export const EVENT_SOCKET_LIMITS: SocketLimits = {
  maxMessageBytes: 16 * 1024,
  messagesPerSecond: 2_000,
  messageBurst: 4_000,
  bytesPerSecond: 512 * 1024,
  byteBurst: 1024 * 1024,
  repliesPerSecond: 20,
  replyBurst: 40,
  maxBufferedBytes: 4 * 1024 * 1024,
  stallMs: 10_000,
};

/** `/api/media/ws`: a client sends a start, pings and key-frame requests, all tiny. */
export const MEDIA_SOCKET_LIMITS: SocketLimits = {
  maxMessageBytes: 4 * 1024,
  messagesPerSecond: 50,
  messageBurst: 100,
  bytesPerSecond: 64 * 1024,
  byteBurst: 128 * 1024,
  repliesPerSecond: 20,
  replyBurst: 40,
  // Over this a viewer waits for the next key frame (routes/media.ts); one that stays over
  // it for `stallMs` has stopped reading and is closed.
  maxBufferedBytes: 8 * 1024 * 1024,
  stallMs: 10_000,
};

/**
 * `/janus/ws`: janus.js sends a keepalive every 25 s, a handful of requests per watch and a
 * burst of trickled candidates; an SDP answer is a few KiB.
 */
export const JANUS_SOCKET_LIMITS: SocketLimits = {
  maxMessageBytes: 64 * 1024,
  messagesPerSecond: 100,
  messageBurst: 200,
  bytesPerSecond: 256 * 1024,
  byteBurst: 512 * 1024,
  repliesPerSecond: 100,
  replyBurst: 200,
  maxBufferedBytes: 1024 * 1024,
  stallMs: 10_000,
};

/** The largest message any socket accepts: the `ws` server's own `maxPayload` (app.ts). */
export const MAX_WS_PAYLOAD = Math.max(
  EVENT_SOCKET_LIMITS.maxMessageBytes,
  MEDIA_SOCKET_LIMITS.maxMessageBytes,
  JANUS_SOCKET_LIMITS.maxMessageBytes,
);

export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tokens = burst;
    this.last = now();
  }

  /** Takes `n` tokens if there are that many. */
  take(n = 1): boolean {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) / 1000) * this.perSecond);
    this.last = t;
    if (this.tokens < n) return false;
    this.tokens -= n;
    return true;
  }
}

export type SocketKind = 'event' | 'media' | 'janus' | 'terminal';

export interface SocketOwner {
  kind: SocketKind;
  /** The login session's token, null for X-KVMD header credentials (no session). */
  token: string | null;
  tokenHash: string | null;
  remote: string;
}

/** Who a socket belongs to, from the upgrade request (`request.auth` is set by http/auth.ts). */
export function ownerOf(request: FastifyRequest, kind: SocketKind): SocketOwner {
  // `auth` is null on a public route and absent on an app without the auth hook (unit tests).
  const auth: RequestAuth | null | undefined = request.auth;
  return {
    kind,
    token: auth?.token ?? null,
    tokenHash: auth?.tokenHash ?? null,
    remote: request.socket.remoteAddress ?? '',
  };
}

export type MessageHandler = (data: Buffer, isBinary: boolean) => void | Promise<void>;

export interface GuardStats {
  droppedMessages: number;
  droppedReplies: number;
  droppedSends: number;
  /** Times the client was not read for `THROTTLE_MS` because it was over its budget. */
  throttled: number;
}

export class GuardedSocket {
  readonly stats: GuardStats = {
    droppedMessages: 0,
    droppedReplies: 0,
    droppedSends: 0,
    throttled: 0,
  };
  private readonly messages: TokenBucket;
  private readonly bytes: TokenBucket;
  private readonly strikes: TokenBucket;
  private readonly replies: TokenBucket;
  private readonly replyStrikes: TokenBucket;
  private stallTimer: NodeJS.Timeout | null = null;
  private killTimer: NodeJS.Timeout | null = null;
  private resumeTimer: NodeJS.Timeout | null = null;
  private closing = false;
  private readonly closeListeners: Array<() => void> = [];

  constructor(
    readonly socket: WebSocket,
    readonly owner: SocketOwner,
    readonly limits: SocketLimits,
    private readonly log: Logger,
  ) {
    this.messages = new TokenBucket(limits.messagesPerSecond, limits.messageBurst);
    this.bytes = new TokenBucket(limits.bytesPerSecond, limits.byteBurst);
    // A client may overrun its budget by as much again before it is closed.
    this.strikes = new TokenBucket(limits.messagesPerSecond, limits.messageBurst);
    this.replies = new TokenBucket(limits.repliesPerSecond, limits.replyBurst);
    this.replyStrikes = new TokenBucket(limits.repliesPerSecond * 4, limits.replyBurst * 4);
    // ws answers protocol pings itself and cuts a client with 60 pongs unsent
    // (`maxPendingAutoPongs`); they still count against the message budget here.
    socket.on('ping', (data: Buffer) => {
      this.admit(data);
    });
    socket.on('pong', (data: Buffer) => {
      this.admit(data);
    });
    // Protocol errors (bad opcode, invalid UTF-8, oversize frame) are the client's mistake: ws
    // closes the socket itself; a debug line is all it is worth (issue 9 item 21).
    socket.on('error', (err) =>
      this.log.debug({ err: describe(err), kind: owner.kind }, 'ws: client error'),
    );
    socket.on('close', () => {
      this.closing = true;
      if (this.stallTimer) clearTimeout(this.stallTimer);
      if (this.killTimer) clearTimeout(this.killTimer);
      if (this.resumeTimer) clearTimeout(this.resumeTimer);
      this.stallTimer = this.killTimer = this.resumeTimer = null;
      for (const fn of this.closeListeners.splice(0)) fn();
    });
  }

  get open(): boolean {
    return !this.closing && this.socket.readyState === this.socket.OPEN;
  }

  get bufferedAmount(): number {
    return this.socket.bufferedAmount;
  }

  onClose(fn: () => void): void {
    if (this.socket.readyState === this.socket.CLOSED) fn();
    else this.closeListeners.push(fn);
  }

  /** Runs `handler` for each admitted message; whatever it throws closes only this socket. */
  onMessage(handler: MessageHandler): void {
    this.socket.on('message', (raw: RawData, isBinary: boolean) => {
      const data = toBuffer(raw);
      if (!this.admit(data)) return;
      try {
        const result = handler(data, isBinary);
        if (result) result.catch((err: unknown) => this.failed(err));
      } catch (err) {
        this.failed(err);
      }
    });
  }

  /**
   * Queues `data` unless the socket already holds more than the bound. `essential`: the client
   * cannot do without it (a state event), so a full buffer closes the socket instead.
   */
  send(data: string | Buffer, opts: { essential?: boolean; cb?: () => void } = {}): boolean {
    if (!this.open) return false;
    if (this.socket.bufferedAmount > this.limits.maxBufferedBytes) {
      this.stats.droppedSends += 1;
      if (opts.essential) this.close(CLOSE_SLOW, 'client too slow');
      else this.watchStall();
      return false;
    }
    try {
      this.socket.send(data, opts.cb);
    } catch (err) {
      this.failed(err);
      return false;
    }
    return true;
  }

  /** A reply the client asked for (a pong): out of the reply budget, then `send`. */
  replyWith(data: string | Buffer): boolean {
    if (!this.open) return false;
    if (!this.replies.take(1)) {
      this.stats.droppedReplies += 1;
      if (!this.replyStrikes.take(1)) this.close(CLOSE_POLICY, 'too many requests');
      return false;
    }
    return this.send(data);
  }

  close(code: number, reason: string): void {
    if (this.closing) return;
    this.closing = true;
    if (this.stallTimer) clearTimeout(this.stallTimer);
    this.stallTimer = null;
    this.log.debug({ kind: this.owner.kind, code, reason }, 'ws: closing client');
    try {
      this.socket.close(code, reason.slice(0, 120));
    } catch {
      this.socket.terminate();
      return;
    }
    // A client closed for flooding, oversize or not reading is not read any more: what it goes on
    // sending during the grace below is never parsed. A client closed for a reason of ours (its
    // session ended) is, so its close reply ends the connection at once.
    if (code === CLOSE_POLICY || code === CLOSE_TOO_BIG || code === CLOSE_SLOW) this.socket.pause();
    // A peer that does not read never answers the close frame: do not hold its buffer for
    // ws's own 30 s closing timeout.
    this.killTimer = setTimeout(() => this.socket.terminate(), CLOSE_GRACE_MS);
    this.killTimer.unref();
  }

  /** Counts a message against the budgets; false when it must be dropped. */
  private admit(data: Buffer): boolean {
    if (this.closing) return false;
    if (data.length > this.limits.maxMessageBytes) {
      this.close(CLOSE_TOO_BIG, 'message too big');
      return false;
    }
    if (this.messages.take(1) && this.bytes.take(data.length)) return true;
    this.stats.droppedMessages += 1;
    if (!this.strikes.take(1)) this.close(CLOSE_POLICY, 'too many messages');
    else this.throttle();
    return false;
  }

  /** Stops reading the client for `THROTTLE_MS`; frames already read still arrive (dropped). */
  private throttle(): void {
    if (this.resumeTimer || this.closing) return;
    this.stats.throttled += 1;
    this.socket.pause();
    this.resumeTimer = setTimeout(() => {
      this.resumeTimer = null;
      if (!this.closing) this.socket.resume();
    }, THROTTLE_MS);
    this.resumeTimer.unref();
  }

  /**
   * The caller dropped data because the client is behind (routes/media.ts): close the client
   * if its buffer is still over the bound after `stallMs`.
   */
  behind(): void {
    this.watchStall();
  }

  private watchStall(): void {
    if (this.stallTimer || this.closing) return;
    this.stallTimer = setTimeout(() => {
      this.stallTimer = null;
      if (this.socket.bufferedAmount > this.limits.maxBufferedBytes)
        this.close(CLOSE_SLOW, 'client too slow');
    }, this.limits.stallMs);
    this.stallTimer.unref();
  }

  private failed(err: unknown): void {
    this.log.debug({ err: describe(err), kind: this.owner.kind }, 'ws: handler failed on a frame');
    this.close(CLOSE_INTERNAL, 'internal error');
  }
}

/** Per login session and per address, across every kind. */
export const MAX_SOCKETS_PER_SESSION = 32;
export const MAX_SOCKETS_PER_ADDRESS = 64;
/** Over every client: each socket is a descriptor and up to its kind's send bound. */
export const MAX_SOCKETS_TOTAL = 256;
/**
 * New sockets per login session (per address for header credentials): each one costs a full
 * state snapshot on `/api/ws` and a credential check; a console opens three per page load.
 */
export const CONNECTS_PER_SECOND = 5;
export const CONNECT_BURST = 20;
/** Connect buckets idle this long are forgotten (when there are many). */
const CONNECT_BUCKET_IDLE_MS = 60_000;

export class TooManySocketsError extends TooManyRequestsError {}

/**
 * The plain-HTTP handler of a socket route: the envelope instead of an empty 404. A plain GET
 * on a socket's URL is a BadRequestError, as aiohttp under kvmd answers there.
 */
export async function notAWebSocket(): Promise<never> {
  throw new BadRequestError('This URL is a WebSocket: send an upgrade request');
}

/** Every guarded socket of the server: counts, session ends, the held-buffer figure. */
export class SocketRegistry {
  private readonly sockets = new Set<GuardedSocket>();
  private readonly connects = new Map<string, { bucket: TokenBucket; last: number }>();
  /**
   * Whether a session token is still live (app.ts: the auth service). Sessions expire lazily,
   * when their token is next used; a client's ping is that use for its socket.
   */
  sessionCheck: ((token: string) => boolean) | null = null;

  constructor(
    private readonly log: Logger,
    private readonly caps = {
      perSession: MAX_SOCKETS_PER_SESSION,
      perAddress: MAX_SOCKETS_PER_ADDRESS,
      total: MAX_SOCKETS_TOTAL,
    },
  ) {}

  /** Checked before the upgrade, so a refused client gets a plain 429 in the envelope. */
  admit(owner: Pick<SocketOwner, 'tokenHash' | 'remote'>): void {
    let session = 0;
    let address = 0;
    for (const s of this.sockets) {
      if (owner.tokenHash !== null && s.owner.tokenHash === owner.tokenHash) session += 1;
      if (s.owner.remote === owner.remote) address += 1;
    }
    if (owner.tokenHash !== null && session >= this.caps.perSession)
      throw new TooManySocketsError('Too many open sockets for this session');
    if (address >= this.caps.perAddress)
      throw new TooManySocketsError('Too many open sockets for this address');
    if (this.sockets.size >= this.caps.total)
      throw new TooManySocketsError('Too many open sockets');
  }

  /** Counts a new socket against its owner's connect rate (before the upgrade). */
  admitNew(owner: Pick<SocketOwner, 'tokenHash' | 'remote'>): void {
    this.admit(owner);
    const key = owner.tokenHash ?? `address ${owner.remote}`;
    const now = performance.now();
    if (this.connects.size > 256) {
      for (const [k, v] of this.connects)
        if (now - v.last > CONNECT_BUCKET_IDLE_MS) this.connects.delete(k);
    }
    let entry = this.connects.get(key);
    if (!entry) {
      entry = { bucket: new TokenBucket(CONNECTS_PER_SECOND, CONNECT_BURST), last: now };
      this.connects.set(key, entry);
    }
    entry.last = now;
    if (!entry.bucket.take())
      throw new TooManySocketsError('Too many new sockets, try again later');
  }

  /** Guards an upgraded socket and counts it until it closes; over a cap it is closing already. */
  guard(socket: WebSocket, owner: SocketOwner, limits: SocketLimits): GuardedSocket {
    const g = new GuardedSocket(socket, owner, limits, this.log);
    try {
      // Two upgrades may have passed `admit` together: the later one is closed.
      this.admit(owner);
    } catch (err) {
      g.close(CLOSE_SLOW, (err as Error).message);
      return g;
    }
    this.sockets.add(g);
    g.onClose(() => this.sockets.delete(g));
    return g;
  }

  /** On a client's ping: closes the socket with 4001 if its session has ended meanwhile. */
  checkSession(guard: GuardedSocket): boolean {
    const token = guard.owner.token;
    if (token === null || !this.sessionCheck || this.sessionCheck(token)) return true;
    guard.close(CLOSE_SESSION_ENDED, 'session ended');
    return false;
  }

  /** Closes every socket of an ended login session with 4001. */
  endSession(tokenHash: string, reason: string): void {
    for (const s of this.sockets) {
      if (s.owner.tokenHash === tokenHash) s.close(CLOSE_SESSION_ENDED, reason);
    }
  }

  /**
   * Closes every socket opened with X-KVMD header credentials: they have no session to end,
   * so a change of the credentials ends them all (they reconnect and are checked again).
   */
  endHeaderAuthenticated(reason: string): void {
    for (const s of this.sockets) {
      if (s.owner.tokenHash === null) s.close(CLOSE_SESSION_ENDED, reason);
    }
  }

  count(kind?: SocketKind): number {
    let n = 0;
    for (const s of this.sockets) if (!kind || s.owner.kind === kind) n += 1;
    return n;
  }

  /** Bytes the server holds unsent for these sockets (tests and benches). */
  heldBytes(kind?: SocketKind): number {
    let n = 0;
    for (const s of this.sockets) if (!kind || s.owner.kind === kind) n += s.bufferedAmount;
    return n;
  }

  closeAll(code: number, reason: string): void {
    for (const s of this.sockets) s.close(code, reason);
  }
}

/**
 * @fastify/websocket's error handler: its default logs every socket error at error level with
 * a stack. A client's protocol mistake is a debug line; anything else is ours and a warning.
 */
export function wsErrorHandler(
  log: Logger & { warn(obj: object, msg?: string): void },
): (error: Error, socket: WebSocket) => void {
  return (error, socket) => {
    if (isClientError(error)) log.debug({ err: describe(error) }, 'ws: client protocol error');
    else log.warn({ err: error }, 'ws: handler error');
    socket.terminate();
  };
}

function isClientError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  return code.startsWith('WS_ERR_') || ['ECONNRESET', 'EPIPE', 'ETIMEDOUT'].includes(code);
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return typeof code === 'string' ? `${code}: ${err.message}` : err.message;
  }
  return String(err);
}

function toBuffer(raw: RawData): Buffer {
  if (Buffer.isBuffer(raw)) return raw;
  if (Array.isArray(raw)) return Buffer.concat(raw);
  return Buffer.from(raw);
}

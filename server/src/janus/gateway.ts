/**
 * `/janus/ws`: our own Janus gateway speaking the Janus API over WebSocket (subprotocol
 * `janus-protocol`) with the `janus.plugin.ustreamer` semantics (wire-protocol.md 3,
 * docs/webrtc.md). The official janus.js drives it unmodified.
 *
 * Objects: a socket (JanusConnection) owns sessions; a session owns handles; a handle has at
 * most one peer (werift connection + video forwarder). Sessions die with their socket, on
 * `destroy`, and after `sessionTimeoutMs` without a request naming them (Janus `timeout`).
 *
 * Reply shapes follow the capture of wire-protocol.md 3.2: a plugin message is answered with
 * `success` + `plugindata.data {ok:true}`, and the plugin's answers follow as `event`s without
 * a transaction. Plugin messages of one handle run one after another (a `watch` builds its
 * offer asynchronously; `stop`, `start` and `hangup` wait for it).
 */
import { randomInt } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { WebSocket } from 'ws';
import type { VideoFeed } from '../media/types';
import {
  JanusPeer,
  offeredProfileLevelId,
  prewarmDtlsCertificate,
  type CandidateInit,
  type IceServerConfig,
} from './peer';
import {
  JanusErrorCode,
  USTREAMER_PLUGIN,
  UstreamerError,
  isJanusId,
  isRecord,
  type Jsep,
  type UstreamerEventData,
} from './protocol';
import { VideoForwarder } from './video-forwarder';
import {
  JANUS_SOCKET_LIMITS,
  SocketRegistry,
  TokenBucket,
  notAWebSocket,
  ownerOf,
  type GuardedSocket,
  type SocketOwner,
} from '../ws/socket-guard';
import type { Logger } from '../log';

export interface JanusDeps {
  feed: VideoFeed;
  /** ICE servers for the server's side; `[]` offline and in tests. Read at each `watch`. */
  iceServers: () => readonly IceServerConfig[];
  /** `result.features` of the `features` status, e.g. `janusFeatures(iceServers())`. */
  features: () => object;
  /** A binary input frame `[op][payload]` (ops 1-5, wire-protocol.md 2.8) from a data channel. */
  onInput: (sessionKey: string, data: Buffer) => void;
  /** The peer behind `sessionKey` is gone: release whatever it holds pressed. */
  onViewerGone: (sessionKey: string) => void;
  log: Logger;
  /** Janus session timeout (SPEC 7: 60 s); shortened by tests. */
  sessionTimeoutMs?: number;
  /** At most this many live peer connections over all sessions. */
  maxPeers?: number;
  /** The server's socket registry (app.ts); a gateway on its own keeps one of its own. */
  sockets?: SocketRegistry;
}

export type JanusSocketInfo = Omit<SocketOwner, 'kind' | 'token'> & { token?: string | null };

const DEFAULT_SESSION_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_PEERS = 16;
export const MAX_SESSIONS_PER_SOCKET = 8;
export const MAX_HANDLES_PER_SESSION = 8;
/** Peer connections one socket may hold, so one client cannot take every viewer slot. */
export const MAX_PEERS_PER_SOCKET = 4;
/** Plugin messages queued or running per handle (each `watch` builds a peer). */
export const MAX_QUEUED_PER_HANDLE = 8;
/** janus.js sends 12 characters; anything longer is refused and not echoed. */
export const MAX_TRANSACTION_LENGTH = 64;
/** janus.js sends `ustreamer-` and 12 characters; kept per handle. */
export const MAX_OPAQUE_ID_LENGTH = 256;
/** Candidates in one trickle request. */
export const MAX_CANDIDATES_PER_TRICKLE = 32;
/** `watch` requests per socket (each builds a werift peer: certificates, UDP sockets). */
export const WATCHES_PER_SECOND = 1;
export const WATCH_BURST = 4;

type Reply = Record<string, unknown>;

class RequestError extends Error {
  constructor(
    readonly code: number,
    reason: string,
  ) {
    super(reason);
  }
}

/** `features` as the ustreamer plugin of kvmd reports them; `ice.url` only with a STUN url. */
export function janusFeatures(
  iceServers: readonly IceServerConfig[],
  opts: { audio?: boolean; mic?: boolean } = {},
): { audio: boolean; mic: boolean; ice?: { url: string } } {
  const urls = iceServers.flatMap((s) => (Array.isArray(s.urls) ? s.urls : [s.urls]));
  const stun = urls.find((u) => /^stuns?:/.test(u));
  return {
    audio: opts.audio ?? false,
    mic: opts.mic ?? false,
    ...(stun ? { ice: { url: stun } } : {}),
  };
}

export function registerJanus(app: FastifyInstance, deps: JanusDeps): JanusGateway {
  const gateway = new JanusGateway(deps);
  // Not public: the global onRequest hook has checked the cookie / ?auth_token= already.
  app.route({
    method: 'GET',
    url: '/janus/ws',
    preValidation: async (request) => gateway.sockets.admitNew(ownerOf(request, 'janus')),
    handler: notAWebSocket,
    wsHandler: (socket, request) => gateway.accept(socket, ownerOf(request, 'janus')),
  });
  app.addHook('onClose', async () => gateway.close());
  return gateway;
}

interface PeerContext {
  peer: JanusPeer;
  /** The socket the peer is counted against (a `claim` may move the session later). */
  conn: JanusConnection;
  forwarder: VideoForwarder | null;
  key: string;
  watchAt: number;
}

interface Handle {
  readonly id: number;
  readonly session: Session;
  readonly opaqueId: string | null;
  peer: PeerContext | null;
  /** Plugin messages of this handle, in order, and how many are queued or running. */
  queue: Promise<void>;
  queued: number;
  detached: boolean;
}

interface Session {
  readonly id: number;
  conn: JanusConnection;
  readonly handles: Map<number, Handle>;
  lastActivity: number;
}

export class JanusGateway {
  private readonly sessions = new Map<number, Session>();
  private readonly connections = new Set<JanusConnection>();
  private readonly timeoutMs: number;
  private readonly maxPeers: number;
  private readonly sweep: NodeJS.Timeout;
  private peers = 0;
  private peerSeq = 0;
  private closed = false;
  readonly sockets: SocketRegistry;

  constructor(readonly deps: JanusDeps) {
    this.sockets = deps.sockets ?? new SocketRegistry(deps.log);
    this.timeoutMs = deps.sessionTimeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS;
    this.maxPeers = deps.maxPeers ?? DEFAULT_MAX_PEERS;
    this.sweep = setInterval(
      () => this.expireSessions(),
      Math.max(20, Math.min(2_000, this.timeoutMs / 4)),
    );
    this.sweep.unref();
    void prewarmDtlsCertificate();
  }

  get sessionCount(): number {
    return this.sessions.size;
  }

  get peerCount(): number {
    return this.peers;
  }

  accept(socket: WebSocket, info: JanusSocketInfo): void {
    if (this.closed) {
      socket.close(1001, 'shutting down');
      return;
    }
    const guard = this.sockets.guard(
      socket,
      { kind: 'janus', token: info.token ?? null, tokenHash: info.tokenHash, remote: info.remote },
      JANUS_SOCKET_LIMITS,
    );
    if (!guard.open) return;
    const conn = new JanusConnection(this, guard);
    this.connections.add(conn);
    guard.onMessage((data) => conn.onMessage(data));
    guard.onClose(() => {
      this.connections.delete(conn);
      for (const session of [...this.sessions.values()]) {
        if (session.conn === conn) this.destroySession(session);
      }
    });
  }

  /** Closes the sockets opened with this login session (logout, expiry). */
  endAuthSession(tokenHash: string): void {
    this.sockets.endSession(tokenHash, 'session ended');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.sweep);
    const closing: Promise<void>[] = [];
    for (const session of [...this.sessions.values()])
      closing.push(...this.destroySession(session));
    for (const conn of this.connections) conn.guard.close(1001, 'shutting down');
    await Promise.all(closing);
  }

  // ----- requests (called by JanusConnection) -----

  createSession(conn: JanusConnection, wanted: unknown): Session {
    if (this.sessionsOf(conn) >= MAX_SESSIONS_PER_SOCKET) {
      throw new RequestError(JanusErrorCode.unknown, 'Too many sessions on this connection');
    }
    let id: number;
    if (wanted !== undefined) {
      if (!isJanusId(wanted)) {
        throw new RequestError(
          JanusErrorCode.invalidElementType,
          'Invalid element type (id should be a positive integer)',
        );
      }
      if (this.sessions.has(wanted)) {
        throw new RequestError(JanusErrorCode.sessionConflict, `Session ID already in use`);
      }
      id = wanted;
    } else {
      id = this.freshId((n) => this.sessions.has(n));
    }
    const session: Session = { id, conn, handles: new Map(), lastActivity: performance.now() };
    this.sessions.set(id, session);
    this.deps.log.debug({ session: id, remote: conn.guard.owner.remote }, 'janus: session created');
    return session;
  }

  findSession(conn: JanusConnection, id: unknown, claim = false): Session {
    const session = isJanusId(id) ? this.sessions.get(id) : undefined;
    // A session belongs to the socket that made it; `claim` moves it (janus.js reconnect).
    if (!session || (session.conn !== conn && !claim)) {
      throw new RequestError(JanusErrorCode.sessionNotFound, `No such session ${String(id)}`);
    }
    if (claim && session.conn !== conn && this.sessionsOf(conn) >= MAX_SESSIONS_PER_SOCKET) {
      throw new RequestError(JanusErrorCode.unknown, 'Too many sessions on this connection');
    }
    session.lastActivity = performance.now();
    if (claim) session.conn = conn;
    return session;
  }

  attach(session: Session, plugin: unknown, opaqueId: unknown): Handle {
    if (plugin === undefined) {
      throw new RequestError(
        JanusErrorCode.missingMandatoryElement,
        'Missing mandatory element (plugin)',
      );
    }
    if (typeof plugin !== 'string') {
      throw new RequestError(
        JanusErrorCode.invalidElementType,
        'Invalid element type (plugin should be a string)',
      );
    }
    if (plugin !== USTREAMER_PLUGIN) {
      throw new RequestError(JanusErrorCode.pluginNotFound, `No such plugin '${plugin}'`);
    }
    if (typeof opaqueId === 'string' && opaqueId.length > MAX_OPAQUE_ID_LENGTH) {
      throw new RequestError(
        JanusErrorCode.invalidElementType,
        `Invalid element type (opaque_id longer than ${MAX_OPAQUE_ID_LENGTH})`,
      );
    }
    if (session.handles.size >= MAX_HANDLES_PER_SESSION) {
      throw new RequestError(
        JanusErrorCode.pluginAttach,
        "Couldn't attach to plugin: too many handles",
      );
    }
    const handle: Handle = {
      id: this.freshId((n) => session.handles.has(n)),
      session,
      opaqueId: typeof opaqueId === 'string' ? opaqueId : null,
      peer: null,
      queue: Promise.resolve(),
      queued: 0,
      detached: false,
    };
    session.handles.set(handle.id, handle);
    return handle;
  }

  findHandle(session: Session, id: unknown): Handle {
    const handle = isJanusId(id) ? session.handles.get(id) : undefined;
    if (!handle) {
      throw new RequestError(
        JanusErrorCode.handleNotFound,
        `No such handle ${String(id)} in session ${session.id}`,
      );
    }
    return handle;
  }

  /** Checks a plugin message synchronously (errors become the reply), then queues it. */
  message(handle: Handle, body: unknown, jsep: unknown): void {
    if (body === undefined) {
      throw new RequestError(
        JanusErrorCode.missingMandatoryElement,
        'Missing mandatory element (body)',
      );
    }
    if (!isRecord(body)) {
      throw new RequestError(
        JanusErrorCode.invalidElementType,
        'Invalid element type (body should be an object)',
      );
    }
    const answer = jsep === undefined ? null : checkJsep(jsep);
    // An answer needs our offer, or a `watch` still building it ahead in the queue.
    if (answer && !handle.peer && handle.queued === 0) {
      throw new RequestError(JanusErrorCode.unexpectedAnswer, 'Unexpected ANSWER (did we offer?)');
    }
    if (handle.queued >= MAX_QUEUED_PER_HANDLE) {
      throw new RequestError(JanusErrorCode.unknown, 'Too many requests in flight on this handle');
    }
    if (body['request'] === 'watch' && !handle.session.conn.watches.take()) {
      throw new RequestError(JanusErrorCode.unknown, 'Too many watch requests, try again later');
    }
    this.enqueue(handle, () => this.pluginMessage(handle, body, answer));
  }

  trickle(handle: Handle, req: Record<string, unknown>): void {
    const list: unknown[] = Array.isArray(req['candidates'])
      ? (req['candidates'] as unknown[])
      : req['candidate'] !== undefined
        ? [req['candidate']]
        : [];
    if (list.length === 0 && req['candidate'] === undefined && req['candidates'] === undefined) {
      throw new RequestError(
        JanusErrorCode.missingMandatoryElement,
        'Missing mandatory element (candidate|candidates)',
      );
    }
    if (list.length > MAX_CANDIDATES_PER_TRICKLE) {
      throw new RequestError(
        JanusErrorCode.invalidElementType,
        `Invalid element type (at most ${MAX_CANDIDATES_PER_TRICKLE} candidates per trickle)`,
      );
    }
    const peer = handle.peer?.peer;
    for (const c of list) {
      if (!isRecord(c) || c['completed'] === true || !peer) continue;
      if (typeof c['candidate'] !== 'string') continue;
      peer.addCandidate(c as CandidateInit);
    }
  }

  hangup(handle: Handle, reason: string): void {
    this.enqueue(handle, async () => this.teardownPeer(handle, reason, true));
  }

  detach(handle: Handle, notify: boolean): Promise<void> {
    handle.detached = true;
    handle.session.handles.delete(handle.id);
    const done = this.enqueue(handle, async () => {
      await this.teardownPeer(handle, 'Detach', notify);
      if (notify) this.push(handle, { janus: 'detached' });
    });
    return done;
  }

  /** Destroys a session and its handles without telling the client (destroy, timeout, close). */
  destroySession(session: Session): Promise<void>[] {
    if (this.sessions.get(session.id) !== session) return [];
    this.sessions.delete(session.id);
    this.deps.log.debug({ session: session.id }, 'janus: session destroyed');
    return [...session.handles.values()].map((h) => this.detach(h, false));
  }

  // ----- plugin -----

  private async pluginMessage(
    handle: Handle,
    body: Record<string, unknown>,
    answer: Jsep | null,
  ): Promise<void> {
    const request = body['request'];
    if (request === undefined) return this.pushError(handle, UstreamerError.requestMissing);
    if (typeof request !== 'string') return this.pushError(handle, UstreamerError.requestNotString);
    switch (request) {
      case 'features':
        return this.pushStatus(handle, 'features', { features: this.deps.features() });
      case 'watch':
        return this.watch(handle, isRecord(body['params']) ? body['params'] : {});
      case 'start':
        return this.start(handle, answer);
      case 'stop':
        await this.teardownPeer(handle, 'Stopped', true);
        return this.pushStatus(handle, 'stopped');
      case 'key_required':
        // No reply (wire-protocol.md 3.2).
        if (handle.peer?.forwarder) handle.peer.forwarder.requestKeyFrame();
        else this.deps.feed.requestKeyFrame();
        return;
      default:
        return this.pushError(handle, UstreamerError.notImplemented);
    }
  }

  private async watch(handle: Handle, params: Record<string, unknown>): Promise<void> {
    // A new watch replaces the handle's peer: janus.js cannot take a second offer on its PC.
    await this.teardownPeer(handle, 'Renegotiation', true);
    if (this.peers >= this.maxPeers) {
      return this.pushError(handle, [503, 'Too many viewers']);
    }
    // Counted from the start of the offer: concurrent watches on several handles all wait here.
    const conn = handle.session.conn;
    if (conn.peers >= MAX_PEERS_PER_SOCKET) {
      return this.pushError(handle, [503, 'Too many viewers on this connection']);
    }
    // `orientation` (CVO) and `audio`/`mic` are accepted and ignored: no audio yet, and
    // the picture is sent as captured. GL clients split audio off with `video: false`.
    const video = params['video'] !== false;
    const watchAt = performance.now();
    this.peers += 1;
    conn.peers += 1;
    let peer: JanusPeer;
    try {
      peer = await JanusPeer.create({
        iceServers: this.deps.iceServers(),
        video,
        profileLevelId: offeredProfileLevelId(this.deps.feed.profileLevelId),
        log: this.deps.log,
      });
    } catch (err) {
      this.peers -= 1;
      conn.peers -= 1;
      this.deps.log.warn({ err: String(err) }, 'janus: offer failed');
      return this.pushError(handle, [503, "Can't create the offer"]);
    }
    if (handle.detached || this.closed) {
      this.peers -= 1;
      conn.peers -= 1;
      await peer.close();
      return;
    }
    const key = `janus:${handle.session.id}:${handle.id}:${++this.peerSeq}`;
    const ctx: PeerContext = {
      peer,
      conn,
      key,
      watchAt,
      forwarder: video
        ? new VideoForwarder(this.deps.feed, (pkt) => peer.sendRtp(pkt), peer.videoSsrc)
        : null,
    };
    handle.peer = ctx;
    peer.on('mediaReady', () => ctx.forwarder?.setReady());
    peer.on('connected', () => {
      this.deps.log.info(
        { peer: key, ms: Math.round(performance.now() - watchAt) },
        'janus: webrtc up',
      );
      this.push(handle, { janus: 'webrtcup' });
    });
    peer.on('gone', (reason) => {
      if (handle.peer === ctx) void this.teardownPeer(handle, reason, true);
    });
    // These run inside werift's SCTP/RTCP handling: never let a throw escape into it.
    peer.on('input', (frame) => this.guard('onInput', () => this.deps.onInput(key, frame)));
    peer.on('inputClosed', () => this.guard('onViewerGone', () => this.deps.onViewerGone(key)));
    peer.on('keyFrameRequest', () =>
      this.guard('requestKeyFrame', () => ctx.forwarder?.requestKeyFrame()),
    );
    this.deps.log.debug(
      { peer: key, ms: Math.round(performance.now() - watchAt) },
      'janus: offer sent',
    );
    this.pushStatus(handle, 'started', undefined, { type: 'offer', sdp: peer.offerSdp });
  }

  private async start(handle: Handle, answer: Jsep | null): Promise<void> {
    const ctx = handle.peer;
    if (answer && ctx && !ctx.peer.hasAnswer) {
      try {
        this.deps.log.debug(
          { peer: ctx.key, ms: Math.round(performance.now() - ctx.watchAt) },
          'janus: answer received',
        );
        await ctx.peer.applyAnswer(answer.sdp);
      } catch (err) {
        this.deps.log.warn({ err: String(err) }, 'janus: answer refused');
        await this.teardownPeer(handle, 'Bad answer', true);
        return this.pushError(handle, [JanusErrorCode.jsepInvalidSdp, 'Invalid answer SDP']);
      }
      if (handle.peer !== ctx) return;
      ctx.forwarder?.start();
    }
    this.pushStatus(handle, 'started');
  }

  private async teardownPeer(handle: Handle, reason: string, notify: boolean): Promise<void> {
    const ctx = handle.peer;
    if (!ctx) return;
    handle.peer = null;
    this.peers -= 1;
    ctx.conn.peers -= 1;
    ctx.forwarder?.stop();
    ctx.peer.removeAllListeners();
    const stats = ctx.forwarder?.stats;
    this.deps.log.debug({ peer: ctx.key, reason, ...stats }, 'janus: peer closed');
    this.guard('onViewerGone', () => this.deps.onViewerGone(ctx.key));
    if (notify && !handle.detached) this.push(handle, { janus: 'hangup', reason });
    await ctx.peer.close();
  }

  // ----- plumbing -----

  private sessionsOf(conn: JanusConnection): number {
    let n = 0;
    for (const s of this.sessions.values()) if (s.conn === conn) n += 1;
    return n;
  }

  private guard(what: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.deps.log.warn({ err: String(err) }, `janus: ${what} failed`);
    }
  }

  private enqueue(handle: Handle, fn: () => Promise<void> | void): Promise<void> {
    handle.queued += 1;
    const next = handle.queue
      .then(fn)
      .catch((err: unknown) => {
        this.deps.log.warn({ err: String(err) }, 'janus: plugin message failed');
      })
      .finally(() => {
        handle.queued -= 1;
      });
    handle.queue = next;
    return next;
  }

  private push(handle: Handle, msg: Reply): void {
    handle.session.conn.send({ ...msg, session_id: handle.session.id, sender: handle.id });
  }

  private pushStatus(
    handle: Handle,
    status: string,
    extra?: Record<string, unknown>,
    jsep?: Jsep,
  ): void {
    const data: UstreamerEventData = { ustreamer: 'event', result: { status, ...extra } };
    this.push(handle, {
      janus: 'event',
      plugindata: { plugin: USTREAMER_PLUGIN, data },
      ...(jsep ? { jsep } : {}),
    });
  }

  private pushError(handle: Handle, [code, reason]: readonly [number, string]): void {
    const data: UstreamerEventData = { ustreamer: 'event', error_code: code, error: reason };
    this.push(handle, { janus: 'event', plugindata: { plugin: USTREAMER_PLUGIN, data } });
  }

  private expireSessions(): void {
    const now = performance.now();
    for (const session of [...this.sessions.values()]) {
      if (now - session.lastActivity < this.timeoutMs) continue;
      this.deps.log.info({ session: session.id }, 'janus: session timed out');
      session.conn.send({ janus: 'timeout', session_id: session.id });
      this.destroySession(session);
    }
  }

  private freshId(taken: (n: number) => boolean): number {
    for (;;) {
      const n = randomInt(1, 2 ** 48);
      if (!taken(n)) return n;
    }
  }
}

function checkJsep(jsep: unknown): Jsep {
  if (!isRecord(jsep)) {
    throw new RequestError(
      JanusErrorCode.invalidElementType,
      'Invalid element type (jsep should be an object)',
    );
  }
  const { type, sdp } = jsep;
  if (type !== 'answer') {
    throw new RequestError(
      JanusErrorCode.jsepUnknownType,
      `JSEP error: unknown message type '${String(type)}'`,
    );
  }
  if (typeof sdp !== 'string' || !sdp.startsWith('v=0')) {
    throw new RequestError(JanusErrorCode.jsepInvalidSdp, 'JSEP error: invalid SDP');
  }
  return { type, sdp };
}

/** One `/janus/ws` socket: parses requests and answers them. */
class JanusConnection {
  /** Peers of this socket's handles, offers being built included. */
  peers = 0;
  readonly watches = new TokenBucket(WATCHES_PER_SECOND, WATCH_BURST);

  constructor(
    private readonly gw: JanusGateway,
    readonly guard: GuardedSocket,
  ) {}

  /** Events the client cannot do without (offer, hangup, timeout): a full buffer closes. */
  send(msg: Reply): void {
    this.guard.send(JSON.stringify(msg), { essential: true });
  }

  /** The answer to a request: out of the socket's reply budget. */
  private reply(msg: Reply): void {
    this.guard.replyWith(JSON.stringify(msg));
  }

  onMessage(data: Buffer): void {
    let req: unknown;
    try {
      req = JSON.parse(data.toString('utf8'));
    } catch (err) {
      this.reply({
        janus: 'error',
        error: {
          code: JanusErrorCode.invalidJson,
          reason: `JSON error: ${(err as Error).message}`,
        },
      });
      return;
    }
    if (!isRecord(req)) {
      this.reply({
        janus: 'error',
        error: { code: JanusErrorCode.invalidJsonObject, reason: 'JSON error: not an object' },
      });
      return;
    }
    const transaction = req['transaction'];
    const sessionId = isJanusId(req['session_id']) ? req['session_id'] : undefined;
    try {
      if (typeof transaction !== 'string' || transaction === '') {
        throw new RequestError(
          JanusErrorCode.missingMandatoryElement,
          'Missing mandatory element (transaction)',
        );
      }
      if (transaction.length > MAX_TRANSACTION_LENGTH) {
        throw new RequestError(
          JanusErrorCode.invalidElementType,
          `Invalid element type (transaction longer than ${MAX_TRANSACTION_LENGTH})`,
        );
      }
      if (typeof req['janus'] !== 'string') {
        throw new RequestError(
          JanusErrorCode.missingMandatoryElement,
          'Missing mandatory element (janus)',
        );
      }
      this.dispatch(req['janus'], req, transaction);
    } catch (err) {
      // Never throw out of a socket handler: an unexpected error is a 490 for this request.
      const known = err instanceof RequestError;
      if (!known) this.gw.deps.log.warn({ err: String(err) }, 'janus: request failed');
      this.reply({
        janus: 'error',
        ...(sessionId !== undefined ? { session_id: sessionId } : {}),
        ...(typeof transaction === 'string' && transaction.length <= MAX_TRANSACTION_LENGTH
          ? { transaction }
          : {}),
        error: known
          ? { code: err.code, reason: err.message }
          : { code: JanusErrorCode.unknown, reason: 'Internal error' },
      });
    }
  }

  private dispatch(janus: string, req: Record<string, unknown>, transaction: string): void {
    switch (janus) {
      case 'create': {
        const session = this.gw.createSession(this, req['id']);
        return this.reply({ janus: 'success', transaction, data: { id: session.id } });
      }
      case 'ping':
        this.reply({ janus: 'pong', transaction });
        this.gw.sockets.checkSession(this.guard);
        return;
      case 'info':
        return this.reply({
          janus: 'server_info',
          transaction,
          name: 'Janus WebRTC Server',
          version_string: '1.2.0',
          data_channels: true,
          plugins: { [USTREAMER_PLUGIN]: { name: 'ustreamer', version_string: 'kvm' } },
        });
      case 'claim': {
        const session = this.gw.findSession(this, req['session_id'], true);
        return this.reply({ janus: 'success', session_id: session.id, transaction });
      }
    }
    if (req['session_id'] === undefined) {
      throw new RequestError(
        JanusErrorCode.missingMandatoryElement,
        'Missing mandatory element (session_id)',
      );
    }
    const session = this.gw.findSession(this, req['session_id']);
    const sessionReply = { session_id: session.id, transaction };
    switch (janus) {
      case 'keepalive':
        this.reply({ janus: 'ack', ...sessionReply });
        this.gw.sockets.checkSession(this.guard);
        return;
      case 'attach': {
        const handle = this.gw.attach(session, req['plugin'], req['opaque_id']);
        return this.reply({ janus: 'success', ...sessionReply, data: { id: handle.id } });
      }
      case 'destroy':
        this.reply({ janus: 'success', ...sessionReply });
        this.gw.destroySession(session);
        return;
      case 'message':
      case 'trickle':
      case 'detach':
      case 'hangup':
        break;
      default:
        throw new RequestError(JanusErrorCode.unknownRequest, `Unknown request '${janus}'`);
    }
    if (req['handle_id'] === undefined) {
      throw new RequestError(
        JanusErrorCode.missingMandatoryElement,
        'Missing mandatory element (handle_id)',
      );
    }
    const handle = this.gw.findHandle(session, req['handle_id']);
    switch (janus) {
      case 'message':
        this.gw.message(handle, req['body'], req['jsep']);
        // Sent before the queued plugin events go out: they run on a later tick.
        return this.reply({
          janus: 'success',
          ...sessionReply,
          sender: handle.id,
          plugindata: { plugin: USTREAMER_PLUGIN, data: { ok: true } },
        });
      case 'trickle':
        this.gw.trickle(handle, req);
        return this.reply({ janus: 'ack', ...sessionReply });
      case 'detach':
        this.reply({ janus: 'success', ...sessionReply });
        void this.gw.detach(handle, true);
        return;
      case 'hangup':
        this.reply({ janus: 'success', ...sessionReply });
        this.gw.hangup(handle, 'Janus API');
        return;
    }
  }
}

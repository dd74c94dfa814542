/**
 * The Janus core of `/janus/ws`: the Janus API over WebSocket (subprotocol `janus-protocol`,
 * wire-protocol.md 3) with its sessions, handles, keepalives, timeouts and transactions. What a
 * handle does with media is its plugin's (plugin.ts); the official janus.js drives the pair
 * unmodified.
 *
 * Objects: a socket (JanusConnection) owns sessions; a session owns handles; a handle belongs
 * to one plugin (session-registry.ts). Sessions die with their socket, on `destroy`, and after
 * `sessionTimeoutMs` without a request naming them (Janus `timeout`).
 *
 * Reply shapes follow the capture of wire-protocol.md 3.2: a plugin message is answered with
 * `success` + `plugindata.data {ok:true}`, and the plugin's answers follow as `event`s without
 * a transaction. Plugin calls of one handle run one after another (a `watch` builds its offer
 * asynchronously; `stop`, `start`, `hangup` and `detach` wait for it).
 */
import { timingSafeEqual, createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { WebSocket } from 'ws';
import type { Logger } from '../log';
import {
  JANUS_SOCKET_LIMITS,
  SocketRegistry,
  notAWebSocket,
  ownerOf,
  type GuardedSocket,
  type SocketOwner,
} from '../ws/socket-guard';
import type { JanusPlugin } from './plugin';
import { JanusErrorCode, JanusRequestError, isJanusId, isRecord, type Jsep } from './protocol';
import {
  SessionRegistry,
  type JanusHandle,
  type JanusSession,
  type JanusSocket,
} from './session-registry';

export interface JanusCoreOptions {
  /** The plugins clients may attach to, by their wire name. */
  plugins: readonly JanusPlugin[];
  log: Logger;
  /** Janus session timeout (SPEC 7: 60 s); shortened by tests. */
  sessionTimeoutMs?: number;
  /** The server's socket registry (app.ts); a gateway on its own keeps one of its own. */
  sockets?: SocketRegistry;
  /** Runs at each new `/janus/ws` socket (the WebRTC prewarm, see webrtc.ts). */
  onSocket?: () => void;
  /** Janus's `apisecret` / `token` checks (config `webrtc.janus_*`); off when absent. */
  auth?: JanusAuthOptions;
}

/**
 * Janus's own request authentication (janus.jcfg `api_secret`, `token_auth`), on top of the
 * login session the socket already needed. With either set, every request but `info` and
 * `ping` must carry a right `apisecret` or a right `token` (either suffices when both are
 * set, as in Janus); otherwise it is answered with error 403. `token` is the login session's
 * own token (the one the socket was opened with): Janus's stored tokens are our sessions.
 */
export interface JanusAuthOptions {
  /** The shared secret every request must carry as `apisecret`; null: none asked. */
  apiSecret: string | null;
  /** Every request must carry the socket's login session token as `token`. */
  tokenAuth: boolean;
}

export const JANUS_UNAUTHORIZED_REASON = 'Unauthorized request (wrong or missing secret/token)';

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** Constant-time text comparison (through hashes, so the lengths leak nothing either). */
function sameSecret(given: unknown, expected: string): boolean {
  return typeof given === 'string' && timingSafeEqual(sha256(given), sha256(expected));
}

/** Whether a request passes the Janus secret/token check (see JanusAuthOptions). */
export function janusRequestAuthorized(
  auth: JanusAuthOptions | undefined,
  req: Record<string, unknown>,
  socketToken: string | null,
): boolean {
  if (!auth || (auth.apiSecret === null && !auth.tokenAuth)) return true;
  if (auth.apiSecret !== null && sameSecret(req['apisecret'], auth.apiSecret)) return true;
  return auth.tokenAuth && socketToken !== null && sameSecret(req['token'], socketToken);
}

export type JanusSocketInfo = Omit<SocketOwner, 'kind' | 'token'> & { token?: string | null };

const DEFAULT_SESSION_TIMEOUT_MS = 60_000;
/** Plugin messages queued or running per handle (each `watch` builds a peer). */
export const MAX_QUEUED_PER_HANDLE = 8;
/** janus.js sends 12 characters; anything longer is refused and not echoed. */
export const MAX_TRANSACTION_LENGTH = 64;
/** janus.js sends `ustreamer-` and 12 characters; kept per handle. */
export const MAX_OPAQUE_ID_LENGTH = 256;
/** Candidates in one trickle request. */
export const MAX_CANDIDATES_PER_TRICKLE = 32;

type Reply = Record<string, unknown>;
type Session = JanusSession<JanusConnection>;
type Handle = JanusHandle<JanusConnection>;

/** Serves `gateway` on `/janus/ws` of `app` and closes it with the app. */
export function mountJanus(app: FastifyInstance, gateway: JanusGateway): JanusGateway {
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

export class JanusGateway {
  private readonly registry = new SessionRegistry<JanusConnection>();
  private readonly plugins: ReadonlyMap<string, JanusPlugin>;
  private readonly connections = new Set<JanusConnection>();
  private readonly timeoutMs: number;
  private readonly sweep: NodeJS.Timeout;
  private closed = false;
  readonly sockets: SocketRegistry;
  readonly log: Logger;
  readonly auth: JanusAuthOptions | undefined;

  constructor(private readonly opts: JanusCoreOptions) {
    this.auth = opts.auth;
    this.log = opts.log;
    this.plugins = new Map(opts.plugins.map((p) => [p.name, p]));
    this.sockets = opts.sockets ?? new SocketRegistry(opts.log);
    this.timeoutMs = opts.sessionTimeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS;
    this.sweep = setInterval(
      () => this.expireSessions(),
      Math.max(20, Math.min(2_000, this.timeoutMs / 4)),
    );
    this.sweep.unref();
  }

  get sessionCount(): number {
    return this.registry.sessionCount;
  }

  get handleCount(): number {
    return this.registry.handleCount;
  }

  /** Peer connections over all plugins, offers being built included. */
  get peerCount(): number {
    let n = 0;
    for (const plugin of this.plugins.values()) n += plugin.peerCount;
    return n;
  }

  /** `server_info.plugins`. */
  get pluginInfo(): Record<string, JanusPlugin['info']> {
    return Object.fromEntries([...this.plugins.values()].map((p) => [p.name, p.info]));
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
      for (const session of this.registry.ownedBy(conn)) this.destroySession(session);
    });
    this.opts.onSocket?.();
  }

  /** Closes the sockets opened with this login session (logout, expiry). */
  endAuthSession(tokenHash: string): void {
    this.sockets.endSession(tokenHash, 'session ended');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.sweep);
    for (const plugin of this.plugins.values()) plugin.close();
    const closing: Promise<void>[] = [];
    for (const session of this.registry.all()) closing.push(...this.destroySession(session));
    for (const conn of this.connections) conn.guard.close(1001, 'shutting down');
    await Promise.all(closing);
  }

  // ----- requests (called by JanusConnection) -----

  createSession(conn: JanusConnection, wanted: unknown): Session {
    const session = this.registry.create(conn, wanted);
    this.log.debug({ session: session.id, remote: conn.remote }, 'janus: session created');
    return session;
  }

  findSession(conn: JanusConnection, id: unknown, claim = false): Session {
    return this.registry.find(conn, id, claim);
  }

  attach(session: Session, name: unknown, opaqueId: unknown): Handle {
    if (name === undefined) {
      throw new JanusRequestError(
        JanusErrorCode.missingMandatoryElement,
        'Missing mandatory element (plugin)',
      );
    }
    if (typeof name !== 'string') {
      throw new JanusRequestError(
        JanusErrorCode.invalidElementType,
        'Invalid element type (plugin should be a string)',
      );
    }
    const plugin = this.plugins.get(name);
    if (!plugin) {
      throw new JanusRequestError(JanusErrorCode.pluginNotFound, `No such plugin '${name}'`);
    }
    if (typeof opaqueId === 'string' && opaqueId.length > MAX_OPAQUE_ID_LENGTH) {
      throw new JanusRequestError(
        JanusErrorCode.invalidElementType,
        `Invalid element type (opaque_id longer than ${MAX_OPAQUE_ID_LENGTH})`,
      );
    }
    const handle = this.registry.attach(
      session,
      plugin,
      typeof opaqueId === 'string' ? opaqueId : null,
    );
    plugin.attach(handle);
    return handle;
  }

  findHandle(session: Session, id: unknown): Handle {
    return this.registry.findHandle(session, id);
  }

  /** Checks a plugin message synchronously (errors become the reply), then queues it. */
  message(handle: Handle, body: unknown, jsep: unknown): void {
    if (body === undefined) {
      throw new JanusRequestError(
        JanusErrorCode.missingMandatoryElement,
        'Missing mandatory element (body)',
      );
    }
    if (!isRecord(body)) {
      throw new JanusRequestError(
        JanusErrorCode.invalidElementType,
        'Invalid element type (body should be an object)',
      );
    }
    const answer = jsep === undefined ? null : checkJsep(jsep);
    if (handle.pending >= MAX_QUEUED_PER_HANDLE) {
      throw new JanusRequestError(
        JanusErrorCode.unknown,
        'Too many requests in flight on this handle',
      );
    }
    handle.plugin.admit(handle, body, answer);
    this.enqueue(handle, () => handle.plugin.message(handle, body, answer));
  }

  trickle(handle: Handle, req: Record<string, unknown>): void {
    const list: unknown[] = Array.isArray(req['candidates'])
      ? (req['candidates'] as unknown[])
      : req['candidate'] !== undefined
        ? [req['candidate']]
        : [];
    if (list.length === 0 && req['candidate'] === undefined && req['candidates'] === undefined) {
      throw new JanusRequestError(
        JanusErrorCode.missingMandatoryElement,
        'Missing mandatory element (candidate|candidates)',
      );
    }
    if (list.length > MAX_CANDIDATES_PER_TRICKLE) {
      throw new JanusRequestError(
        JanusErrorCode.invalidElementType,
        `Invalid element type (at most ${MAX_CANDIDATES_PER_TRICKLE} candidates per trickle)`,
      );
    }
    handle.plugin.trickle(handle, list);
  }

  hangup(handle: Handle, reason: string): void {
    void this.enqueue(handle, () => handle.plugin.hangup(handle, reason));
  }

  detach(handle: Handle, notify: boolean): Promise<void> {
    this.registry.removeHandle(handle);
    return this.enqueue(handle, async () => {
      await handle.plugin.detach(handle, notify);
      if (notify) handle.push({ janus: 'detached' });
    });
  }

  /** Destroys a session and its handles without telling the client (destroy, timeout, close). */
  destroySession(session: Session): Promise<void>[] {
    if (!this.registry.remove(session)) return [];
    this.log.debug({ session: session.id }, 'janus: session destroyed');
    return [...session.handles.values()].map((h) => this.detach(h, false));
  }

  // ----- plumbing -----

  private enqueue(handle: Handle, fn: () => Promise<void>): Promise<void> {
    return handle.enqueue(fn, (err: unknown) => {
      this.log.warn({ err: String(err) }, 'janus: plugin message failed');
    });
  }

  private expireSessions(): void {
    for (const session of this.registry.idle(this.timeoutMs)) {
      this.log.info({ session: session.id }, 'janus: session timed out');
      session.socket.send({ janus: 'timeout', session_id: session.id });
      this.destroySession(session);
    }
  }
}

function checkJsep(jsep: unknown): Jsep {
  if (!isRecord(jsep)) {
    throw new JanusRequestError(
      JanusErrorCode.invalidElementType,
      'Invalid element type (jsep should be an object)',
    );
  }
  const { type, sdp } = jsep;
  if (type !== 'answer') {
    throw new JanusRequestError(
      JanusErrorCode.jsepUnknownType,
      `JSEP error: unknown message type '${String(type)}'`,
    );
  }
  if (typeof sdp !== 'string' || !sdp.startsWith('v=0')) {
    throw new JanusRequestError(JanusErrorCode.jsepInvalidSdp, 'JSEP error: invalid SDP');
  }
  return { type, sdp };
}

/** One `/janus/ws` socket: parses requests and answers them. */
class JanusConnection implements JanusSocket {
  constructor(
    private readonly gw: JanusGateway,
    readonly guard: GuardedSocket,
  ) {}

  get remote(): string {
    return this.guard.owner.remote;
  }

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
        throw new JanusRequestError(
          JanusErrorCode.missingMandatoryElement,
          'Missing mandatory element (transaction)',
        );
      }
      if (transaction.length > MAX_TRANSACTION_LENGTH) {
        throw new JanusRequestError(
          JanusErrorCode.invalidElementType,
          `Invalid element type (transaction longer than ${MAX_TRANSACTION_LENGTH})`,
        );
      }
      if (typeof req['janus'] !== 'string') {
        throw new JanusRequestError(
          JanusErrorCode.missingMandatoryElement,
          'Missing mandatory element (janus)',
        );
      }
      this.dispatch(req['janus'], req, transaction);
    } catch (err) {
      // Never throw out of a socket handler: an unexpected error is a 490 for this request.
      const known = err instanceof JanusRequestError;
      if (!known) this.gw.log.warn({ err: String(err) }, 'janus: request failed');
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
          plugins: this.gw.pluginInfo,
        });
    }
    // Janus answers `info` and `ping` to anyone; everything else needs the secret or token.
    if (!janusRequestAuthorized(this.gw.auth, req, this.guard.owner.token)) {
      throw new JanusRequestError(JanusErrorCode.unauthorized, JANUS_UNAUTHORIZED_REASON);
    }
    switch (janus) {
      case 'create': {
        const session = this.gw.createSession(this, req['id']);
        return this.reply({ janus: 'success', transaction, data: { id: session.id } });
      }
      case 'claim': {
        const session = this.gw.findSession(this, req['session_id'], true);
        return this.reply({ janus: 'success', session_id: session.id, transaction });
      }
    }
    if (req['session_id'] === undefined) {
      throw new JanusRequestError(
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
        throw new JanusRequestError(JanusErrorCode.unknownRequest, `Unknown request '${janus}'`);
    }
    if (req['handle_id'] === undefined) {
      throw new JanusRequestError(
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
          plugindata: { plugin: handle.plugin.name, data: { ok: true } },
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

/**
 * The Janus sessions and handles of one gateway. Sessions belong to a socket; a session owns
 * its handles; every count (sessions, handles, sessions of one socket) is derived from what
 * is registered, never kept beside it.
 *
 * Ids are random positive integers below 2^48 (53-bit safe, like Janus's), or the one a
 * client asks for in `create {id}` (wire-protocol.md 3).
 */
import { randomInt } from 'node:crypto';
import type { JanusPlugin, PluginHandle, PluginSocket } from './plugin';
import { JanusErrorCode, JanusRequestError, isJanusId } from './protocol';
import { SerialQueue } from '../sync/serial-queue';

export const MAX_SESSIONS_PER_SOCKET = 8;
export const MAX_HANDLES_PER_SESSION = 8;

/** What the registry needs of a socket: events for its handles go out through it. */
export interface JanusSocket extends PluginSocket {
  send(msg: Record<string, unknown>): void;
}

export class JanusSession<S extends JanusSocket = JanusSocket> {
  readonly handles = new Map<number, JanusHandle<S>>();

  constructor(
    readonly id: number,
    public socket: S,
    public lastActivity: number,
  ) {}
}

export class JanusHandle<S extends JanusSocket = JanusSocket> implements PluginHandle {
  detached = false;
  /** This handle's plugin calls, one after another. */
  private readonly queue = new SerialQueue();

  constructor(
    readonly id: number,
    readonly session: JanusSession<S>,
    readonly plugin: JanusPlugin,
    readonly opaqueId: string | null,
  ) {}

  /** Plugin calls running or waiting on this handle. */
  get pending(): number {
    return this.queue.pending;
  }

  get sessionId(): number {
    return this.session.id;
  }

  get socket(): S {
    return this.session.socket;
  }

  push(event: Record<string, unknown>): void {
    this.session.socket.send({ ...event, session_id: this.session.id, sender: this.id });
  }

  /** Runs `fn` after everything queued before it; a throw goes to `onError`, not further. */
  enqueue(fn: () => Promise<void> | void, onError: (err: unknown) => void): Promise<void> {
    return this.queue.run(async () => {
      try {
        await fn();
      } catch (err) {
        onError(err);
      }
    });
  }
}

export interface SessionRegistryOptions {
  now?: () => number;
  /** Id source (tests); random below 2^48 by default. */
  randomId?: () => number;
}

export class SessionRegistry<S extends JanusSocket = JanusSocket> {
  private readonly sessions = new Map<number, JanusSession<S>>();
  private readonly now: () => number;
  private readonly randomId: () => number;

  constructor(opts: SessionRegistryOptions = {}) {
    this.now = opts.now ?? (() => performance.now());
    this.randomId = opts.randomId ?? (() => randomInt(1, 2 ** 48));
  }

  get sessionCount(): number {
    return this.sessions.size;
  }

  get handleCount(): number {
    let n = 0;
    for (const s of this.sessions.values()) n += s.handles.size;
    return n;
  }

  sessionsOf(socket: S): number {
    let n = 0;
    for (const s of this.sessions.values()) if (s.socket === socket) n += 1;
    return n;
  }

  /** Every session of `socket` (a snapshot: safe to remove while iterating). */
  ownedBy(socket: S): JanusSession<S>[] {
    return [...this.sessions.values()].filter((s) => s.socket === socket);
  }

  all(): JanusSession<S>[] {
    return [...this.sessions.values()];
  }

  /** Janus `create`: a fresh id, or `wanted` when the client names one. */
  create(socket: S, wanted?: unknown): JanusSession<S> {
    if (this.sessionsOf(socket) >= MAX_SESSIONS_PER_SOCKET) {
      throw new JanusRequestError(JanusErrorCode.unknown, 'Too many sessions on this connection');
    }
    let id: number;
    if (wanted !== undefined) {
      if (!isJanusId(wanted)) {
        throw new JanusRequestError(
          JanusErrorCode.invalidElementType,
          'Invalid element type (id should be a positive integer)',
        );
      }
      if (this.sessions.has(wanted)) {
        throw new JanusRequestError(JanusErrorCode.sessionConflict, `Session ID already in use`);
      }
      id = wanted;
    } else {
      id = this.freshId((n) => this.sessions.has(n));
    }
    const session = new JanusSession(id, socket, this.now());
    this.sessions.set(id, session);
    return session;
  }

  /**
   * The session `id` of `socket`, its activity stamped (any request naming it keeps it
   * alive). `claim` moves another socket's session to this one (janus.js reconnect).
   */
  find(socket: S, id: unknown, claim = false): JanusSession<S> {
    const session = isJanusId(id) ? this.sessions.get(id) : undefined;
    if (!session || (session.socket !== socket && !claim)) {
      throw new JanusRequestError(JanusErrorCode.sessionNotFound, `No such session ${String(id)}`);
    }
    if (claim && session.socket !== socket && this.sessionsOf(socket) >= MAX_SESSIONS_PER_SOCKET) {
      throw new JanusRequestError(JanusErrorCode.unknown, 'Too many sessions on this connection');
    }
    session.lastActivity = this.now();
    if (claim) session.socket = socket;
    return session;
  }

  /** Removes a session; false when it was gone already. Its handles are the caller's to detach. */
  remove(session: JanusSession<S>): boolean {
    if (this.sessions.get(session.id) !== session) return false;
    this.sessions.delete(session.id);
    return true;
  }

  /** Sessions no request has named for `timeoutMs` (Janus `timeout`). */
  idle(timeoutMs: number): JanusSession<S>[] {
    const now = this.now();
    return this.all().filter((s) => now - s.lastActivity >= timeoutMs);
  }

  attach(session: JanusSession<S>, plugin: JanusPlugin, opaqueId: string | null): JanusHandle<S> {
    if (session.handles.size >= MAX_HANDLES_PER_SESSION) {
      throw new JanusRequestError(
        JanusErrorCode.pluginAttach,
        "Couldn't attach to plugin: too many handles",
      );
    }
    const id = this.freshId((n) => session.handles.has(n));
    const handle = new JanusHandle(id, session, plugin, opaqueId);
    session.handles.set(id, handle);
    return handle;
  }

  findHandle(session: JanusSession<S>, id: unknown): JanusHandle<S> {
    const handle = isJanusId(id) ? session.handles.get(id) : undefined;
    if (!handle) {
      throw new JanusRequestError(
        JanusErrorCode.handleNotFound,
        `No such handle ${String(id)} in session ${session.id}`,
      );
    }
    return handle;
  }

  /** Marks a handle detached and drops it from its session. */
  removeHandle(handle: JanusHandle<S>): void {
    handle.detached = true;
    handle.session.handles.delete(handle.id);
  }

  private freshId(taken: (n: number) => boolean): number {
    for (;;) {
      const n = this.randomId();
      if (!taken(n)) return n;
    }
  }
}

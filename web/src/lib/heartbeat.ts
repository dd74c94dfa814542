/**
 * Connection heartbeat (SPEC 4 "Connection heartbeat"). A plain class; React only subscribes.
 *
 * | state   | means                                   | leaves on                              |
 * |---------|-----------------------------------------|----------------------------------------|
 * | idle    | not started                             | start() → alive                        |
 * | alive   | ping every 2 s, pongs arriving          | 10 s without pong → lost               |
 * | lost    | overlay shows; auth check every 1 s     | check ok → alive (sockets re-created), |
 * |         |                                         | 401/403 → denied                       |
 * | denied  | session is gone; nothing runs           | (final; the session-lost redirect)     |
 * | stopped | stop() was called                       | start() → alive                        |
 *
 * stop() may come in any state. The table is HEARTBEAT_TRANSITIONS, checked on every move (an
 * illegal one throws in tests): start() while denied is a caller's bug, since the session is
 * gone; the shell stop()s first.
 */
import {
  HEARTBEAT_LOST_MS,
  HEARTBEAT_PING_MS,
  LOGIN_RECHECK_CUTOFF_MS,
  LOGIN_RECHECK_MS,
} from '@kvm/protocol/constants';
import { PING_FRAME, type EventFrame } from '@kvm/protocol/events';
import { SESSION_ENDED_CLOSE_CODE } from './event-socket';
import { checkTransition, type TransitionMap } from './transitions';

export type HeartbeatState = 'idle' | 'alive' | 'lost' | 'denied' | 'stopped';

export const HEARTBEAT_TRANSITIONS: TransitionMap<HeartbeatState> = {
  idle: ['alive', 'stopped'],
  alive: ['lost', 'stopped'],
  lost: ['alive', 'denied', 'stopped'],
  denied: ['stopped'],
  stopped: ['alive'],
};

/** Result of one login-status check: session fine, session gone (401/403), or no answer. */
export type AuthCheckOutcome = 'ok' | 'denied' | 'failed';

/** What the heartbeat needs from the event socket (EventSocket fits). */
export interface HeartbeatSocket {
  send(frame: EventFrame): boolean;
  on(type: 'pong', handler: () => void): () => void;
  onClose(handler: (code: number) => void): () => void;
  /** (Re-)creates the socket. */
  connect(): void;
}

export interface HeartbeatOptions {
  socket: HeartbeatSocket;
  /** GET /api/auth/check; must honour the signal. */
  checkAuth(signal: AbortSignal): Promise<AuthCheckOutcome>;
  now?: () => number;
}

export class Heartbeat {
  private readonly socket: HeartbeatSocket;
  private readonly checkAuth: HeartbeatOptions['checkAuth'];
  private readonly now: () => number;
  private state: HeartbeatState = 'idle';
  private lastPong = 0;
  private lastTick = 0;
  private pingTimer: ReturnType<typeof setInterval> | undefined;
  private recheckTimer: ReturnType<typeof setInterval> | undefined;
  private inFlight: AbortController | null = null;
  /** Bumped on every state change, so a late check result of an earlier round is ignored. */
  private round = 0;
  private readonly listeners = new Set<() => void>();
  private readonly reconnectedCallbacks = new Set<() => void>();
  private unsubscribeSocket: (() => void) | null = null;

  constructor(options: HeartbeatOptions) {
    this.socket = options.socket;
    this.checkAuth = options.checkAuth;
    this.now = options.now ?? (() => Date.now());
  }

  getState = (): HeartbeatState => this.state;

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  /**
   * Runs after a lost connection came back and the sockets were re-created (SPEC 4: "a
   * reconnected callback runs"). Later subsystems (stream, media socket) re-open here.
   */
  onReconnected(callback: () => void): () => void {
    this.reconnectedCallbacks.add(callback);
    return () => this.reconnectedCallbacks.delete(callback);
  }

  /** Starts pinging. The caller has already connected the socket. */
  start(): void {
    if (this.state === 'alive' || this.state === 'lost') return;
    if (!this.becomeAlive()) return;
    const offPong = this.socket.on('pong', () => {
      this.lastPong = this.now();
    });
    const offClose = this.socket.onClose((code) => {
      // The server closes with 4001 when the session ended: no need to wait 10 s to find out.
      if (code === SESSION_ENDED_CLOSE_CODE && this.state === 'alive') this.markLost();
    });
    this.unsubscribeSocket = () => {
      offPong();
      offClose();
    };
  }

  stop(): void {
    this.clearTimers();
    this.unsubscribeSocket?.();
    this.unsubscribeSocket = null;
    this.setState('stopped');
  }

  /** False when the move is refused (start() while denied, outside the tests). */
  private becomeAlive(): boolean {
    this.clearTimers();
    if (!this.setState('alive')) return false;
    this.lastPong = this.now();
    this.lastTick = this.lastPong;
    this.pingTimer = setInterval(() => this.pingTick(), HEARTBEAT_PING_MS);
    return true;
  }

  private pingTick(): void {
    const now = this.now();
    // Chromium throttles timers of hidden tabs (down to one run a minute). A tick that comes
    // far too late says nothing about the server: give it a fresh window instead of declaring
    // the connection lost.
    if (now - this.lastTick > HEARTBEAT_LOST_MS) this.lastPong = now;
    this.lastTick = now;
    // SPEC 4: no pong for 10 s marks the connection lost.
    if (now - this.lastPong >= HEARTBEAT_LOST_MS) {
      this.markLost();
      return;
    }
    this.socket.send(PING_FRAME);
  }

  private markLost(): void {
    this.clearTimers();
    this.setState('lost');
    // SPEC 4: the login status is polled every 1 s until it succeeds.
    this.recheckTimer = setInterval(() => this.recheckTick(), LOGIN_RECHECK_MS);
  }

  private recheckTick(): void {
    if (this.inFlight) return; // One check at a time; a slow one is cut off below.
    const round = this.round;
    const controller = new AbortController();
    this.inFlight = controller;
    // SPEC 4 says "a failure repeating within 5 s also ends the check". Our reading: one check
    // may not hang for longer than LOGIN_RECHECK_CUTOFF_MS; it is aborted then, counts as
    // failed, and the next 1-s tick tries again. (The polling itself only ends on success or on
    // 401/403.)
    const cutoff = setTimeout(() => controller.abort(), LOGIN_RECHECK_CUTOFF_MS);
    const settle = (outcome: AuthCheckOutcome) => {
      clearTimeout(cutoff);
      if (this.inFlight === controller) this.inFlight = null;
      if (round !== this.round || this.state !== 'lost') return;
      if (outcome === 'ok') this.recover();
      else if (outcome === 'denied') this.deny();
    };
    this.checkAuth(controller.signal).then(settle, () => settle('failed'));
  }

  private recover(): void {
    // SPEC 4: on success the sockets are re-created and the reconnected callbacks run.
    this.socket.connect();
    this.becomeAlive();
    for (const callback of this.reconnectedCallbacks) callback();
  }

  private deny(): void {
    // SPEC 4: a 401 or 403 stops polling; the session-lost redirect is the subscriber's job.
    this.clearTimers();
    this.setState('denied');
  }

  private clearTimers(): void {
    if (this.pingTimer !== undefined) clearInterval(this.pingTimer);
    if (this.recheckTimer !== undefined) clearInterval(this.recheckTimer);
    this.pingTimer = undefined;
    this.recheckTimer = undefined;
    this.inFlight?.abort();
    this.inFlight = null;
  }

  /** Whether the state moved (a move to the same state only starts a new round). */
  private setState(state: HeartbeatState): boolean {
    this.round += 1;
    if (!checkTransition('Heartbeat', HEARTBEAT_TRANSITIONS, this.state, state)) return false;
    this.state = state;
    for (const listener of this.listeners) listener();
    return true;
  }
}

/**
 * Connection heartbeat (SPEC 4 "Connection heartbeat"). A plain class; React only subscribes.
 *
 * | state   | means                                   | leaves on                              |
 * |---------|-----------------------------------------|----------------------------------------|
 * | idle    | not started                             | start() → alive                        |
 * | alive   | ping every 2 s, pongs arriving          | 10 s without pong → lost               |
 * | lost    | overlay shows; auth check every 1 s     | check ok → alive (sockets re-created), |
 * |         | (the check); a failure repeating within | 401/403 → denied; after an ended check |
 * |         | 5 s of the previous one ends the check: | a pong on the re-created socket →      |
 * |         | the socket is re-created and pinged,    | alive                                  |
 * |         | 10 s without a pong start a new check   |                                        |
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
import { checkTransition, type TransitionMap } from '@kvm/protocol/transitions';

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
  /** When the current check last failed (SPEC 4's quick-repeat cutoff counts from it). */
  private lastFailureAt: number | null = null;
  /** Lost, the check ended, the socket re-created: a pong now means the device is back. */
  private awaitingPong = false;
  /** The re-created socket closed (the server is not back yet): opened again at the next tick. */
  private socketClosed = false;
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
      // A pong on the socket re-created after an ended check: the device and the session
      // (the socket needs one) are back.
      if (this.state === 'lost' && this.awaitingPong) this.recover(false);
    });
    const offClose = this.socket.onClose((code) => {
      this.socketClosed = true;
      // The server closes with 4001 when the session ended: no need to wait 10 s to find out.
      if (code !== SESSION_ENDED_CLOSE_CODE) return;
      if (this.state === 'alive') this.markLost();
      else if (this.state === 'lost' && this.awaitingPong) this.startCheck();
    });
    this.unsubscribeSocket = () => {
      offPong();
      offClose();
    };
  }

  stop(): void {
    this.clearTimers();
    this.awaitingPong = false;
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
    // SPEC 4: no pong for 10 s marks the connection lost (again, after an ended check).
    if (now - this.lastPong >= HEARTBEAT_LOST_MS) {
      if (this.state === 'lost') this.startCheck();
      else this.markLost();
      return;
    }
    if (this.awaitingPong && this.socketClosed) {
      // After an ended check: one socket attempt per ping instead of one HTTP check a second.
      this.socketClosed = false;
      this.socket.connect();
      return;
    }
    this.socket.send(PING_FRAME);
  }

  private markLost(): void {
    this.clearTimers();
    this.setState('lost');
    this.startCheck();
  }

  /** SPEC 4: the login status is polled every 1 s until it succeeds (the check). */
  private startCheck(): void {
    this.clearTimers();
    this.round += 1;
    this.awaitingPong = false;
    this.lastFailureAt = null;
    this.recheckTimer = setInterval(() => this.recheckTick(), LOGIN_RECHECK_MS);
  }

  private recheckTick(): void {
    if (this.inFlight) return; // One check at a time.
    const round = this.round;
    const controller = new AbortController();
    this.inFlight = controller;
    // A request is bounded by the API's own timeout (30 s), not here.
    const settle = (outcome: AuthCheckOutcome) => {
      if (this.inFlight === controller) this.inFlight = null;
      if (round !== this.round || this.state !== 'lost') return;
      if (outcome === 'ok') this.recover(true);
      else if (outcome === 'denied') this.deny();
      else this.checkFailed();
    };
    this.checkAuth(controller.signal).then(settle, () => settle('failed'));
  }

  /**
   * SPEC 4: "a failure repeating within 5 s also ends the check". A failure that comes within
   * LOGIN_RECHECK_CUTOFF_MS of the previous one (the device refuses at once: down, rebooting)
   * ends the 1-s polling; failures further apart (each request slow to fail) keep it going.
   * An ended check does not give up on the device: the event socket is re-created and pinged,
   * a pong brings the console back, and 10 s without one start a new check (SPEC's loss rule).
   */
  private checkFailed(): void {
    const now = this.now();
    const previous = this.lastFailureAt;
    this.lastFailureAt = now;
    if (previous === null || now - previous > LOGIN_RECHECK_CUTOFF_MS) return;
    this.clearTimers();
    this.round += 1;
    this.awaitingPong = true;
    this.lastPong = now;
    this.lastTick = now;
    this.socketClosed = false;
    this.socket.connect();
    this.pingTimer = setInterval(() => this.pingTick(), HEARTBEAT_PING_MS);
  }

  /** Whether the current check ended and the heartbeat waits for a pong (for tests). */
  get checkEnded(): boolean {
    return this.state === 'lost' && this.awaitingPong;
  }

  private recover(reconnectSocket: boolean): void {
    // SPEC 4: on success the sockets are re-created and the reconnected callbacks run (after
    // an ended check the event socket is new already).
    this.awaitingPong = false;
    if (reconnectSocket) this.socket.connect();
    this.becomeAlive();
    for (const callback of this.reconnectedCallbacks) callback();
  }

  private deny(): void {
    this.awaitingPong = false;
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

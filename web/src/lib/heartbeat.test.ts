import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  HEARTBEAT_LOST_MS,
  HEARTBEAT_PING_MS,
  LOGIN_RECHECK_CUTOFF_MS,
  LOGIN_RECHECK_MS,
} from '@kvm/protocol/constants';
import { FakeWebSocket } from '../test/fake-websocket';
import { EventSocket } from './event-socket';
import { HEARTBEAT_TRANSITIONS, Heartbeat, type AuthCheckOutcome } from './heartbeat';
import { IllegalTransitionError } from '@kvm/protocol/transitions';

function setup(checkAuth: (signal: AbortSignal) => Promise<AuthCheckOutcome>) {
  const socket = new EventSocket({
    url: () => 'ws://device/api/ws',
    createSocket: (u) => new FakeWebSocket(u),
  });
  const check = vi.fn(checkAuth);
  const heartbeat = new Heartbeat({ socket, checkAuth: check });
  socket.connect();
  FakeWebSocket.last().open();
  heartbeat.start();
  return { socket, heartbeat, check };
}

const pings = (ws: FakeWebSocket) => ws.sentFrames().filter((f) => f.event_type === 'ping');

describe('Heartbeat', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    FakeWebSocket.reset();
  });
  afterEach(() => vi.useRealTimers());

  it('sends {"event_type":"ping","event":{}} every 2 s', () => {
    setup(async () => 'ok');
    const ws = FakeWebSocket.last();
    vi.advanceTimersByTime(HEARTBEAT_PING_MS - 1);
    expect(pings(ws)).toHaveLength(0);
    vi.advanceTimersByTime(1);
    expect(ws.sent[0]).toBe('{"event_type":"ping","event":{}}');
    vi.advanceTimersByTime(HEARTBEAT_PING_MS * 3);
    expect(pings(ws)).toHaveLength(4);
  });

  it('stays alive while pongs arrive', () => {
    const { heartbeat } = setup(async () => 'ok');
    const ws = FakeWebSocket.last();
    for (let i = 0; i < 20; i += 1) {
      vi.advanceTimersByTime(HEARTBEAT_PING_MS);
      ws.receiveFrame('pong');
    }
    expect(heartbeat.getState()).toBe('alive');
  });

  it('marks the connection lost after 10 s without a pong, not before', () => {
    const { heartbeat } = setup(async () => 'ok');
    const ws = FakeWebSocket.last();
    vi.advanceTimersByTime(HEARTBEAT_PING_MS);
    ws.receiveFrame('pong'); // last pong at t = 2 s
    vi.advanceTimersByTime(HEARTBEAT_LOST_MS - HEARTBEAT_PING_MS); // t = 10 s: 8 s of silence
    expect(heartbeat.getState()).toBe('alive');
    vi.advanceTimersByTime(HEARTBEAT_PING_MS); // t = 12 s: 10 s of silence
    expect(heartbeat.getState()).toBe('lost');
    const before = pings(ws).length;
    vi.advanceTimersByTime(HEARTBEAT_PING_MS * 3);
    expect(pings(ws)).toHaveLength(before); // no pings while lost
  });

  it('rechecks the login every 1 s while lost, then re-creates the socket and runs the callbacks', async () => {
    let outcome: AuthCheckOutcome = 'failed';
    const { heartbeat, check } = setup(async () => outcome);
    const reconnected = vi.fn();
    heartbeat.onReconnected(reconnected);
    const first = FakeWebSocket.last();
    await vi.advanceTimersByTimeAsync(HEARTBEAT_LOST_MS);
    expect(heartbeat.getState()).toBe('lost');
    expect(check).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(LOGIN_RECHECK_MS);
    expect(check).toHaveBeenCalledTimes(1);
    expect(FakeWebSocket.instances).toHaveLength(1);

    outcome = 'ok';
    await vi.advanceTimersByTimeAsync(LOGIN_RECHECK_MS);
    expect(heartbeat.getState()).toBe('alive');
    expect(FakeWebSocket.instances).toHaveLength(2);
    expect(first.closed).toBe(true);
    expect(reconnected).toHaveBeenCalledTimes(1);

    // Pinging resumes on the new socket and polling has stopped.
    const second = FakeWebSocket.last();
    second.open();
    await vi.advanceTimersByTimeAsync(HEARTBEAT_PING_MS);
    expect(pings(second)).toHaveLength(1);
    expect(check).toHaveBeenCalledTimes(2);
  });

  it('stops polling on 401/403 and reports denied', async () => {
    const { heartbeat, check } = setup(async () => 'denied');
    const states: string[] = [];
    heartbeat.subscribe(() => states.push(heartbeat.getState()));
    await vi.advanceTimersByTimeAsync(HEARTBEAT_LOST_MS + LOGIN_RECHECK_MS);
    expect(heartbeat.getState()).toBe('denied');
    expect(states).toEqual(['lost', 'denied']);
    await vi.advanceTimersByTimeAsync(LOGIN_RECHECK_MS * 10);
    expect(check).toHaveBeenCalledTimes(1);
    expect(FakeWebSocket.instances).toHaveLength(1);
  });

  it('ends the check when a failure repeats within 5 s (SPEC 4), re-creates the socket, and a pong brings it back', async () => {
    const { heartbeat, check } = setup(async () => 'failed');
    const reconnected = vi.fn();
    heartbeat.onReconnected(reconnected);
    await vi.advanceTimersByTimeAsync(HEARTBEAT_LOST_MS + LOGIN_RECHECK_MS);
    expect(check).toHaveBeenCalledTimes(1);
    expect(heartbeat.checkEnded).toBe(false);
    await vi.advanceTimersByTimeAsync(LOGIN_RECHECK_MS); // second failure, 1 s after the first
    expect(check).toHaveBeenCalledTimes(2);
    expect(heartbeat.checkEnded).toBe(true);
    expect(heartbeat.getState()).toBe('lost'); // the overlay stays
    expect(FakeWebSocket.instances).toHaveLength(2); // the event socket is re-created
    // The polling has ended: no more checks while the new socket is given its 10 s.
    await vi.advanceTimersByTimeAsync(HEARTBEAT_PING_MS * 2);
    expect(check).toHaveBeenCalledTimes(2);

    const fresh = FakeWebSocket.last();
    fresh.open();
    await vi.advanceTimersByTimeAsync(HEARTBEAT_PING_MS);
    expect(pings(fresh).length).toBeGreaterThan(0); // pinged like a live socket
    fresh.receiveFrame('pong');
    expect(heartbeat.getState()).toBe('alive');
    expect(reconnected).toHaveBeenCalledTimes(1);
    expect(FakeWebSocket.instances).toHaveLength(2); // not re-created a second time
    expect(check).toHaveBeenCalledTimes(2);
  });

  it('after an ended check, opens the socket again every 2 s while the server refuses it', async () => {
    const { heartbeat, check } = setup(async () => 'failed');
    await vi.advanceTimersByTimeAsync(HEARTBEAT_LOST_MS + LOGIN_RECHECK_MS * 2);
    expect(heartbeat.checkEnded).toBe(true);
    expect(FakeWebSocket.instances).toHaveLength(2);
    FakeWebSocket.last().serverClose(1006); // refused: the server is still down
    await vi.advanceTimersByTimeAsync(HEARTBEAT_PING_MS);
    expect(FakeWebSocket.instances).toHaveLength(3);
    const back = FakeWebSocket.last();
    back.open(); // the server is back
    await vi.advanceTimersByTimeAsync(HEARTBEAT_PING_MS);
    expect(FakeWebSocket.instances).toHaveLength(3);
    back.receiveFrame('pong');
    expect(heartbeat.getState()).toBe('alive');
    expect(check).toHaveBeenCalledTimes(2);
  });

  it('starts a new check when the re-created socket stays silent for 10 s', async () => {
    let outcome: AuthCheckOutcome = 'failed';
    const { heartbeat, check } = setup(async () => outcome);
    await vi.advanceTimersByTimeAsync(HEARTBEAT_LOST_MS + LOGIN_RECHECK_MS * 2);
    expect(heartbeat.checkEnded).toBe(true);
    await vi.advanceTimersByTimeAsync(HEARTBEAT_LOST_MS - 1);
    expect(check).toHaveBeenCalledTimes(2);
    outcome = 'ok';
    await vi.advanceTimersByTimeAsync(1 + LOGIN_RECHECK_MS);
    expect(check).toHaveBeenCalledTimes(3);
    expect(heartbeat.getState()).toBe('alive');
  });

  it('keeps polling while failures are more than 5 s apart (slow failures), one check at a time', async () => {
    const slow = LOGIN_RECHECK_CUTOFF_MS + 1_000;
    const { heartbeat, check } = setup(
      () => new Promise<AuthCheckOutcome>((resolve) => setTimeout(() => resolve('failed'), slow)),
    );
    await vi.advanceTimersByTimeAsync(HEARTBEAT_LOST_MS + LOGIN_RECHECK_MS);
    expect(check).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(slow - 1);
    expect(check).toHaveBeenCalledTimes(1); // no overlapping checks
    await vi.advanceTimersByTimeAsync((slow + LOGIN_RECHECK_MS) * 3);
    expect(check.mock.calls.length).toBeGreaterThanOrEqual(4);
    expect(heartbeat.checkEnded).toBe(false);
    expect(heartbeat.getState()).toBe('lost');
    expect(FakeWebSocket.instances).toHaveLength(1);
  });

  it('a 4001 close of the re-created socket starts a check at once (which finds the session gone)', async () => {
    let outcome: AuthCheckOutcome = 'failed';
    const { heartbeat } = setup(async () => outcome);
    await vi.advanceTimersByTimeAsync(HEARTBEAT_LOST_MS + LOGIN_RECHECK_MS * 2);
    expect(heartbeat.checkEnded).toBe(true);
    outcome = 'denied';
    FakeWebSocket.last().serverClose(4001);
    expect(heartbeat.checkEnded).toBe(false);
    await vi.advanceTimersByTimeAsync(LOGIN_RECHECK_MS);
    expect(heartbeat.getState()).toBe('denied');
  });

  it('goes lost at once when the server ends the session (close code 4001)', () => {
    const { heartbeat } = setup(async () => 'denied');
    FakeWebSocket.last().serverClose(4001);
    expect(heartbeat.getState()).toBe('lost');
  });

  it('does not blame the server for a timer stalled by a hidden tab', () => {
    const { heartbeat } = setup(async () => 'ok');
    // Simulate Chromium running the interval once after a minute: the clock jumps, one tick.
    vi.setSystemTime(Date.now() + 60_000);
    vi.advanceTimersByTime(HEARTBEAT_PING_MS);
    expect(heartbeat.getState()).toBe('alive');
  });

  it('stop() ends pings and polling and ignores late results', async () => {
    let resolveCheck: (o: AuthCheckOutcome) => void = () => undefined;
    const { heartbeat } = setup(
      () =>
        new Promise<AuthCheckOutcome>((resolve) => {
          resolveCheck = resolve;
        }),
    );
    await vi.advanceTimersByTimeAsync(HEARTBEAT_LOST_MS + LOGIN_RECHECK_MS);
    heartbeat.stop();
    resolveCheck('ok');
    await vi.advanceTimersByTimeAsync(LOGIN_RECHECK_MS * 5);
    expect(heartbeat.getState()).toBe('stopped');
    expect(FakeWebSocket.instances).toHaveLength(1);
  });
});

describe('Heartbeat state transitions', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    FakeWebSocket.reset();
  });
  afterEach(() => vi.useRealTimers());

  function recordMoves(heartbeat: Heartbeat, into: Set<string>) {
    let from = heartbeat.getState();
    heartbeat.subscribe(() => {
      into.add(`${from}->${heartbeat.getState()}`);
      from = heartbeat.getState();
    });
  }

  /** A heartbeat on a fresh open socket, not started; the check answers `outcome()`. */
  function idle(outcome: () => AuthCheckOutcome) {
    const socket = new EventSocket({
      url: () => 'ws://device/api/ws',
      createSocket: (u) => new FakeWebSocket(u),
    });
    socket.connect();
    FakeWebSocket.last().open();
    return new Heartbeat({ socket, checkAuth: async () => outcome() });
  }

  it('makes every move of HEARTBEAT_TRANSITIONS and no other', async () => {
    const made = new Set<string>();

    const a = idle(() => 'ok');
    recordMoves(a, made);
    a.stop(); // idle -> stopped
    a.start(); // stopped -> alive
    a.stop(); // alive -> stopped

    let outcome: AuthCheckOutcome = 'ok';
    const b = idle(() => outcome);
    recordMoves(b, made);
    b.start(); // idle -> alive
    await vi.advanceTimersByTimeAsync(HEARTBEAT_LOST_MS); // alive -> lost
    await vi.advanceTimersByTimeAsync(LOGIN_RECHECK_MS); // lost -> alive
    expect(b.getState()).toBe('alive');
    FakeWebSocket.last().open();
    await vi.advanceTimersByTimeAsync(HEARTBEAT_LOST_MS); // alive -> lost
    b.stop(); // lost -> stopped
    b.start();
    outcome = 'denied';
    await vi.advanceTimersByTimeAsync(HEARTBEAT_LOST_MS + LOGIN_RECHECK_MS); // lost -> denied
    expect(b.getState()).toBe('denied');
    b.stop(); // denied -> stopped

    const allowed = Object.entries(HEARTBEAT_TRANSITIONS).flatMap(([from, tos]) =>
      tos.map((to) => `${from}->${to}`),
    );
    expect([...made].sort()).toEqual(allowed.sort());
  });

  it('start() while denied is illegal: the session is gone until stop()', async () => {
    const { heartbeat, check } = setup(async () => 'denied');
    await vi.advanceTimersByTimeAsync(HEARTBEAT_LOST_MS + LOGIN_RECHECK_MS);
    expect(heartbeat.getState()).toBe('denied');
    const pinged = pings(FakeWebSocket.last()).length;
    expect(() => heartbeat.start()).toThrow(
      new IllegalTransitionError('Heartbeat', 'denied', 'alive'),
    );
    expect(heartbeat.getState()).toBe('denied');
    // Nothing started: no pings, no checks.
    await vi.advanceTimersByTimeAsync(HEARTBEAT_LOST_MS * 2);
    expect(pings(FakeWebSocket.last())).toHaveLength(pinged);
    expect(check).toHaveBeenCalledTimes(1);

    heartbeat.stop();
    heartbeat.start();
    expect(heartbeat.getState()).toBe('alive');
  });
});

import { EventEmitter } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import type { WebSocket } from 'ws';
import {
  CLOSE_INTERNAL,
  CLOSE_POLICY,
  CLOSE_SESSION_ENDED,
  CLOSE_SLOW,
  CLOSE_TOO_BIG,
  EVENT_SOCKET_LIMITS,
  GuardedSocket,
  SocketRegistry,
  TokenBucket,
  TooManySocketsError,
  type SocketLimits,
  type SocketOwner,
} from './socket-guard';
import { SILENT_LOGGER as silent } from '../log';

/** What the guard uses of a ws socket; records sends and closes. */
class FakeSocket extends EventEmitter {
  readonly OPEN = 1;
  readonly CLOSED = 3;
  readyState = 1;
  bufferedAmount = 0;
  sent: Array<string | Buffer> = [];
  closes: Array<[number, string]> = [];
  terminated = false;
  send(data: string | Buffer, cb?: () => void): void {
    this.sent.push(data);
    cb?.();
  }
  close(code: number, reason: string): void {
    this.closes.push([code, reason]);
    this.readyState = 2;
  }
  terminate(): void {
    this.terminated = true;
    this.readyState = 3;
    this.emit('close', 1006);
  }
  /** Whether the guard stopped reading this client (TCP backpressure), and how often. */
  paused = false;
  pauses = 0;
  pause(): void {
    this.paused = true;
    this.pauses += 1;
  }
  resume(): void {
    this.paused = false;
  }
}

const owner: SocketOwner = { kind: 'event', token: 't', tokenHash: 'h', remote: '127.0.0.1' };
const LIMITS: SocketLimits = {
  maxMessageBytes: 100,
  messagesPerSecond: 1,
  messageBurst: 3,
  bytesPerSecond: 1_000,
  byteBurst: 1_000,
  repliesPerSecond: 1,
  replyBurst: 2,
  maxBufferedBytes: 1_000,
  stallMs: 50,
};

function guarded(limits = LIMITS, who = owner): { fake: FakeSocket; g: GuardedSocket } {
  const fake = new FakeSocket();
  return { fake, g: new GuardedSocket(fake as unknown as WebSocket, who, limits, silent) };
}

describe('TokenBucket', () => {
  it('gives the burst, then the rate', () => {
    let t = 0;
    const b = new TokenBucket(2, 3, () => t);
    expect([b.take(), b.take(), b.take(), b.take()]).toEqual([true, true, true, false]);
    t = 500;
    expect([b.take(), b.take()]).toEqual([true, false]);
    t = 100_000;
    expect([b.take(), b.take(), b.take(), b.take()]).toEqual([true, true, true, false]);
  });
});

describe('GuardedSocket', () => {
  it('drops messages over the budget, then closes a client that keeps on with 1008', () => {
    const { fake, g } = guarded();
    const seen: string[] = [];
    g.onMessage((data) => void seen.push(data.toString()));
    for (let i = 0; i < 10; i += 1) fake.emit('message', Buffer.from(`m${i}`), false);
    // 3 admitted (burst), 3 refused within the strike burst, the 7th refusal closes
    expect(seen).toEqual(['m0', 'm1', 'm2']);
    expect(g.stats.droppedMessages).toBeGreaterThanOrEqual(4);
    expect(fake.closes).toEqual([[CLOSE_POLICY, 'too many messages']]);
    // the first refusal stopped reading the client (the rest had been read already and were
    // dropped); the close stops it for good
    expect(fake.pauses).toBe(2);
    expect(fake.paused).toBe(true);
  });

  it('stops reading a client over its budget for a moment, then reads it again', async () => {
    const { fake, g } = guarded();
    const seen: string[] = [];
    g.onMessage((data) => void seen.push(data.toString()));
    for (let i = 0; i < 4; i += 1) fake.emit('message', Buffer.from(`m${i}`), false);
    expect(seen).toEqual(['m0', 'm1', 'm2']);
    expect(fake.paused).toBe(true);
    expect(g.stats.throttled).toBe(1);
    await expect.poll(() => fake.paused, { timeout: 5_000 }).toBe(false);
    expect(fake.closes).toEqual([]);
  });

  it('counts protocol pings and pongs against the same budget', () => {
    const { fake, g } = guarded();
    const seen: string[] = [];
    g.onMessage((data) => void seen.push(data.toString()));
    fake.emit('ping', Buffer.alloc(0));
    fake.emit('pong', Buffer.alloc(0));
    fake.emit('ping', Buffer.alloc(0));
    fake.emit('message', Buffer.from('late'), false);
    expect(seen).toEqual([]);
  });

  it('closes a message over maxMessageBytes with 1009, before the handler', () => {
    const { fake, g } = guarded();
    const handler = vi.fn();
    g.onMessage(handler);
    fake.emit('message', Buffer.alloc(101), true);
    expect(handler).not.toHaveBeenCalled();
    expect(fake.closes).toEqual([[CLOSE_TOO_BIG, 'message too big']]);
  });

  it('turns a throwing or rejecting handler into 1011 for this socket only', async () => {
    const a = guarded();
    a.g.onMessage(() => {
      throw new Error('bug');
    });
    a.fake.emit('message', Buffer.from('x'), false);
    expect(a.fake.closes).toEqual([[CLOSE_INTERNAL, 'internal error']]);
    const b = guarded();
    b.g.onMessage(async () => {
      throw new Error('async bug');
    });
    b.fake.emit('message', Buffer.from('x'), false);
    await vi.waitFor(() => expect(b.fake.closes).toEqual([[CLOSE_INTERNAL, 'internal error']]));
  });

  it('answers replies out of the reply budget and closes a client far over it', () => {
    const { fake, g } = guarded();
    const answered = Array.from({ length: 6 }, () => g.replyWith('pong'));
    expect(answered.slice(0, 2)).toEqual([true, true]);
    expect(answered.slice(2).every((a) => !a)).toBe(true);
    expect(fake.sent).toEqual(['pong', 'pong']);
    for (let i = 0; i < 20 && fake.closes.length === 0; i += 1) g.replyWith('pong');
    expect(fake.closes).toEqual([[CLOSE_POLICY, 'too many requests']]);
  });

  it('queues nothing over the send bound: drops, or closes with 1013 when essential', () => {
    const { fake, g } = guarded();
    fake.bufferedAmount = 1_001;
    expect(g.send('x')).toBe(false);
    expect(fake.sent).toEqual([]);
    expect(fake.closes).toEqual([]);
    expect(g.send('state', { essential: true })).toBe(false);
    expect(fake.closes).toEqual([[CLOSE_SLOW, 'client too slow']]);
  });

  it('closes a client whose buffer stays over the bound for stallMs', async () => {
    const { fake, g } = guarded();
    fake.bufferedAmount = 5_000;
    g.send('x');
    await vi.waitFor(() => expect(fake.closes).toEqual([[CLOSE_SLOW, 'client too slow']]));
  });

  it('does not close a client that caught up before stallMs', async () => {
    const { fake, g } = guarded({ ...LIMITS, stallMs: 20 });
    fake.bufferedAmount = 5_000;
    g.send('x');
    fake.bufferedAmount = 0;
    await new Promise((r) => setTimeout(r, 60));
    expect(fake.closes).toEqual([]);
    expect(g.send('y')).toBe(true);
  });

  it('terminates a peer that does not answer the close', async () => {
    vi.useFakeTimers();
    try {
      const { fake, g } = guarded();
      g.close(CLOSE_POLICY, 'bye');
      expect(fake.terminated).toBe(false);
      await vi.advanceTimersByTimeAsync(5_000);
      expect(fake.terminated).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('SocketRegistry', () => {
  function add(r: SocketRegistry, who: Partial<SocketOwner> = {}): FakeSocket {
    const fake = new FakeSocket();
    r.guard(fake as unknown as WebSocket, { ...owner, ...who }, EVENT_SOCKET_LIMITS);
    return fake;
  }

  it('caps sockets per session, per address and in all', () => {
    const r = new SocketRegistry(silent, { perSession: 2, perAddress: 3, total: 4 });
    add(r, { tokenHash: 'a', remote: 'x' });
    add(r, { tokenHash: 'a', remote: 'x' });
    expect(() => r.admit({ tokenHash: 'a', remote: 'y' })).toThrow(TooManySocketsError);
    add(r, { tokenHash: 'b', remote: 'x' });
    expect(() => r.admit({ tokenHash: 'c', remote: 'x' })).toThrow('for this address');
    add(r, { tokenHash: 'c', remote: 'y' });
    expect(() => r.admit({ tokenHash: 'd', remote: 'z' })).toThrow('Too many open sockets');
    // one over the cap that slipped past admit is closed at once
    const late = add(r, { tokenHash: 'e', remote: 'w' });
    expect(late.closes[0]?.[0]).toBe(CLOSE_SLOW);
    expect(r.count()).toBe(4);
  });

  it('forgets a socket when it closes', () => {
    const r = new SocketRegistry(silent, { perSession: 1, perAddress: 9, total: 9 });
    const fake = add(r);
    expect(() => r.admit(owner)).toThrow();
    fake.terminate();
    expect(() => r.admit(owner)).not.toThrow();
  });

  it('ends the sockets of one session, and all header-credential sockets', () => {
    const r = new SocketRegistry(silent);
    const mine = add(r, { tokenHash: 'a' });
    const theirs = add(r, { tokenHash: 'b' });
    const header = add(r, { token: null, tokenHash: null });
    r.endSession('a', 'logout');
    expect(mine.closes).toEqual([[CLOSE_SESSION_ENDED, 'logout']]);
    expect(theirs.closes).toEqual([]);
    expect(header.closes).toEqual([]);
    r.endHeaderAuthenticated('credentials changed');
    expect(header.closes).toEqual([[CLOSE_SESSION_ENDED, 'credentials changed']]);
    expect(theirs.closes).toEqual([]);
  });

  it('checks the session of a pinging socket', () => {
    const r = new SocketRegistry(silent);
    const fake = new FakeSocket();
    const g = r.guard(fake as unknown as WebSocket, owner, EVENT_SOCKET_LIMITS);
    expect(r.checkSession(g)).toBe(true);
    r.sessionCheck = () => false;
    expect(r.checkSession(g)).toBe(false);
    expect(fake.closes).toEqual([[CLOSE_SESSION_ENDED, 'session ended']]);
  });
});

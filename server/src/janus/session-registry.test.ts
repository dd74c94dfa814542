import { describe, expect, it } from 'vitest';
import type { JanusPlugin } from './plugin';
import { JanusErrorCode, JanusRequestError } from './protocol';
import {
  MAX_HANDLES_PER_SESSION,
  MAX_SESSIONS_PER_SOCKET,
  SessionRegistry,
  type JanusSocket,
} from './session-registry';

/** A socket that records what goes out through it. */
class RecordingSocket implements JanusSocket {
  readonly sent: Record<string, unknown>[] = [];
  constructor(readonly remote = '192.0.2.1') {}
  send(msg: Record<string, unknown>): void {
    this.sent.push(msg);
  }
}

const plugin = { name: 'janus.plugin.test' } as JanusPlugin;

function registry(ids: number[] = [], clock = { t: 0 }) {
  const queue = [...ids];
  let next = 1000;
  return new SessionRegistry<RecordingSocket>({
    now: () => clock.t,
    randomId: () => queue.shift() ?? (next += 1),
  });
}

function codeOf(fn: () => unknown): number | null {
  try {
    fn();
  } catch (err) {
    if (err instanceof JanusRequestError) return err.code;
    throw err;
  }
  return null;
}

describe('SessionRegistry', () => {
  it('derives every count from what it holds', () => {
    const reg = registry();
    const a = new RecordingSocket();
    const b = new RecordingSocket();
    const s1 = reg.create(a);
    const s2 = reg.create(a);
    reg.create(b);
    reg.attach(s1, plugin, null);
    reg.attach(s1, plugin, 'oid');
    const h3 = reg.attach(s2, plugin, null);
    expect([reg.sessionCount, reg.handleCount, reg.sessionsOf(a), reg.sessionsOf(b)]).toEqual([
      3, 3, 2, 1,
    ]);
    reg.removeHandle(h3);
    expect(h3.detached).toBe(true);
    expect(reg.handleCount).toBe(2);
    expect(reg.remove(s1)).toBe(true);
    expect(reg.remove(s1)).toBe(false);
    expect([reg.sessionCount, reg.sessionsOf(a)]).toEqual([2, 1]);
    expect(reg.ownedBy(a)).toEqual([s2]);
  });

  it('draws fresh ids, takes a wanted one, and refuses a taken or malformed one', () => {
    const reg = registry([7, 7, 8]);
    const sock = new RecordingSocket();
    expect(reg.create(sock).id).toBe(7);
    expect(reg.create(sock).id).toBe(8); // 7 is taken: drawn again
    expect(reg.create(sock, 42).id).toBe(42);
    expect(codeOf(() => reg.create(sock, 42))).toBe(JanusErrorCode.sessionConflict);
    expect(codeOf(() => reg.create(sock, -1))).toBe(JanusErrorCode.invalidElementType);
    expect(codeOf(() => reg.create(sock, '5'))).toBe(JanusErrorCode.invalidElementType);
  });

  it('bounds sessions per socket and handles per session', () => {
    const reg = registry();
    const sock = new RecordingSocket();
    for (let i = 0; i < MAX_SESSIONS_PER_SOCKET; i += 1) reg.create(sock);
    expect(codeOf(() => reg.create(sock))).toBe(JanusErrorCode.unknown);
    const other = reg.create(new RecordingSocket());
    for (let i = 0; i < MAX_HANDLES_PER_SESSION; i += 1) reg.attach(other, plugin, null);
    expect(codeOf(() => reg.attach(other, plugin, null))).toBe(JanusErrorCode.pluginAttach);
  });

  it('finds a session only for its socket; claim moves it within the bound', () => {
    const reg = registry();
    const a = new RecordingSocket();
    const b = new RecordingSocket();
    const s = reg.create(a);
    expect(codeOf(() => reg.find(b, s.id))).toBe(JanusErrorCode.sessionNotFound);
    expect(codeOf(() => reg.find(a, 999_999))).toBe(JanusErrorCode.sessionNotFound);
    expect(reg.find(b, s.id, true)).toBe(s);
    expect(s.socket).toBe(b);
    expect([reg.sessionsOf(a), reg.sessionsOf(b)]).toEqual([0, 1]);

    const full = new RecordingSocket();
    for (let i = 0; i < MAX_SESSIONS_PER_SOCKET; i += 1) reg.create(full);
    expect(codeOf(() => reg.find(full, s.id, true))).toBe(JanusErrorCode.unknown);
    expect(s.socket).toBe(b);
  });

  it('reports sessions idle for the timeout; a find keeps one alive', () => {
    const clock = { t: 0 };
    const reg = registry([], clock);
    const sock = new RecordingSocket();
    const kept = reg.create(sock);
    const idle = reg.create(sock);
    clock.t = 50_000;
    reg.find(sock, kept.id);
    clock.t = 60_000;
    expect(reg.idle(60_000)).toEqual([idle]);
    clock.t = 110_000;
    expect(reg.idle(60_000)).toEqual([kept, idle]);
  });

  it('finds handles by id within their session', () => {
    const reg = registry();
    const sock = new RecordingSocket();
    const s1 = reg.create(sock);
    const s2 = reg.create(sock);
    const h = reg.attach(s1, plugin, null);
    expect(reg.findHandle(s1, h.id)).toBe(h);
    expect(codeOf(() => reg.findHandle(s2, h.id))).toBe(JanusErrorCode.handleNotFound);
    expect(codeOf(() => reg.findHandle(s1, 'x'))).toBe(JanusErrorCode.handleNotFound);
  });
});

describe('JanusHandle', () => {
  it('pushes through the socket its session has now, with session_id and sender', () => {
    const reg = registry([11, 22]);
    const a = new RecordingSocket();
    const b = new RecordingSocket();
    const s = reg.create(a);
    const h = reg.attach(s, plugin, null);
    h.push({ janus: 'event', x: 1 });
    reg.find(b, s.id, true);
    h.push({ janus: 'hangup' });
    expect(a.sent).toEqual([{ janus: 'event', x: 1, session_id: 11, sender: 22 }]);
    expect(b.sent).toEqual([{ janus: 'hangup', session_id: 11, sender: 22 }]);
    expect(h.socket).toBe(b);
  });

  it('runs queued work one after another and counts what is pending', async () => {
    const reg = registry();
    const h = reg.attach(reg.create(new RecordingSocket()), plugin, null);
    const order: string[] = [];
    const errors: unknown[] = [];
    let release!: () => void;
    const first = h.enqueue(
      () =>
        new Promise<void>((r) => {
          order.push('first start');
          release = () => {
            order.push('first end');
            r();
          };
        }),
      (e) => errors.push(e),
    );
    const second = h.enqueue(
      () => {
        order.push('second');
        throw new Error('boom');
      },
      (e) => errors.push(e),
    );
    const third = h.enqueue(
      () => {
        order.push('third');
      },
      (e) => errors.push(e),
    );
    expect(h.pending).toBe(3);
    await expect.poll(() => order).toEqual(['first start']);
    release();
    await Promise.all([first, second, third]);
    expect(order).toEqual(['first start', 'first end', 'second', 'third']);
    expect(errors.map(String)).toEqual(['Error: boom']);
    expect(h.pending).toBe(0);
  });
});

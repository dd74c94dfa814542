/**
 * A wall socket whose send buffer is over WALL_SOCKET_BUFFER gets no picture until it drains,
 * then the newest picture of each device it missed (never a queue of old ones).
 */
import { describe, expect, it } from 'vitest';
import type { WebSocket } from 'ws';
import { waitFor } from '../agents/test-kit';
import { WallHub } from './hub';
import { WALL_SOCKET_BUFFER, WallSocket, pictureFrame } from './routes';

class FakeWs {
  readonly OPEN = 1;
  readyState = 1;
  bufferedAmount = 0;
  readonly sent: Array<string | Buffer> = [];
  send(data: string | Buffer): void {
    this.sent.push(data);
  }
  close(): void {
    this.readyState = 3;
  }
}

const user = { accountId: 'a1', username: 'u', role: 'admin' as const };

describe('wall backpressure', () => {
  it('holds pictures while the socket is backed up, then sends only the newest', async () => {
    const ws = new FakeWs();
    const hub = new WallHub({ snapshot: async () => null, intervalMs: 60_000 });
    const wall = new WallSocket(
      ws as unknown as WebSocket,
      user,
      hub,
      async (_u, ids) => new Set(ids),
    );
    wall.onMessage(Buffer.from(JSON.stringify({ t: 'watch', ids: ['d1', 'd2'] })), false);
    await waitFor(() => wall.watched.size === 2, 2000, 'watching');

    wall.picture('d1', Buffer.from('one-1'));
    expect(ws.sent).toEqual([pictureFrame('d1', Buffer.from('one-1'))]);

    ws.bufferedAmount = WALL_SOCKET_BUFFER + 1;
    wall.picture('d1', Buffer.from('one-2'));
    wall.picture('d2', Buffer.from('two-1'));
    wall.picture('d1', Buffer.from('one-3'));
    await new Promise((r) => setTimeout(r, 250));
    expect(ws.sent).toHaveLength(1);

    ws.bufferedAmount = 0;
    await waitFor(() => ws.sent.length === 3, 2000, 'drained');
    expect(ws.sent.slice(1)).toEqual([
      pictureFrame('d1', Buffer.from('one-3')),
      pictureFrame('d2', Buffer.from('two-1')),
    ]);
    wall.close();
    hub.close();
  });
});

describe('WallHub memory', () => {
  it('keeps an entry only while watched, dropping it a while after the last watcher left', async () => {
    let asked = 0;
    const hub = new WallHub({
      snapshot: async () => {
        asked += 1;
        return { type: 'image/jpeg', width: 4, height: 3, online: true, jpeg: 'AAAA' };
      },
      intervalMs: 60_000,
      dropAfterMs: 300,
    });
    const got: string[] = [];
    const w = {
      paused: false,
      state: () => undefined,
      picture: (id: string) => got.push(id),
    };
    hub.watch(w, 'd1');
    await waitFor(() => got.length === 1, 2000, 'a picture');
    hub.unwatch(w, 'd1');
    expect(hub.has('d1')).toBe(true);
    // back within the window: the cached picture at once, no new request
    hub.watch(w, 'd1');
    expect(got).toEqual(['d1', 'd1']);
    expect(asked).toBe(1);
    hub.unwatch(w, 'd1');
    await waitFor(() => !hub.has('d1'), 3000, 'dropped');
    expect(hub.size).toBe(0);
    hub.close();
  });
});

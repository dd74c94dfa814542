/**
 * `/api/media/ws` against a viewer that stops reading: video is dropped to the next key frame
 * over the bound, and a viewer that stays over it is closed (issue 9 item 2).
 */
import Fastify, { type FastifyInstance } from 'fastify';
import fastifyWebsocket from '@fastify/websocket';
import WebSocket from 'ws';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeFeed } from '../janus/test-support';
import { mediaRoutes } from './media';
import { CLOSE_SLOW, MEDIA_SOCKET_LIMITS, SocketRegistry } from '../ws/socket-guard';
import type { AccessUnit } from '../media/types';
import { SILENT_LOGGER as silent } from '../log';

let app: FastifyInstance;
afterEach(async () => {
  await app?.close();
});

function unit(seq: number, key: boolean, bytes: number): AccessUnit {
  return { data: Buffer.alloc(bytes, seq & 255), key, seq, capturedAt: seq, pts90k: seq * 3000 };
}

describe('/api/media/ws and a viewer that stops reading', () => {
  it('holds at most the bound plus one frame, then closes the viewer with 1013', async () => {
    const limits = { ...MEDIA_SOCKET_LIMITS, maxBufferedBytes: 1024 * 1024, stallMs: 300 };
    const feed = new FakeFeed();
    const sockets = new SocketRegistry(silent);
    app = Fastify();
    await app.register(fastifyWebsocket);
    mediaRoutes(app, feed, sockets, limits);
    await app.listen({ host: '127.0.0.1', port: 0 });
    const addr = app.server.address();
    if (!addr || typeof addr === 'string') throw new Error('no address');
    const ws = new WebSocket(`ws://127.0.0.1:${addr.port}/api/media/ws`);
    let hello = false;
    ws.on('message', () => (hello = true));
    await new Promise((r) => ws.once('open', r));
    await expect.poll(() => hello).toBe(true);
    ws.send(JSON.stringify({ event_type: 'start', event: { type: 'video', format: 'h264' } }));
    await expect.poll(() => feed.viewers.size).toBe(1);
    (ws as unknown as { _socket: { pause(): void } })._socket.pause();
    // The server's side, read from ws itself so the check does not depend on our registry.
    const server = (): WebSocket[] => [...(app.websocketServer.clients as Set<WebSocket>)];
    const open = (): number => server().length;
    const held = (): number => server().reduce((n, c) => n + c.bufferedAmount, 0);

    const frame = 256 * 1024;
    let maxHeld = 0;
    let seq = 0;
    // 64 MB of video if every frame were queued; a key frame every 8
    for (let i = 0; i < 256 && open() > 0; i += 1) {
      feed.push(unit(seq, seq % 8 === 0, frame));
      seq += 1;
      maxHeld = Math.max(maxHeld, held());
      await new Promise((r) => setImmediate(r));
    }
    let code = 0;
    ws.on('close', (c) => (code = c));
    // keep the stream flowing until the server gives up on the viewer
    await expect
      .poll(
        () => {
          feed.push(unit(seq, seq % 8 === 0, frame));
          seq += 1;
          maxHeld = Math.max(maxHeld, held());
          return open();
        },
        { timeout: 10_000, interval: 20 },
      )
      .toBe(0);
    expect(maxHeld).toBeLessThanOrEqual(limits.maxBufferedBytes + frame + 64);
    // what it could not take is counted in the hub's drop counters (streamer.drops)
    expect(feed.drops.get('viewer_lagging')).toBeGreaterThan(0);
    expect(feed.viewers.size).toBe(0);
    ws.resume();
    (ws as unknown as { _socket: { resume(): void } })._socket.resume();
    await expect.poll(() => code, { timeout: 10_000 }).toBeGreaterThan(0);
    expect([CLOSE_SLOW, 1006]).toContain(code);
  });
});

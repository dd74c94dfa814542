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
import { PASSWORD, initAndLogin, newApp } from '../test-helpers';

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

async function fakeServer(): Promise<{ feed: FakeFeed; url: string }> {
  const feed = new FakeFeed();
  app = Fastify();
  await app.register(fastifyWebsocket);
  mediaRoutes(app, feed, new SocketRegistry(silent));
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  if (!addr || typeof addr === 'string') throw new Error('no address');
  return { feed, url: `ws://127.0.0.1:${addr.port}/api/media/ws` };
}

describe("kvmd 4.2xx /api/media/ws?video=h264 (the 'pure' mode of scripts)", () => {
  it('streams bare access units at once, from a key frame, with no hello and no pong', async () => {
    const { feed, url } = await fakeServer();
    feed.push(unit(1, false, 8)); // a delta before any key: never sent
    const ws = new WebSocket(`${url}?video=h264`);
    const texts: string[] = [];
    const binary: Buffer[] = [];
    ws.on('message', (data, isBinary) =>
      isBinary ? binary.push(data as Buffer) : texts.push(String(data)),
    );
    await new Promise((r) => ws.once('open', r));
    await expect.poll(() => feed.viewers.size).toBe(1);
    ws.send(Buffer.from([0x00])); // a ping: not answered in this mode
    ws.send(Buffer.from([0x01])); // asks for a key frame: still honoured
    await expect.poll(() => feed.keyFrameRequests).toBe(1);
    feed.push(unit(2, true, 16));
    feed.push(unit(3, false, 4));
    await expect.poll(() => binary.length).toBe(2);
    expect(binary[0]).toEqual(Buffer.alloc(16, 2));
    expect(binary[1]).toEqual(Buffer.alloc(4, 3));
    expect(texts).toEqual([]);
    ws.close();
    await expect.poll(() => feed.viewers.size).toBe(0);
  });

  it('keeps the regular mode (hello, start, [0x01][key] heads) without the query', async () => {
    const { feed, url } = await fakeServer();
    const ws = new WebSocket(`${url}?video=`);
    const texts: string[] = [];
    const binary: Buffer[] = [];
    ws.on('message', (data, isBinary) =>
      isBinary ? binary.push(data as Buffer) : texts.push(String(data)),
    );
    await expect.poll(() => texts.length).toBe(1);
    expect(JSON.parse(texts[0]!)).toEqual({
      event_type: 'media',
      event: { video: { h264: { profile_level_id: '42e01f' } } },
    });
    ws.send(JSON.stringify({ event_type: 'start', event: { type: 'video', format: 'h264' } }));
    await expect.poll(() => feed.viewers.size).toBe(1);
    feed.push(unit(7, true, 3));
    await expect.poll(() => binary.length).toBe(1);
    expect([...binary[0]!]).toEqual([0x01, 0x01, 7, 7, 7]);
    ws.close();
  });

  it('puts the capture time in [0x02][key][float64] heads when the start asks for it', async () => {
    const { feed, url } = await fakeServer();
    const ws = new WebSocket(url);
    const texts: string[] = [];
    const binary: Buffer[] = [];
    ws.on('message', (data, isBinary) =>
      isBinary ? binary.push(data as Buffer) : texts.push(String(data)),
    );
    await expect.poll(() => texts.length).toBe(1);
    ws.send(
      JSON.stringify({
        event_type: 'start',
        event: { type: 'video', format: 'h264', capture_time: true },
      }),
    );
    await expect.poll(() => feed.viewers.size).toBe(1);
    feed.push(unit(7, true, 3));
    await expect.poll(() => binary.length).toBe(1);
    const frame = binary[0]!;
    expect([...frame.subarray(0, 2)]).toEqual([0x02, 0x01]);
    // capturedAt 7 (performance.now() ms) on the epoch clock
    expect(frame.readDoubleBE(2)).toBeCloseTo(performance.timeOrigin + 7, 3);
    expect([...frame.subarray(10)]).toEqual([7, 7, 7]);
    ws.close();
  });

  it('refuses another format with 400 before the upgrade, and serves GET /api/media', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const media = await app.inject({ url: '/api/media', headers: { token } });
    expect(media.statusCode).toBe(200);
    expect(media.json()).toEqual({
      ok: true,
      result: { media: { video: { h264: { profile_level_id: expect.any(String) } } } },
    });
    expect(media.json().result.media.video.h264.profile_level_id).toMatch(/^[0-9a-f]{6}$/i);
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as { port: number }).port;
    for (const video of ['jpeg', 'h265']) {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/api/media/ws?video=${video}`, {
        headers: { token },
      });
      const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        ws.on('unexpected-response', (_req, r) => {
          let body = '';
          r.on('data', (c: Buffer) => (body += String(c)));
          r.on('end', () => resolve({ status: r.statusCode ?? 0, body }));
        });
        ws.on('open', () => reject(new Error('upgraded')));
        ws.on('error', () => undefined);
      });
      expect(res.status, video).toBe(400);
      expect(JSON.parse(res.body).result).toEqual({
        error: 'ValidatorError',
        error_msg: 'Unsupported video type',
      });
    }
    // a script's request: X-KVMD headers, pure mode, the real encoder's Annex B key frame first
    const ws = new WebSocket(`ws://127.0.0.1:${port}/api/media/ws?video=h264`, {
      headers: { 'X-KVMD-User': 'admin', 'X-KVMD-Passwd': PASSWORD },
    });
    const first = await new Promise<Buffer>((resolve, reject) => {
      ws.once('message', (data, isBinary) =>
        isBinary ? resolve(data as Buffer) : reject(new Error(`text: ${String(data)}`)),
      );
      ws.once('error', reject);
    });
    ws.close();
    expect([...first.subarray(0, 4)]).toEqual([0, 0, 0, 1]);
    // a key frame carries the SPS (NAL type 7) before anything else
    expect(first[4]! & 0x1f).toBe(7);
  }, 30_000);
});

describe('/api/media/ws and the cached GOP', () => {
  /** A viewer past the hello and its start; `binary` collects what it is sent. */
  async function started(url: string) {
    const ws = new WebSocket(url);
    const binary: Buffer[] = [];
    let hello = false;
    ws.on('message', (data, isBinary) => (isBinary ? binary.push(data as Buffer) : (hello = true)));
    await expect.poll(() => hello).toBe(true);
    ws.send(JSON.stringify({ event_type: 'start', event: { type: 'video', format: 'h264' } }));
    return { ws, binary };
  }

  it('hands a joining viewer the whole cached GOP (a second at 60 fps) without calling it lagging', async () => {
    const { feed, url } = await fakeServer();
    for (let seq = 0; seq < 60; seq += 1) feed.push(unit(seq, seq === 0, 2000));
    const { ws, binary } = await started(url);
    await expect.poll(() => binary.length).toBe(60);
    feed.push(unit(60, false, 2000));
    await expect.poll(() => binary.length).toBe(61);
    expect(binary.map((b) => b[2])).toEqual([...Array(61).keys()]);
    expect(feed.keyFrameRequests).toBe(0);
    expect(feed.drops.get('viewer_lagging') ?? 0).toBe(0);
    ws.close();
  });

  it('answers 0x01 with the cached GOP again for that viewer alone, not an encoder restart', async () => {
    const { feed, url } = await fakeServer();
    for (let seq = 0; seq < 5; seq += 1) feed.push(unit(seq, seq === 0, 100));
    const { ws, binary } = await started(url);
    await expect.poll(() => binary.length).toBe(5);
    ws.send(Buffer.from([0x01]));
    await expect.poll(() => binary.length).toBe(10);
    feed.push(unit(5, false, 100));
    await expect.poll(() => binary.length).toBe(11);
    // [op][key][seq...]: the GOP from its key frame again, then live
    expect(binary.map((b) => [b[1], b[2]])).toEqual([
      ...[0, 1, 2, 3, 4].map((n) => [n === 0 ? 1 : 0, n]),
      ...[0, 1, 2, 3, 4].map((n) => [n === 0 ? 1 : 0, n]),
      [0, 5],
    ]);
    expect(feed.replays).toBe(1);
    expect(feed.keyFrameRequests).toBe(0);
    ws.close();
  });

  it('replays the GOP at most twice in a burst of 0x01, however fast a client asks', async () => {
    const { feed, url } = await fakeServer();
    for (let seq = 0; seq < 5; seq += 1) feed.push(unit(seq, seq === 0, 100));
    const { ws, binary } = await started(url);
    await expect.poll(() => binary.length).toBe(5);
    for (let i = 0; i < 20; i += 1) ws.send(Buffer.from([0x01]));
    // the pings after them are answered: every 0x01 before them was read
    const pongs: number[] = [];
    ws.on('message', (data, isBinary) => {
      if (isBinary && (data as Buffer).length === 1) pongs.push((data as Buffer)[0]!);
    });
    ws.send(Buffer.from([0x00]));
    await expect.poll(() => pongs).toEqual([0xff]);
    // a burst of two; a third only if a whole second passed while the server read the 20
    expect(feed.replays).toBeGreaterThanOrEqual(2);
    expect(feed.replays).toBeLessThanOrEqual(3);
    expect(feed.keyFrameRequests).toBe(0);
    expect(binary.length).toBe(5 + feed.replays * 5 + 1); // the pong is binary too
    ws.close();
  });

  it('asks the encoder when no GOP is cached, and sends no delta before its key frame', async () => {
    const { feed, url } = await fakeServer();
    feed.push(unit(0, true, 100));
    const { ws, binary } = await started(url);
    await expect.poll(() => binary.length).toBe(1);
    feed.cache = []; // as the hub's after an oversized GOP
    ws.send(Buffer.from([0x01]));
    await expect.poll(() => feed.keyFrameRequests).toBe(1);
    feed.push(unit(1, false, 100)); // a delta the reset decoder could not use
    feed.push(unit(2, true, 100));
    await expect.poll(() => binary.length).toBe(2);
    expect(binary[1]![2]).toBe(2);
    expect(feed.replays).toBe(0);
    ws.close();
  });
});

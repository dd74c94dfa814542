import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { TestbedVideo } from '../drivers/video/testbed';
import { jpegSize } from '../media/jpeg';
import { MAX_MJPEG_CLIENTS } from '../services/streamer';
import { initAndLogin, newApp } from '../test-helpers';

let app: FastifyInstance;
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await app?.close();
});

const poll = { timeout: 10_000, interval: 20 };
const BOUNDARY = '--boundarydonotcross\r\n';

async function start(): Promise<{ port: number; token: string }> {
  app = await newApp(undefined, { testbed: { width: 320, height: 240 } });
  const token = await initAndLogin(app);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  if (!addr || typeof addr === 'string') throw new Error('no address');
  return { port: addr.port, token };
}

/** An MJPEG client as a browser's <img> sends it (HTTP/1.1, the session cookie). */
function open(port: number, path: string, cookie?: string): { sock: Socket; data: () => Buffer } {
  const sock = connect(port, '127.0.0.1');
  sockets.push(sock);
  const chunks: Buffer[] = [];
  sock.on('data', (c) => chunks.push(c));
  sock.on('error', () => undefined);
  sock.write(
    `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: image/avif,image/webp,*/*\r\n` +
      `${cookie ? `Cookie: auth_token=${cookie}\r\n` : ''}Connection: keep-alive\r\n\r\n`,
  );
  return { sock, data: () => Buffer.concat(chunks) };
}

interface Part {
  headers: Record<string, string>;
  body: Buffer;
}

/** Splits the response: status line, headers, and the complete parts so far. */
function parse(raw: Buffer, withLength = true): { head: string; parts: Part[] } {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) return { head: '', parts: [] };
  const head = raw.subarray(0, end).toString();
  let p = end + 4;
  const parts: Part[] = [];
  if (raw.subarray(p, p + BOUNDARY.length).toString() !== BOUNDARY) return { head, parts };
  p += BOUNDARY.length;
  for (;;) {
    const he = raw.indexOf('\r\n\r\n', p);
    if (he < 0) break;
    const headers: Record<string, string> = {};
    for (const line of raw.subarray(p, he).toString().split('\r\n')) {
      const i = line.indexOf(': ');
      headers[line.slice(0, i)] = line.slice(i + 2);
    }
    const start = he + 4;
    let stop: number;
    if (withLength) stop = start + Number(headers['Content-Length']);
    else stop = raw.indexOf(`\r\n${BOUNDARY}`, start);
    if (stop < 0 || stop + 2 + BOUNDARY.length > raw.length) break;
    expect(raw.subarray(stop, stop + 2 + BOUNDARY.length).toString()).toBe(`\r\n${BOUNDARY}`);
    parts.push({ headers, body: raw.subarray(start, stop) });
    p = stop + 2 + BOUNDARY.length;
  }
  return { head, parts };
}

describe("ustreamer's HTTP surface", () => {
  it('streams MJPEG parts with ustreamer headers, behind the session, and stops after', async () => {
    const { port, token } = await start();
    const anon = open(port, '/streamer/stream?key=abc');
    await vi.waitFor(() => expect(anon.data().toString()).toContain('\r\n\r\n'), poll);
    expect(anon.data().toString()).toMatch(/^HTTP\/1\.1 401 /);

    const c = open(port, '/streamer/stream?key=k3y_1', token);
    await vi.waitFor(() => expect(parse(c.data()).parts.length).toBeGreaterThanOrEqual(3), poll);
    const { head, parts } = parse(c.data());
    expect(head).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(head).toContain(
      '\r\nContent-Type: multipart/x-mixed-replace;boundary=boundarydonotcross',
    );
    expect(head).toContain('\r\nPragma: no-cache');
    expect(head).toContain('\r\nExpires: Mon, 3 Jan 2000 12:34:56 GMT');
    expect(head).toMatch(/\r\nSet-Cookie: stream_client=k3y_1\/[0-9a-f]+; path=\/; max-age=30/);
    expect(head).not.toMatch(/transfer-encoding/i);
    const part = parts[0]!;
    expect(Object.keys(part.headers)).toEqual(['Content-Type', 'Content-Length', 'X-Timestamp']);
    expect(part.headers['Content-Type']).toBe('image/jpeg');
    expect(part.headers['X-Timestamp']).toMatch(/^\d+\.\d{6}$/);
    expect(jpegSize(part.body)).toEqual({ width: 320, height: 240 });

    const state = (await app.inject({ url: '/api/streamer', headers: { token } })).json().result;
    expect(state.streamer.stream.clients).toBe(1);
    expect(state.streamer.sinks.jpeg.has_clients).toBe(true);
    const [id, stat] = Object.entries(state.streamer.stream.clients_stat)[0]!;
    expect(id).toMatch(/^[0-9a-f]+$/);
    expect(stat).toMatchObject({ key: 'k3y_1', extra_headers: false, zero_data: false });

    c.sock.destroy();
    await vi.waitFor(() => expect(app.ctx.streamer.mjpegClients).toBe(0), poll);
    // the JPEG path stays warm 5 s after its last client, then stops
    await vi.waitFor(() => expect(app.ctx.streamer.jpeg.active).toBe(false), {
      timeout: 20_000,
      interval: 50,
    });
  }, 40_000);

  it('sends X-UStreamer-* with extra_headers, no length with advance_headers, no data with zero_data', async () => {
    const { port, token } = await start();
    const extra = open(port, '/streamer/stream?key=x&extra_headers=1', token);
    const adv = open(port, '/streamer/stream?advance_headers=true', token);
    const zero = open(port, '/streamer/stream?zero_data=1', token);
    await vi.waitFor(() => expect(parse(extra.data()).parts.length).toBeGreaterThan(1), poll);
    const h = parse(extra.data()).parts[0]!.headers;
    expect(h['X-UStreamer-Online']).toBe('true');
    expect(h['X-UStreamer-Width']).toBe('320');
    expect(h['X-UStreamer-Height']).toBe('240');
    expect(h['X-UStreamer-Latency']).toMatch(/^\d+\.\d{6}$/);
    await vi.waitFor(() => expect(parse(adv.data(), false).parts.length).toBeGreaterThan(1), poll);
    const a = parse(adv.data(), false).parts[0]!;
    expect(a.headers['Content-Length']).toBeUndefined();
    expect(jpegSize(a.body)).toEqual({ width: 320, height: 240 });
    await vi.waitFor(() => expect(parse(zero.data()).parts.length).toBeGreaterThan(1), poll);
    const z = parse(zero.data()).parts[0]!;
    expect(z.headers['Content-Length']).toBe('0');
    expect(z.body.length).toBe(0);
  });

  it('caps the MJPEG clients and checks the key', async () => {
    const { port, token } = await start();
    for (let i = 0; i < MAX_MJPEG_CLIENTS; i += 1) open(port, `/streamer/stream?key=c${i}`, token);
    await vi.waitFor(() => expect(app.ctx.streamer.mjpegClients).toBe(MAX_MJPEG_CLIENTS), poll);
    const over = await app.inject({ url: '/streamer/stream?key=z', headers: { token } });
    expect(over.statusCode).toBe(503);
    expect(over.json().result.error).toBe('MjpegClientsLimitError');
    const bad = await app.inject({ url: '/streamer/stream?key=a%3Bb', headers: { token } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().result.error_msg).toContain("'key'");
  });

  it("answers ustreamer's /state and /snapshot, and a placeholder while offline", async () => {
    const { token } = await start();
    const st = await app.inject({ url: '/streamer/state', headers: { token } });
    expect(st.headers['content-type']).toContain('application/json');
    const body = st.json();
    expect(body.ok).toBe(true);
    expect(Object.keys(body.result)).toEqual([
      'instance_id',
      'encoder',
      'h264',
      'sinks',
      'source',
      'stream',
    ]);
    expect(body.result.source).toMatchObject({ online: true, resolution: { width: 320 } });
    expect(body.result.stream).toEqual({ clients: 0, clients_stat: {}, queued_fps: 0 });

    const snap = await app.inject({ url: '/streamer/snapshot', headers: { token } });
    expect(snap.statusCode).toBe(200);
    expect(snap.headers['content-type']).toBe('image/jpeg');
    expect(snap.headers['x-ustreamer-online']).toBe('true');
    expect(snap.headers['x-ustreamer-width']).toBe('320');
    expect(jpegSize(snap.rawPayload)).toEqual({ width: 320, height: 240 });

    (app.ctx.drivers.video as TestbedVideo).setSignal(false);
    const off = await app.inject({ url: '/streamer/snapshot', headers: { token } });
    expect(off.statusCode).toBe(200);
    expect(off.headers['x-ustreamer-online']).toBe('false');
    expect(jpegSize(off.rawPayload)).toEqual({ width: 320, height: 240 });

    expect((await app.inject('/streamer/snapshot')).statusCode).toBe(401);
  });
});

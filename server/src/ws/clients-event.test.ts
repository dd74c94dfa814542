/**
 * kvmd 4.2xx's `clients` event on /api/ws: `{"count": <clients with stream=1>}`, after each new
 * client's burst (to everyone) and when a client leaves.
 */
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { FastifyInstance } from 'fastify';
import { initAndLogin, newApp } from '../test-helpers';

let app: FastifyInstance;
const sockets: WebSocket[] = [];
afterEach(async () => {
  sockets.splice(0).forEach((s) => s.terminate());
  await app?.close();
});

interface Frame {
  event_type: string;
  event: unknown;
}

function open(port: number, token: string, stream: string): { frames: Frame[]; ws: WebSocket } {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/api/ws${stream}`, { headers: { token } });
  sockets.push(ws);
  const frames: Frame[] = [];
  ws.on('message', (data, isBinary) => {
    if (!isBinary) frames.push(JSON.parse(String(data)) as Frame);
  });
  return { frames, ws };
}

const counts = (frames: Frame[]) =>
  frames.filter((f) => f.event_type === 'clients').map((f) => (f.event as { count: number }).count);

describe('the clients event', () => {
  it('counts the stream clients, sent after the burst and on every arrival and departure', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as { port: number }).port;

    const a = open(port, token, '');
    await expect.poll(() => counts(a.frames)).toEqual([1]);
    // after the burst: the state events came first
    const clientsAt = a.frames.findIndex((f) => f.event_type === 'clients');
    expect(a.frames.slice(0, clientsAt).some((f) => f.event_type === 'hid')).toBe(true);
    expect(a.frames[0]!.event_type).toBe('loop');

    const b = open(port, token, '?stream=0');
    await expect.poll(() => counts(b.frames)).toEqual([1]);
    await expect.poll(() => counts(a.frames)).toEqual([1, 1]);

    const c = open(port, token, '?stream=1');
    await expect.poll(() => counts(c.frames)).toEqual([2]);
    await expect.poll(() => counts(a.frames)).toEqual([1, 1, 2]);

    c.ws.close();
    await expect.poll(() => counts(a.frames)).toEqual([1, 1, 2, 1]);
    await expect.poll(() => counts(b.frames)).toEqual([1, 2, 1]);
  });
});

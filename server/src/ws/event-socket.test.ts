import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { FastifyInstance } from 'fastify';
import { initAndLogin, login, newApp, PASSWORD } from '../test-helpers';
import type { StateEvent } from './state-registry';

let app: FastifyInstance;
afterEach(async () => {
  await app?.close();
});

async function listen(): Promise<string> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  if (!addr || typeof addr === 'string') throw new Error('no address');
  return `ws://127.0.0.1:${addr.port}`;
}

/** Opens a socket and collects its text frames. */
function open(url: string, headers: Record<string, string> = {}) {
  const ws = new WebSocket(url, { headers });
  const frames: StateEvent[] = [];
  const binary: Buffer[] = [];
  const waiters: Array<() => void> = [];
  ws.on('message', (data, isBinary) => {
    if (isBinary) binary.push(data as Buffer);
    else frames.push(JSON.parse(String(data)) as StateEvent);
    waiters.splice(0).forEach((w) => w());
  });
  const until = async (pred: () => boolean, ms = 3000): Promise<void> => {
    const end = Date.now() + ms;
    while (!pred()) {
      if (Date.now() > end) throw new Error(`timeout; frames: ${JSON.stringify(frames)}`);
      await new Promise<void>((r) => {
        waiters.push(r);
        setTimeout(r, 50);
      });
    }
  };
  return { ws, frames, binary, until };
}

function failure(url: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { headers });
    ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.on('open', () => resolve(101));
    ws.on('error', () => undefined);
  });
}

describe('/api/ws', () => {
  it('sends loop first, then a snapshot of every provider, and answers pings', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const base = await listen();
    const c = open(`${base}/api/ws?stream=0`, { cookie: `auth_token=${token}` });
    await c.until(() => c.frames.length >= 5);
    expect(c.frames[0]).toEqual({
      event_type: 'loop',
      event: { version: { major: 4, minor: 82 } },
    });
    const info = c.frames
      .filter((f) => f.event_type === 'info')
      .map((f) => Object.keys(f.event as object)[0]);
    expect(info.sort()).toEqual(['auth', 'extras', 'meta', 'system']);

    c.ws.send(JSON.stringify({ event_type: 'ping', event: {} }));
    await c.until(() => c.frames.some((f) => f.event_type === 'pong'));
    expect(c.frames.find((f) => f.event_type === 'pong')).toEqual({
      event_type: 'pong',
      event: {},
    });

    c.ws.send(Buffer.from([0x00]));
    await c.until(() => c.binary.length > 0);
    expect([...c.binary[0]!]).toEqual([0xff]);

    // the latency readout's clock (ws/clock.ts): the device's epoch and monotonic ms
    const before = performance.timeOrigin + performance.now();
    c.ws.send(JSON.stringify({ event_type: 'clock', event: { id: 3 } }));
    await c.until(() => c.frames.some((f) => f.event_type === 'clock'));
    const clock = c.frames.find((f) => f.event_type === 'clock')!.event as Record<string, number>;
    expect(clock['id']).toBe(3);
    expect(clock['server_ms']).toBeGreaterThanOrEqual(before);
    expect(clock['server_ms']! - clock['mono_ms']!).toBeCloseTo(performance.timeOrigin, 3);

    // garbage is ignored, the socket stays up
    c.ws.send('not json');
    c.ws.send(JSON.stringify({ event_type: 'ping', event: 'x' }));
    c.ws.send(Buffer.from([0x77, 1, 2]));
    c.ws.send(JSON.stringify({ event_type: 'ping', event: {} }));
    await c.until(() => c.frames.filter((f) => f.event_type === 'pong').length === 2);
    expect(c.ws.readyState).toBe(WebSocket.OPEN);
    c.ws.close();
  });

  it('broadcasts provider changes to every client and counts stream clients', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    let emit: (e: StateEvent) => void = () => undefined;
    app.ctx.registry.register({
      name: 'demo',
      snapshot: () => [{ event_type: 'demo', event: { n: 0 } }],
      subscribe: (fn) => {
        emit = fn;
        return () => undefined;
      },
    });
    const base = await listen();
    const a = open(`${base}/api/ws?auth_token=${token}`);
    const b = open(`${base}/api/ws?stream=0&auth_token=${token}`);
    await a.until(() => a.frames.some((f) => f.event_type === 'demo'));
    await b.until(() => b.frames.some((f) => f.event_type === 'demo'));
    expect(app.events.streamClientCount).toBe(1);
    emit({ event_type: 'demo', event: { n: 1 } });
    await a.until(() =>
      a.frames.some((f) => f.event_type === 'demo' && (f.event as { n: number }).n === 1),
    );
    await b.until(() =>
      b.frames.some((f) => f.event_type === 'demo' && (f.event as { n: number }).n === 1),
    );
    a.ws.close();
    b.ws.close();
  });

  it('refuses the upgrade without or with wrong credentials, and a bad stream value', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const base = await listen();
    expect(await failure(`${base}/api/ws`)).toBe(401);
    expect(await failure(`${base}/api/ws?auth_token=${'0'.repeat(64)}`)).toBe(403);
    expect(await failure(`${base}/api/ws?stream=2&auth_token=${token}`)).toBe(400);
    expect(
      await failure(`${base}/api/ws`, { 'x-kvmd-user': 'admin', 'x-kvmd-passwd': PASSWORD }),
    ).toBe(101);
  });

  it('closes the sockets of a session that logs out', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const other = await login(app, PASSWORD);
    const base = await listen();
    const mine = open(`${base}/api/ws?auth_token=${token}`);
    const theirs = open(`${base}/api/ws?auth_token=${other}`);
    await mine.until(() => mine.frames.length > 0);
    await theirs.until(() => theirs.frames.length > 0);
    const closed = new Promise<number>((r) => mine.ws.on('close', (code) => r(code)));
    await app.inject({ method: 'POST', url: '/api/auth/logout', headers: { token } });
    expect(await closed).toBe(4001);
    expect(theirs.ws.readyState).toBe(WebSocket.OPEN);
    theirs.ws.close();
  });
});

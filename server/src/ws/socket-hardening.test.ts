/**
 * The three WebSockets of the full app (`/api/ws`, `/api/media/ws`, `/janus/ws`) against
 * hostile clients: any frame, a client that never reads, floods, session ends (issue 9 items
 * 1, 2, 5). Everything asynchronous is polled with a timeout.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { FastifyInstance } from 'fastify';
import { form, initAndLogin, login, newApp, PASSWORD } from '../test-helpers';
import {
  CONNECT_BURST,
  EVENT_SOCKET_LIMITS,
  JANUS_SOCKET_LIMITS,
  MAX_SOCKETS_PER_SESSION,
  MEDIA_SOCKET_LIMITS,
  type SocketKind,
} from './socket-guard';

let app: FastifyInstance;
let token: string;
let base: string;
const opened: WebSocket[] = [];
const uncaught: unknown[] = [];
const onUncaught = (err: unknown): void => void uncaught.push(err);

beforeEach(async () => {
  uncaught.length = 0;
  // A throw out of a socket handler is an uncaught exception: in production the process exits.
  process.on('uncaughtException', onUncaught);
  app = await newApp();
  token = await initAndLogin(app);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  if (!addr || typeof addr === 'string') throw new Error('no address');
  base = `ws://127.0.0.1:${addr.port}`;
});

afterEach(async () => {
  for (const ws of opened.splice(0)) ws.terminate();
  await app?.close();
  process.off('uncaughtException', onUncaught);
});

interface Kind {
  kind: Exclude<SocketKind, 'terminal'>;
  path: string;
  protocol?: string;
  ping: (ws: WebSocket) => void;
  isPong: (data: Buffer, isBinary: boolean) => boolean;
  maxBuffered: number;
}

const KINDS: Kind[] = [
  {
    kind: 'event',
    path: '/api/ws',
    ping: (ws) => ws.send(JSON.stringify({ event_type: 'ping', event: {} })),
    isPong: (d, b) => !b && String(d) === '{"event_type":"pong","event":{}}',
    maxBuffered: EVENT_SOCKET_LIMITS.maxBufferedBytes,
  },
  {
    kind: 'media',
    path: '/api/media/ws',
    ping: (ws) => ws.send(Buffer.from([0x00])),
    isPong: (d, b) => b && d.length === 1 && d[0] === 0xff,
    maxBuffered: MEDIA_SOCKET_LIMITS.maxBufferedBytes,
  },
  {
    kind: 'janus',
    path: '/janus/ws',
    protocol: 'janus-protocol',
    ping: (ws) => ws.send(JSON.stringify({ janus: 'ping', transaction: 'pp' })),
    isPong: (d, b) => !b && String(d).includes('"janus":"pong"'),
    maxBuffered: JANUS_SOCKET_LIMITS.maxBufferedBytes,
  },
];

async function poll(cond: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

interface Conn {
  ws: WebSocket;
  pongs: () => number;
  closed: () => number | null;
}

function connect(k: Kind, headers: Record<string, string> = { token }): Promise<Conn> {
  const ws = new WebSocket(`${base}${k.path}`, k.protocol ? [k.protocol] : [], { headers });
  opened.push(ws);
  let pongs = 0;
  let closed: number | null = null;
  ws.on('message', (data: Buffer, isBinary) => {
    if (k.isPong(data, isBinary)) pongs += 1;
  });
  ws.on('close', (code) => (closed = code));
  ws.on('error', () => undefined);
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ws, pongs: () => pongs, closed: () => closed }));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => reject(new Error(`HTTP ${res.statusCode} ${body}`)));
    });
  });
}

async function pingAnswered(k: Kind, c: Conn): Promise<void> {
  const before = c.pongs();
  k.ping(c.ws);
  await poll(() => c.pongs() > before, `a ${k.kind} pong`);
}

/** The server's side of every open socket (works without any hook of ours). */
function serverSockets(): WebSocket[] {
  return [...(app.websocketServer.clients as Set<WebSocket>)];
}

function heldBytes(): number {
  return serverSockets().reduce((n, s) => n + s.bufferedAmount, 0);
}

/**
 * A client that stops reading its TCP socket and sends `count` frames (`send`): returns the most
 * the server held for it unsent, watched until the server has closed it.
 */
async function floodUntilClosed(
  client: WebSocket,
  server: WebSocket,
  count: number,
  send: () => void,
): Promise<number> {
  (client as unknown as { _socket: { pause(): void } })._socket.pause();
  let maxHeld = 0;
  for (let i = 0; i < count; i += 1) {
    send();
    if (i % 1_000 === 0) {
      maxHeld = Math.max(maxHeld, heldBytes());
      await new Promise((r) => setImmediate(r));
    }
  }
  await poll(
    () => {
      maxHeld = Math.max(maxHeld, heldBytes());
      return server.readyState === WebSocket.CLOSED;
    },
    'the server to close the flooding client',
    20_000,
  );
  return maxHeld;
}

const NASTY_TEXT = [
  'null',
  '[]',
  '"x"',
  '1',
  'true',
  '1e999999',
  '-0',
  '{}',
  '',
  'not json',
  '{"event_type":"start","event":null}',
  '{"event_type":"start","event":[]}',
  '{"event_type":"start","event":"video"}',
  '{"event_type":null,"event":{}}',
  '{"event_type":"ping","event":null}',
  '{"event_type":"key","event":{"key":null,"state":[]}}',
  '{"event_type":"mouse_move","event":{"to":null}}',
  '{"event_type":"mouse_move","event":{"to":{"x":1e308,"y":-1e308}}}',
  '{"event_type":"mouse_wheel","event":{"delta":"x"}}',
  '{"event_type":"__proto__","event":{"__proto__":{"x":1}}}',
  '{"janus":"create","transaction":"t","id":1.5}',
  '{"janus":"create","transaction":"t","id":99999999999999999999}',
  '{"janus":"attach","transaction":"t","session_id":null,"plugin":[]}',
  '{"janus":"message","transaction":"t","session_id":1e308,"handle_id":-1,"body":null}',
  '{"janus":"trickle","transaction":[],"candidates":{}}',
  '{"janus":"claim","transaction":"t","session_id":"1"}',
  '{"janus":{},"transaction":{}}',
  '{"janus":"unknown-op","transaction":"t"}',
  // deep nesting within the smallest size limit (media: 4 KiB)
  '['.repeat(1900) + ']'.repeat(1900),
  '{"a":'.repeat(600) + '1' + '}'.repeat(600),
];

const NASTY_BINARY = [
  Buffer.alloc(0),
  Buffer.from([0x01]),
  Buffer.from([0x02]),
  Buffer.from([0x03, 0xff]),
  Buffer.from([0x04, 1, 2, 3]),
  Buffer.from([0x05]),
  Buffer.from([0x77, 1, 2]),
  Buffer.from([0x00, 0x00]),
  Buffer.from(JSON.stringify({ event_type: 'ping', event: {} })),
  Buffer.from(Array.from({ length: 200 }, (_, i) => (i * 37) & 255)),
];

describe.each(KINDS)('$path survives any frame', (k) => {
  it('answers a ping after every nasty frame of the wrong shape', async () => {
    const c = await connect(k);
    await pingAnswered(k, c);
    for (const text of NASTY_TEXT) c.ws.send(text);
    for (const bin of NASTY_BINARY) c.ws.send(bin, { binary: true });
    await pingAnswered(k, c);
    expect(c.closed()).toBeNull();
    expect(uncaught).toEqual([]);
  });

  it('closes only the socket that sends invalid UTF-8, and the server goes on', async () => {
    const c = await connect(k);
    c.ws.send(Buffer.from([0x7b, 0xc3, 0x28, 0x7d]), { binary: false });
    await poll(() => c.closed() !== null, 'the close');
    expect(c.closed()).toBe(1007);
    await pingAnswered(k, await connect(k));
    expect(uncaught).toEqual([]);
  });

  it('closes a socket that sends a message over its size limit', async () => {
    const c = await connect(k);
    const limit = {
      event: EVENT_SOCKET_LIMITS,
      media: MEDIA_SOCKET_LIMITS,
      janus: JANUS_SOCKET_LIMITS,
    }[k.kind].maxMessageBytes;
    c.ws.send(' '.repeat(limit + 1));
    await poll(() => c.closed() !== null, 'the close');
    expect(c.closed()).toBe(1009);
    await pingAnswered(k, await connect(k));
  });
});

describe('a handler that throws', () => {
  it('closes only its socket with 1011, logs, and leaves the process and others alone', async () => {
    app.events.onBinary(0x42, () => {
      throw new TypeError('a bug behind a frame');
    });
    const k = KINDS[0]!;
    const victim = await connect(k);
    const bystander = await connect(k);
    victim.ws.send(Buffer.from([0x42, 1]));
    await poll(() => victim.closed() !== null, 'the close');
    expect(victim.closed()).toBe(1011);
    await pingAnswered(k, bystander);
    expect(uncaught).toEqual([]);
  });
});

describe('the media socket and a `null` frame', () => {
  it('does not throw out of the handler (it used to end the process)', async () => {
    const k = KINDS[1]!;
    const c = await connect(k);
    c.ws.send('null');
    c.ws.send('{"event_type":"start","event":null}');
    k.ping(c.ws);
    // Before the fix: "TypeError: Cannot read properties of null (reading 'event_type')" out
    // of the message listener, which vitest catches here and systemd saw as an exit.
    await poll(() => c.pongs() > 0 || uncaught.length > 0, 'a pong or a crash');
    expect(uncaught.map(String)).toEqual([]);
    // the socket still works as a video socket
    c.ws.send(JSON.stringify({ event_type: 'start', event: { type: 'video', format: 'h264' } }));
    await pingAnswered(k, c);
    expect(uncaught).toEqual([]);
  });
});

describe.each(KINDS)('$path and a client that never reads', (k) => {
  // ws itself cuts a client with 60 unsent automatic pongs (`maxPendingAutoPongs`); this keeps
  // it so, and the pings count against the message budget too.
  it('holds a bounded buffer against a protocol ping flood and closes the client', async () => {
    const c = await connect(k);
    await pingAnswered(k, c);
    const mine = serverSockets();
    expect(mine).toHaveLength(1);
    const payload = Buffer.alloc(125, 0x61);
    // 60,000 pings of 125 bytes: 7.5 MB of pongs if every one were answered.
    const maxHeld = await floodUntilClosed(c.ws, mine[0]!, 60_000, () => c.ws.ping(payload));
    expect(maxHeld).toBeLessThanOrEqual(k.maxBuffered + 64 * 1024);
  });

  it('drops excess application pings and closes a client far over its budget', async () => {
    const c = await connect(k);
    await pingAnswered(k, c);
    const mine = serverSockets();
    const maxHeld = await floodUntilClosed(c.ws, mine[0]!, 20_000, () => k.ping(c.ws));
    expect(maxHeld).toBeLessThanOrEqual(k.maxBuffered + 64 * 1024);
    // the server is still there for everyone else
    await pingAnswered(k, await connect(k));
  });
});

describe('/api/ws send-buffer bound', () => {
  it('closes a client that does not read state events instead of holding them all', async () => {
    let emit: (e: { event_type: string; event: unknown }) => void = () => undefined;
    app.ctx.registry.register({
      name: 'big',
      snapshot: () => [],
      subscribe: (fn) => {
        emit = fn;
        return () => undefined;
      },
    });
    const k = KINDS[0]!;
    const c = await connect(k);
    await pingAnswered(k, c);
    const mine = serverSockets();
    (c.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    const blob = 'x'.repeat(32 * 1024);
    let maxHeld = 0;
    // 40 MB of state if all were held
    for (let i = 0; i < 1_250 && mine[0]!.readyState === WebSocket.OPEN; i += 1) {
      emit({ event_type: 'big', event: { i, blob } });
      maxHeld = Math.max(maxHeld, heldBytes());
      if (i % 50 === 0) await new Promise((r) => setImmediate(r));
    }
    await poll(() => mine[0]!.readyState === WebSocket.CLOSED, 'the close', 20_000);
    expect(maxHeld).toBeLessThanOrEqual(EVENT_SOCKET_LIMITS.maxBufferedBytes + 64 * 1024);
  });
});

describe('session ends close every socket', () => {
  it('closes the media socket of a session that logs out with 4001', async () => {
    const k = KINDS[1]!;
    const c = await connect(k);
    await pingAnswered(k, c);
    await app.inject({ method: 'POST', url: '/api/auth/logout', headers: { token } });
    await poll(() => c.closed() !== null, 'the close');
    expect(c.closed()).toBe(4001);
  });

  it('closes the sockets of other sessions and of header credentials on a password change', async () => {
    const other = await login(app, PASSWORD);
    const conns = await Promise.all(KINDS.map((k) => connect(k, { token: other })));
    const header = await Promise.all(
      KINDS.map((k) => connect(k, { 'x-kvmd-user': 'admin', 'x-kvmd-passwd': PASSWORD })),
    );
    const mine = await connect(KINDS[1]!);
    const res = await app.inject({
      method: 'POST',
      url: `/api/init/change_password?old_password=${encodeURIComponent(PASSWORD)}&new_password=another1`,
      headers: { token },
    });
    expect(res.statusCode).toBe(200);
    for (const c of [...conns, ...header]) {
      await poll(() => c.closed() !== null, 'the close');
      expect(c.closed()).toBe(4001);
    }
    // the session that changed the password keeps its sockets
    await pingAnswered(KINDS[1]!, mine);
  });
});

/** Connects, waiting out the connect rate (CONNECTS_PER_SECOND) when it refuses. */
async function connectPatiently(k: Kind): Promise<Conn> {
  for (let tries = 0; ; tries += 1) {
    try {
      return await connect(k);
    } catch (err) {
      if (!String(err).includes('Too many new sockets') || tries > 100) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

describe('session expiry', () => {
  it.each(KINDS)(
    'closes $path with 4001 at the first ping after its session expired',
    async (k) => {
      const res = await app.inject({
        method: 'POST',
        url: '/api/auth/login',
        ...form({ user: 'admin', passwd: PASSWORD, expire: '1' }),
      });
      const short = (res.json() as { result: { token: string } }).result.token;
      const c = await connect(k, { token: short });
      await pingAnswered(k, c);
      // The session lasts 1 s from its last use, and an answered ping is a use: stay quiet for
      // longer than that, then ping once.
      for (let i = 0; i < 5 && c.closed() === null; i += 1) {
        await new Promise((r) => setTimeout(r, 1_500));
        k.ping(c.ws);
        await poll(() => c.closed() !== null, 'the close', 2_000).catch(() => undefined);
      }
      expect(c.closed()).toBe(4001);
    },
  );
});

describe('sockets per session', () => {
  it('refuses an upgrade over the per-session cap with 429', async () => {
    const k = KINDS[1]!;
    for (let i = 0; i < MAX_SOCKETS_PER_SESSION; i += 1) await connectPatiently(k);
    await new Promise((r) => setTimeout(r, 500));
    await expect(connect(k)).rejects.toThrow('HTTP 429');
    await expect(connect(KINDS[0]!)).rejects.toThrow('Too many open sockets for this session');
    // another session is not affected
    const other = await login(app, PASSWORD);
    await pingAnswered(k, await connect(k, { token: other }));
  });

  it('refuses new sockets over the connect rate with 429, per session', async () => {
    const k = KINDS[0]!;
    const results = await Promise.allSettled(
      Array.from({ length: CONNECT_BURST * 2 }, async () => {
        const c = await connect(k);
        c.ws.close();
      }),
    );
    const refused = results.filter(
      (r) => r.status === 'rejected' && String(r.reason).includes('Too many new sockets'),
    );
    expect(refused.length).toBeGreaterThan(0);
    expect(results.filter((r) => r.status === 'fulfilled').length).toBeGreaterThanOrEqual(
      CONNECT_BURST,
    );
    const other = await login(app, PASSWORD);
    await pingAnswered(k, await connect(k, { token: other }));
  });
});

describe('a plain GET on a socket URL', () => {
  it.each(KINDS)('answers $path in the envelope with 400', async (k) => {
    const res = await app.inject({ method: 'GET', url: k.path, headers: { token } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      ok: false,
      result: {
        error: 'BadRequestError',
        error_msg: 'This URL is a WebSocket: send an upgrade request',
      },
    });
  });
});

import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp, createContext } from '../app';
import { buildConfig } from '../config';
import { loadConfigDefaults } from '../paths';
import { loadOrCreateCertificate } from '../services/tls';
import { initAndLogin, newApp, tempDataDir } from '../test-helpers';
import { edgeFastify, edgeLimits, FD_RESERVE } from './edge';

let app: FastifyInstance | undefined;
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await app?.close();
  app = undefined;
});

async function listen(server: Record<string, unknown> = {}): Promise<number> {
  app = await newApp(undefined, { server: { tls: false, redirect_listen: null, ...server } });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (!address || typeof address !== 'object') throw new Error('not listening');
  return address.port;
}

interface Raw {
  socket: Socket;
  closed: () => boolean;
  received: () => string;
}

function raw(port: number, localAddress = '127.0.0.1', first = ''): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress });
    sockets.push(socket);
    let closed = false;
    let data = '';
    socket.on('data', (c: Buffer) => (data += c.toString()));
    socket.on('close', () => (closed = true));
    socket.on('error', () => undefined);
    socket.once('connect', () => {
      if (first) socket.write(first);
      resolve({ socket, closed: () => closed, received: () => data });
    });
    socket.once('error', reject);
  });
}

/** One complete request over a fresh connection; the status line and body. */
async function request(port: number, text: string, from = '127.0.0.1') {
  const c = await raw(port, from, text);
  await expect.poll(() => c.closed() || /\r\n\r\n[\s\S]*\}$/.test(c.received())).toBe(true);
  const [head = '', body = ''] = c.received().split('\r\n\r\n');
  return { status: Number(head.split(' ')[1]), head, body };
}

describe('limits', () => {
  it('derives the server-wide cap from the open-file limit', () => {
    const base = buildConfig({}, loadConfigDefaults()).server;
    expect(edgeLimits(base, 65536).maxConnections).toBe(65536 - FD_RESERVE);
    expect(edgeLimits(base, 1024).maxConnections).toBe(1024 - FD_RESERVE);
    expect(edgeLimits(base, null).maxConnections).toBeNull();
  });
});

describe('route schemas', () => {
  it('refuses a Fastify schema at registration, saying where to validate, and never loads ajv', async () => {
    const base = buildConfig({}, loadConfigDefaults()).server;
    app = edgeFastify(edgeLimits(base, null), { logger: false });
    app.get('/plain', () => ({ ok: true }));
    app.post('/schema', { schema: { body: { type: 'object' } } }, () => ({ ok: true }));
    await expect(app.ready()).rejects.toThrow(/validate in the handler/);
    app = edgeFastify(edgeLimits(base, null), { logger: false });
    app.get('/plain', () => ({ ok: true }));
    expect((await app.inject({ url: '/plain' })).json()).toEqual({ ok: true });
    const loaded = Object.keys(require.cache).filter((m) => /[\\/]ajv[\\/]/.test(m));
    expect(loaded).toEqual([]);
  });
});

describe('slowloris (issue 9, item 9)', () => {
  it('closes connections over the per-address cap and still answers another address', async () => {
    const port = await listen({ max_connections_per_address: 50 });
    const half = 'GET /api/init/is_inited HTTP/1.1\r\nHost: kvm\r\nX-Slow: ';
    const attackers: Raw[] = [];
    for (let i = 0; i < 300; i += 1) attackers.push(await raw(port, '127.0.0.2', half));
    await expect
      .poll(() => attackers.filter((a) => a.closed()).length, { timeout: 10_000 })
      .toBe(250);
    // the first 50 are the ones kept
    expect(attackers.slice(0, 50).some((a) => a.closed())).toBe(false);
    const admin = await request(
      port,
      'GET /api/init/is_inited HTTP/1.1\r\nHost: kvm\r\nConnection: close\r\n\r\n',
    );
    expect(admin.status).toBe(200);
    // a closed slot is free again
    attackers[0]!.socket.destroy();
    await expect.poll(async () => !(await raw(port, '127.0.0.2')).closed()).toBe(true);
  });

  it('answers 408 in the envelope and closes a connection whose headers never end', async () => {
    const port = await listen({ headers_timeout_s: 0.5 });
    const c = await raw(port, '127.0.0.1', 'GET / HTTP/1.1\r\nHost: kvm\r\n');
    await expect.poll(() => c.closed(), { timeout: 10_000 }).toBe(true);
    expect(c.received()).toMatch(/^HTTP\/1\.1 408 /);
    expect(JSON.parse(c.received().split('\r\n\r\n')[1]!)).toEqual({
      ok: false,
      result: { error: 'RequestTimeoutError', error_msg: expect.any(String) },
    });
    const silent = await raw(port);
    await expect.poll(() => silent.closed(), { timeout: 10_000 }).toBe(true);
  });

  it('closes a connection whose body stalls, but not one whose body keeps coming', async () => {
    const port = await listen({ headers_timeout_s: 0.5, idle_timeout_s: 2 });
    const head = (n: number): string =>
      `POST /api/auth/login HTTP/1.1\r\nHost: kvm\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${n}\r\nConnection: close\r\n\r\n`;
    const stalled = await raw(port, '127.0.0.1', `${head(100)}user=admin`);
    await expect.poll(() => stalled.closed(), { timeout: 10_000 }).toBe(true);
    expect(stalled.received()).toBe('');

    // 30 bytes over 3 s: longer than the headers timeout and the idle timeout together
    const body = 'user=admin&passwd=xxxxxxxxxxxx';
    const slow = await raw(port, '127.0.0.1', head(body.length));
    for (const ch of body) {
      slow.socket.write(ch);
      await new Promise((r) => setTimeout(r, 100));
    }
    await expect.poll(() => slow.received()).toMatch(/^HTTP\/1\.1 \d{3} /);
    expect(slow.received()).not.toMatch(/^HTTP\/1\.1 408/);
  });

  it('gives a TLS handshake no longer than the headers timeout', async () => {
    const dir = await tempDataDir();
    const config = buildConfig(
      {
        data_dir: dir,
        target: 'testbed',
        webrtc: { stun_url: null },
        server: { headers_timeout_s: 0.5 },
      },
      loadConfigDefaults(),
    );
    const https = await loadOrCreateCertificate(join(dir, 'tls'));
    app = await buildApp(await createContext(config, '0.0.0-test'), { https });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as { port: number }).port;
    const c = await raw(port);
    await expect.poll(() => c.closed(), { timeout: 10_000 }).toBe(true);
  });
});

describe("the HTTP parser's errors in the envelope (issue 9, item 19)", () => {
  it.each([
    ['a bad request line', 'GARBAGE\r\n\r\n', 400],
    ['a bad header', 'GET / HTTP/1.1\r\nHost: kvm\r\nBad Header: x\r\n\r\n', 400],
    [
      'a bad chunk size',
      'POST /api/auth/login HTTP/1.1\r\nHost: kvm\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
      400,
    ],
    [
      'both Content-Length and chunked',
      'POST /api/auth/login HTTP/1.1\r\nHost: kvm\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      400,
    ],
    [
      'oversize headers',
      `GET / HTTP/1.1\r\nHost: kvm\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      431,
    ],
    ['an oversize URL', `GET /?${'a=1&'.repeat(5000)} HTTP/1.1\r\nHost: kvm\r\n\r\n`, 431],
  ])('%s', async (_name, text, status) => {
    const port = await listen();
    const res = await request(port, text);
    expect(res.status).toBe(status);
    expect(res.head).toContain('Content-Type: application/json');
    expect(res.head).toContain('Connection: close');
    const body = JSON.parse(res.body) as { ok: boolean; result: { error: string } };
    expect(body.ok).toBe(false);
    expect(typeof body.result.error).toBe('string');
  });

  it('a HTTP/1.1 request without Host is a 400 in the envelope too', async () => {
    const port = await listen();
    const res = await request(port, 'GET /api/init/is_inited HTTP/1.1\r\n\r\n');
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({ ok: false, result: { error: 'ValidatorError' } });
    const old = await request(port, 'GET /api/init/is_inited HTTP/1.0\r\n\r\n');
    expect(old.status).toBe(200);
  });
});

describe('the edge of the HTTP edge (issue 9, item 7)', () => {
  it('a HEAD never runs an API handler', async () => {
    app = await newApp();
    let ran = 0;
    app.get('/api/test/acts', async () => {
      ran += 1;
      return {};
    });
    const token = await initAndLogin(app);
    const head = await app.inject({ method: 'HEAD', url: '/api/test/acts', headers: { token } });
    expect(head.statusCode).toBe(405);
    expect(ran).toBe(0);
    expect((await app.inject({ url: '/api/test/acts', headers: { token } })).statusCode).toBe(200);
    expect(ran).toBe(1);
    // the console's files still answer HEAD
    expect((await app.inject({ method: 'HEAD', url: '/' })).statusCode).not.toBe(405);
  });

  it('a compressed request body is 415, not "invalid JSON"', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const res = await app.inject({
      method: 'POST',
      url: '/api/system/set_config',
      headers: { token, 'content-type': 'application/json', 'content-encoding': 'gzip' },
      payload: gzipSync('{"theme_mode":1}'),
    });
    expect(res.statusCode).toBe(415);
    expect(res.json()).toMatchObject({ result: { error: 'UnsupportedMediaTypeError' } });
  });

  it('a URL that does not decode is a 400 in the envelope', async () => {
    app = await newApp();
    for (const url of ['/api/%zz', '/%zz']) {
      const res = await app.inject({ url });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ ok: false, result: { error: 'ValidatorError' } });
    }
  });

  it('a missing file and an unknown page are 404 in the envelope', async () => {
    app = await newApp();
    const file = await app.inject({ url: '/assets/gone-123.js' });
    expect(file.statusCode).toBe(404);
    expect(file.json()).toMatchObject({ ok: false, result: { error: 'NotFoundError' } });
  });

  it('closes, not drains, a connection whose body is refused before it arrived', async () => {
    const port = await listen();
    const c = await raw(
      port,
      '127.0.0.1',
      'POST /api/msd/write?image=x.iso HTTP/1.1\r\nHost: kvm\r\nContent-Length: 1000000000\r\n\r\n' +
        'x'.repeat(1000),
    );
    await expect.poll(() => c.received()).toMatch(/^HTTP\/1\.1 401 /);
    expect(c.received().toLowerCase()).toContain('connection: close');
    // keep sending: the server must not keep reading a stranger's gigabyte
    const timer = setInterval(() => c.socket.write('x'.repeat(1000)), 20);
    try {
      await expect.poll(() => c.closed(), { timeout: 10_000 }).toBe(true);
    } finally {
      clearInterval(timer);
    }
  });
});

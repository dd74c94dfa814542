/**
 * Issue 13 item 1: aiohttp's `post(url, params=…)` sends no body but
 * `Content-Type: application/octet-stream` and `Content-Length: 0`; kvmd reads only the query.
 * Every POST route of the route table (as auth-matrix.test.ts walks it) must take that request
 * (and an empty JSON body, and the same type without a length) without a body error: it may
 * answer its own errors about the query. The commands the issue names go over a real socket
 * with aiohttp's exact request.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { FAST_HASHER, newAuthApp } from '../services/auth/auth-test-kit';
import { initAndLogin, PASSWORD } from '../test-helpers';

let app: FastifyInstance;
let port: number;
const BASIC = `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}`;

beforeAll(async () => {
  app = await newAuthApp({
    passwords: FAST_HASHER,
    overrides: { wol: { network: 'host', address: '127.0.0.1', port: 9 } },
  });
  await initAndLogin(app);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  port = address.port;
});
afterAll(async () => {
  await app.close();
});

/** aiohttp 3.x's headers for a POST with params only (Host and Authorization aside). */
const AIOHTTP = {
  accept: '*/*',
  'accept-encoding': 'gzip, deflate',
  'user-agent': 'Python/3.12 aiohttp/3.12.15',
  authorization: BASIC,
};

/**
 * What a parser's refusal looks like: 415, or Fastify's own messages about the body. A route
 * that reads a body may still say in its own words that it got none.
 */
function bodyRefusal(status: number, body: string): boolean {
  if (status === 415) return true;
  return (
    status === 400 &&
    /Unsupported Media Type|Body cannot be empty|did not match Content-Length|Body is not valid JSON/i.test(
      body,
    )
  );
}

function concrete(url: string): string {
  return url.replace(/\*$/, 'x').replace(/:(\w+)/g, 'x');
}

describe('every POST route of the route table', () => {
  const variants: Array<{ name: string; headers: Record<string, string> }> = [
    {
      name: 'octet-stream, Content-Length: 0',
      headers: { 'content-type': 'application/octet-stream', 'content-length': '0' },
    },
    { name: 'octet-stream, no length', headers: { 'content-type': 'application/octet-stream' } },
    {
      name: 'application/json, empty',
      headers: { 'content-type': 'application/json', 'content-length': '0' },
    },
  ];
  for (const variant of variants) {
    it(`takes a body-less POST: ${variant.name}`, async () => {
      const posts = app.routeTable.filter((r) => r.method === 'POST' && !r.websocket);
      expect(posts.length).toBeGreaterThan(30);
      const refused: string[] = [];
      for (const route of posts) {
        const res = await app.inject({
          method: 'POST',
          url: concrete(route.url),
          headers: { ...AIOHTTP, ...variant.headers },
          ...(variant.headers['content-length'] === '0' ? { payload: '' } : {}),
        });
        if (bodyRefusal(res.statusCode, res.body))
          refused.push(`${route.url}: ${res.statusCode} ${res.body}`);
      }
      expect(refused).toEqual([]);
    }, 60_000);
  }
});

/** One request, byte for byte as aiohttp writes it; resolves with the status and body. */
function rawPost(path: string, extraHead = ''): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (c: Buffer) => {
      received += c.toString('utf8');
      const end = received.indexOf('\r\n\r\n');
      if (end < 0) return;
      const length = /content-length: (\d+)/i.exec(received.slice(0, end))?.[1];
      const body = received.slice(end + 4);
      if (length !== undefined && Buffer.byteLength(body) >= Number(length)) {
        socket.destroy();
        resolve({ status: Number(received.slice(9, 12)), body });
      }
    });
    socket.on('error', reject);
    socket.write(
      `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: */*\r\n` +
        `Accept-Encoding: gzip, deflate\r\nUser-Agent: Python/3.12 aiohttp/3.12.15\r\n` +
        `Authorization: ${BASIC}\r\n${extraHead || 'Content-Length: 0\r\nContent-Type: application/octet-stream\r\n'}\r\n`,
    );
  });
}

describe("the issue's commands, as aiohttp sends them", () => {
  it('runs each one', async () => {
    const ok = [
      '/api/hid/set_params?jiggler=0',
      '/api/hid/reset',
      '/api/hid/events/send_shortcut?keys=ControlLeft,KeyA',
      '/api/streamer/set_params?desired_fps=25',
      '/api/wol/wake?mac=02:00:00:00:00:01',
    ];
    for (const path of ok) {
      const res = await rawPost(path);
      expect({ path, status: res.status, body: res.body }).toMatchObject({ path, status: 200 });
      expect(JSON.parse(res.body)).toMatchObject({ ok: true });
    }
    // their own answers about the query, never about the body
    for (const path of [
      '/api/atx/power?action=off',
      '/api/msd/set_params?image=none.iso',
      '/api/msd/set_connected?connected=1',
    ]) {
      const res = await rawPost(path);
      expect(bodyRefusal(res.status, res.body)).toBe(false);
      expect(res.status).not.toBe(500);
    }
  });

  it('ignores a body a query-only route was sent, within the body limit', async () => {
    const res = await rawPost(
      '/api/hid/set_params?jiggler=0',
      'Content-Type: application/octet-stream\r\nContent-Length: 5\r\n\r\nhello',
    );
    expect(res.status).toBe(200);
    const big = await app.inject({
      method: 'POST',
      url: '/api/hid/reset',
      headers: { ...AIOHTTP, 'content-type': 'application/octet-stream' },
      payload: Buffer.alloc(2 * 1024 * 1024),
    });
    expect(big.statusCode).toBe(413);
  });

  it('still parses the bodies of routes that read one', async () => {
    const login = await app.inject({
      method: 'POST',
      url: '/api/auth/login',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `user=admin&passwd=${encodeURIComponent(PASSWORD)}`,
    });
    expect(login.statusCode).toBe(200);
    const bad = await app.inject({
      method: 'POST',
      url: '/api/system/set_config',
      headers: { ...AIOHTTP, 'content-type': 'application/json' },
      payload: '{"a":',
    });
    expect(bad.statusCode).toBe(400);
    const poisoned = await app.inject({
      method: 'POST',
      url: '/api/system/set_config',
      headers: { ...AIOHTTP, 'content-type': 'application/json' },
      payload: '{"__proto__":{"x":1}}',
    });
    expect(poisoned.statusCode).toBe(400);
    const empty = await app.inject({
      method: 'POST',
      url: '/api/system/set_config',
      headers: { ...AIOHTTP, 'content-type': 'application/json', 'content-length': '0' },
      payload: '',
    });
    expect(empty.statusCode).toBe(400);
    expect(empty.json().result.error).toBe('ValidatorError');
  });
});

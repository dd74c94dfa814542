/**
 * The console through the fleet (`/d/<id>/...`) against a FAKE device agent: who may open it,
 * what crosses (headers, cookies, HTML rewritten), HTTP and WebSocket with 3 MiB each way under
 * the streams' flow control, an offline or silent device.
 */
import { createHash } from 'node:crypto';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { AGENT_STREAM_WINDOW } from '@kvm/protocol';
import {
  closedAfterEach,
  FakeAgent,
  FakeDirectory,
  bigBody,
  startReplica,
  waitFor,
} from '../agents/test-kit';
import { rewriteHtml } from './html';

const { replicas, agents } = closedAfterEach();

const ME = { 'x-test-user': 'acc1' };
const MiB = 1 << 20;

async function setup(opts: Parameters<typeof startReplica>[2] = {}) {
  const dir = new FakeDirectory();
  dir.add('dev1', 'acc1');
  dir.add('dev2', 'acc2');
  const r = await startReplica(dir, 'fleet-a', opts);
  replicas.push(r);
  const a = await (await FakeAgent.connect(r.url, { id: 'dev1', silentPaths: ['/slow'] })).ready();
  agents.push(a);
  return { dir, r, a };
}

type Envelope = { ok: boolean; result: { error: string; error_msg: string } };

describe('tunnel: who may open a console', () => {
  it("needs a fleet session (401; a page is sent to sign in), and never shows another account's device (404)", async () => {
    const { r } = await setup();
    const api = await fetch(`${r.url}/d/dev1/api/info`);
    expect(api.status).toBe(401);
    expect(((await api.json()) as Envelope).result.error).toBe('UnauthorizedError');
    const page = await fetch(`${r.url}/d/dev1/`, {
      headers: { accept: 'text/html' },
      redirect: 'manual',
    });
    expect(page.status).toBe(302);
    expect(page.headers.get('location')).toBe(`/?next=${encodeURIComponent('/d/dev1/')}#signin`);

    // dev2 exists (account 2) and dev9 does not: the same 404 for account 1.
    for (const id of ['dev2', 'dev9', 'bad.id']) {
      const res = await fetch(`${r.url}/d/${id}/api/info`, { headers: ME });
      expect(res.status).toBe(404);
      expect(((await res.json()) as Envelope).result).toEqual({
        error: 'NotFoundError',
        error_msg: 'No such device',
      });
    }
    // A WebSocket too.
    const ws = new WebSocket(`${r.url.replace('http', 'ws')}/d/dev2/api/ws`, { headers: ME });
    const status = await new Promise<number>((res) => {
      ws.on('unexpected-response', (_q, m) => res(m.statusCode ?? 0));
      ws.on('open', () => res(101));
    });
    expect(status).toBe(404);
  });

  it("another site's page cannot open a console's socket with the fleet's cookie (403, nothing reaches the device)", async () => {
    const { r } = await setup();
    const host = new URL(r.url).host;
    const open = (origin: string) => {
      const ws = new WebSocket(`${r.url.replace('http', 'ws')}/d/dev1/api/ws`, {
        headers: ME,
        origin,
      });
      return new Promise<number>((res) => {
        ws.on('unexpected-response', (_q, m) => res(m.statusCode ?? 0));
        ws.on('open', () => {
          res(101);
          ws.close();
        });
        ws.on('error', () => res(0));
      });
    };
    expect(await open('https://evil.example')).toBe(403);
    expect(r.relay.localConnection('dev1')!.openStreams).toBe(0);
    expect(await open(`https://${host}`)).toBe(101);
  });

  it('an offline device is 502, a silent one 504', async () => {
    const { r, dir } = await setup({ headTimeoutMs: 500 });
    dir.add('dev3', 'acc1');
    const off = await fetch(`${r.url}/d/dev3/api/info`, { headers: ME });
    expect(off.status).toBe(502);
    expect(((await off.json()) as Envelope).result.error).toBe('DeviceOfflineError');
    const slow = await fetch(`${r.url}/d/dev1/slow`, { headers: ME });
    expect(slow.status).toBe(504);
    expect(((await slow.json()) as Envelope).result.error).toBe('DeviceTimeoutError');
  });
});

describe('tunnel: HTTP', () => {
  it("strips /d/<id>, keeps the fleet's cookies and Authorization off the device, drops Set-Cookie, logs the opening", async () => {
    const { r, a, dir } = await setup();
    const res = await fetch(`${r.url}/d/dev1/api/echo-headers?x=1&y=%2F`, {
      headers: {
        ...ME,
        cookie: 'fleet_session=abc',
        authorization: 'Bearer fleet',
        'x-kvm-test': 'kept',
      },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('set-cookie')).toBeNull();
    const seen = (await res.json()) as {
      path: string;
      headers: Record<string, string>;
      user: unknown;
    };
    expect(seen.path).toBe('/api/echo-headers?x=1&y=%2F');
    expect(seen.headers.cookie).toBeUndefined();
    expect(seen.headers.authorization).toBeUndefined();
    expect(seen.headers['x-kvm-test']).toBe('kept');
    expect(seen.user).toEqual({ id: 'acc1', name: 'user-acc1' });
    expect(a.opens.at(-1)).toMatchObject({ kind: 'http', method: 'GET' });

    const redirect = await fetch(`${r.url}/d/dev1/login-redirect`, {
      headers: ME,
      redirect: 'manual',
    });
    expect(redirect.headers.get('location')).toBe('/d/dev1/login');

    const page = await fetch(`${r.url}/d/dev1/`, { headers: { ...ME, accept: 'text/html' } });
    const html = await page.text();
    expect(html).toContain('<head><meta name="kvm-base" content="/d/dev1">');
    expect(html).toContain('src="/d/dev1/assets/app.js"');
    expect(html).toContain('href="/d/dev1/favicon.ico"');
    expect(html).toContain('href="//cdn.example/x.css"');
    expect(html).toContain('href="https://x.example/"');
    expect(Number(page.headers.get('content-length'))).toBe(Buffer.byteLength(html));
    expect(page.headers.get('set-cookie')).toBeNull();
    await waitFor(
      () => dir.events.find((e) => e.kind === 'console_opened'),
      5000,
      'console_opened',
    );
    expect(dir.events.find((e) => e.kind === 'console_opened')).toMatchObject({
      deviceId: 'dev1',
      accountId: 'acc1',
      detail: { user: 'user-acc1' },
    });
  });

  it('a page too large to rewrite is 502 at once, its stream dropped', async () => {
    const { r } = await setup();
    const res = await fetch(`${r.url}/d/dev1/huge.html`, {
      headers: { ...ME, accept: 'text/html' },
    });
    expect(res.status).toBe(502);
    expect(((await res.json()) as Envelope).result.error_msg).toMatch(/too large/);
    await waitFor(() => r.relay.localConnection('dev1')!.openStreams === 0, 5000, 'stream dropped');
  });

  it('carries 3 MiB up and 3 MiB down, never more than a window in flight', async () => {
    const { r, a } = await setup();
    const up = Buffer.alloc(3 * MiB, 0x5a);
    for (let i = 0; i < up.length; i += 4096) up[i] = i & 0xff;
    const res = await fetch(`${r.url}/d/dev1/upload`, {
      method: 'POST',
      headers: { ...ME, 'content-type': 'application/octet-stream' },
      body: up,
    });
    expect(res.status).toBe(200);
    const got = (await res.json()) as { bytes: number; sha256: string; maxUnacked: number };
    expect(got.bytes).toBe(up.length);
    expect(got.sha256).toBe(createHash('sha256').update(up).digest('hex'));
    expect(a.maxUnacked).toBeLessThanOrEqual(AGENT_STREAM_WINDOW);

    // A body of unknown length (chunked): the device is told one follows.
    const streamed = await fetch(`${r.url}/d/dev1/upload`, {
      method: 'PUT',
      headers: { ...ME, 'content-type': 'application/octet-stream' },
      body: new Blob([up.subarray(0, MiB)]).stream(),
      duplex: 'half',
    } as RequestInit);
    expect(((await streamed.json()) as { bytes: number }).bytes).toBe(MiB);
    expect(a.opens.at(-1)!.headers['transfer-encoding']).toBe('chunked');
    expect(a.opens.at(-1)!.headers['content-length']).toBeUndefined();

    const down = await fetch(`${r.url}/d/dev1/big?n=${3 * MiB}`, { headers: ME });
    expect(down.status).toBe(200);
    const body = Buffer.from(await down.arrayBuffer());
    expect(body.length).toBe(3 * MiB);
    expect(body.equals(bigBody(3 * MiB))).toBe(true);
  });

  it("a browser that leaves mid-download ends the device's stream", async () => {
    const { r } = await setup();
    const ctl = new AbortController();
    const res = await fetch(`${r.url}/d/dev1/big?n=${8 * MiB}`, {
      headers: ME,
      signal: ctl.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    ctl.abort();
    await waitFor(() => r.relay.localConnection('dev1')!.openStreams === 0, 10_000, 'stream ended');
  });
});

describe('tunnel: WebSocket', () => {
  it('passes the subprotocol, text and binary messages (3 MiB each way), and the close', async () => {
    const { r, a } = await setup();
    const ws = new WebSocket(`${r.url.replace('http', 'ws')}/d/dev1/janus/ws`, ['janus-protocol'], {
      headers: ME,
    });
    await new Promise((res, rej) => {
      ws.on('open', res);
      ws.on('error', rej);
    });
    expect(ws.protocol).toBe('janus-protocol');
    expect(a.opens.at(-1)).toMatchObject({
      kind: 'ws',
      path: '/janus/ws',
      protocols: ['janus-protocol'],
    });
    const got: Array<{ text: boolean; data: Buffer }> = [];
    ws.on('message', (data, isBinary) => got.push({ text: !isBinary, data: data as Buffer }));
    ws.send('{"janus":"keepalive"}');
    await waitFor(() => got.length === 1, 5000, 'text echo');
    expect(got[0]).toEqual({ text: true, data: Buffer.from('{"janus":"keepalive"}') });

    // 12 binary messages of 256 KiB: 3 MiB out and echoed back.
    const msg = Buffer.alloc(256 * 1024);
    for (let i = 0; i < 12; i += 1) ws.send(msg.fill(i));
    await waitFor(() => got.length === 13, 20_000, 'binary echoes');
    expect(got.slice(1).map((g) => [g.text, g.data.length, g.data[100]])).toEqual(
      Array.from({ length: 12 }, (_x, i) => [false, 256 * 1024, i]),
    );
    expect(a.maxUnacked).toBeLessThanOrEqual(AGENT_STREAM_WINDOW);

    ws.close(4321, 'bye');
    await waitFor(() => r.relay.localConnection('dev1')!.openStreams === 0, 5000, 'stream ended');
  });

  it("a browser gone before the device accepted its socket: the device's socket goes too", async () => {
    const { r, a } = await setup();
    const sock = connect(r.port, '127.0.0.1');
    await new Promise((res) => sock.once('connect', res));
    sock.write(
      'GET /d/dev1/ws-late HTTP/1.1\r\nHost: x\r\nx-test-user: acc1\r\nConnection: Upgrade\r\n' +
        'Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
    );
    await waitFor(() => a.streams.size === 1, 5000, 'device asked');
    sock.destroy();
    await waitFor(() => a.streams.size === 0, 5000, 'device socket dropped');
    await waitFor(() => r.relay.localConnection('dev1')!.openStreams === 0, 5000, 'stream gone');
  });

  it('a socket the device refuses is refused to the browser with its status', async () => {
    const { r } = await setup();
    const ws = new WebSocket(`${r.url.replace('http', 'ws')}/d/dev1/ws-refused`, { headers: ME });
    const status = await new Promise<number>((res) => {
      ws.on('unexpected-response', (_q, m) => res(m.statusCode ?? 0));
      ws.on('open', () => res(101));
    });
    expect(status).toBe(403);
    await waitFor(() => r.relay.localConnection('dev1')!.openStreams === 0, 5000, 'stream gone');
  });

  it("the device closing its socket closes the browser's", async () => {
    const { r, a } = await setup();
    const ws = new WebSocket(`${r.url.replace('http', 'ws')}/d/dev1/api/ws`, { headers: ME });
    await new Promise((res) => ws.on('open', res));
    const closed = new Promise<number>((res) => ws.on('close', (code) => res(code)));
    a.send({ t: 'end', sid: a.opens.at(-1)!.sid, code: 4100, reason: 'device says bye' });
    expect(await closed).toBe(4100);
  });
});

describe('rewriteHtml', () => {
  it('prefixes root-relative src/href only and adds the meta after <head>', () => {
    expect(
      rewriteHtml('<html><HEAD lang=x><img src=\'/a.png\'><a href=/b>b</a><a href="//c">', '/d/x'),
    ).toBe(
      '<html><HEAD lang=x><meta name="kvm-base" content="/d/x"><img src=\'/d/x/a.png\'><a href=/d/x/b>b</a><a href="//c">',
    );
    expect(rewriteHtml('<p>no head</p>', '/d/x')).toBe(
      '<meta name="kvm-base" content="/d/x"><p>no head</p>',
    );
  });
});

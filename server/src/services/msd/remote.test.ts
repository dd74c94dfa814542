/** write_remote against local HTTP(S) servers: the ndjson stream, its failures, cancellation. */
import { once } from 'node:events';
import { readdir, readFile, rm } from 'node:fs/promises';
import {
  createServer,
  request,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { lastWriteRemoteRecord, type MsdState, type MsdWriteRemoteRecord } from '@kvm/protocol';
import { loadOrCreateCertificate } from '../tls';
import { listen, msdTestApp, type MsdTestApp } from './test-support';

const MiB = 1024 * 1024;

let t: MsdTestApp;
let base: string;
let remote: Server | null = null;

beforeEach(async () => {
  // the remotes of these tests listen on loopback, which write_remote refuses unless listed
  t = await msdTestApp(undefined, { remote: { allowLan: false, allowHosts: ['127.0.0.1'] } });
  base = await listen(t.app);
});

afterEach(async () => {
  remote?.closeAllConnections?.();
  remote?.close();
  remote = null;
  await t.app.close();
  await rm(t.dataDir, { recursive: true, force: true });
});

const images = (): string => join(t.dataDir, 'msd', 'images');

/** Bytes that show where they sit: byte i is i % 251. */
function pattern(size: number, from = 0): Buffer {
  const b = Buffer.alloc(size);
  for (let i = 0; i < size; i++) b[i] = (from + i) % 251;
  return b;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

async function serveRemote(handler: Handler, server: Server = createServer()): Promise<string> {
  server.on('request', handler);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  remote = server;
  const https = 'setSecureContext' in server;
  return `${https ? 'https' : 'http'}://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Sends `size` pattern bytes in `chunks` pieces, `gapMs` apart. */
function slowBody(size: number, chunks: number, gapMs: number, headers = {}): Handler {
  return (_req, res) => {
    res.writeHead(200, { 'content-length': String(size), ...headers });
    let sent = 0;
    const step = Math.ceil(size / chunks);
    const next = (): void => {
      if (res.destroyed) return;
      const n = Math.min(step, size - sent);
      res.write(pattern(n, sent));
      sent += n;
      if (sent < size) setTimeout(next, gapMs);
      else res.end();
    };
    next();
  };
}

interface Streamed {
  status: number;
  contentType: string;
  body: string;
  /** The body ended without its final chunk. */
  cut: boolean;
}

/** POSTs to the device and reads the whole answer; `onData` may abort it. */
function post(url: string, onData?: (body: string, abort: () => void) => void): Promise<Streamed> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: t.headers });
    req.on('error', reject);
    req.on('response', (res) => {
      let body = '';
      let ended = false;
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
        onData?.(body, () => req.destroy());
      });
      res.on('end', () => (ended = true));
      res.on('error', () => undefined);
      res.on('close', () =>
        resolve({
          status: res.statusCode ?? 0,
          contentType: String(res.headers['content-type']),
          body,
          cut: !ended,
        }),
      );
    });
    req.end();
  });
}

function records(body: string): MsdWriteRemoteRecord[] {
  expect(body.endsWith('\r\n')).toBe(true);
  return body
    .split('\r\n')
    .slice(0, -1)
    .map((l) => JSON.parse(l) as MsdWriteRemoteRecord);
}

async function state(): Promise<MsdState> {
  return (
    (await (await fetch(`${base}/api/msd`, { headers: t.headers })).json()) as { result: MsdState }
  ).result;
}

async function settled(): Promise<MsdState> {
  for (let i = 0; i < 500; i++) {
    const s = await state();
    if (!s.busy && s.storage.downloading === null) return s;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('the download did not end');
}

const writeRemote = (query: string): string => `${base}/api/msd/write_remote?${query}`;

describe('write_remote', () => {
  it('streams progress records, then the final one; the image is complete', async () => {
    const size = 4 * MiB;
    const url = await serveRemote(slowBody(size, 16, 150));
    let sawDownloading = false;
    const res = await post(
      writeRemote(`url=${encodeURIComponent(`${url}/files/test.iso?x=1`)}&prefix=isos`),
      () => {
        if (!sawDownloading) {
          sawDownloading = true;
          void state().then((s) => {
            expect(s.storage.downloading).toMatchObject({ name: 'isos/test.iso', size });
            expect(s.busy).toBe(true);
          });
        }
      },
    );
    expect(res.status).toBe(200);
    expect(res.contentType).toBe('application/x-ndjson');
    expect(res.cut).toBe(false);
    const recs = records(res.body);
    expect(recs.length).toBeGreaterThanOrEqual(3);
    expect(recs[0]).toEqual({
      ok: true,
      result: { image: { name: 'isos/test.iso', size, written: 0 } },
    });
    expect(recs.at(-1)).toEqual({
      ok: true,
      result: { image: { name: 'isos/test.iso', size, written: size } },
    });
    const written = recs.map((r) => (r.ok ? r.result.image.written : -1));
    expect([...written].sort((a, b) => a - b)).toEqual(written);
    expect(written.some((w) => w > 0 && w < size)).toBe(true);
    expect(lastWriteRemoteRecord(res.body)).toEqual(recs.at(-1));
    expect((await readFile(join(images(), 'isos', 'test.iso'))).equals(pattern(size))).toBe(true);
    const s = await settled();
    expect(s.storage.images['isos/test.iso']).toMatchObject({ complete: true, size });
  });

  it('names the image from image=, else Content-Disposition, else the URL', async () => {
    const url = await serveRemote((req, res) => {
      const disposition = req.url?.includes('cd')
        ? { 'content-disposition': `attachment; filename*=UTF-8''%D0%B4%D0%B8%D1%81%D0%BA.iso` }
        : {};
      res.writeHead(200, { 'content-length': '3', ...disposition });
      res.end('abc');
    });
    await post(writeRemote(`url=${url}/cd/ignored.bin`));
    await post(writeRemote(`url=${url}/plain/name%20one.img`));
    await post(writeRemote(`url=${url}/cd/x&image=chosen.bin`));
    expect((await readdir(images())).sort()).toEqual(['chosen.bin', 'name one.img', 'диск.iso']);
  });

  it('answers pre-stream failures as plain JSON errors', async () => {
    const bad = await fetch(writeRemote('url=ftp://example.com/x.iso'), {
      method: 'POST',
      headers: t.headers,
    });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({
      ok: false,
      result: {
        error: 'ValidatorError',
        error_msg: "The argument 'ftp://example.com/x.iso' is not a valid HTTP|HTTPS URL",
      },
    });
    const url = await serveRemote((req, res) => {
      if (req.url === '/missing.iso') {
        res.writeHead(404).end('no');
      } else if (req.url === '/chunked.iso') {
        res.writeHead(200);
        res.write('abc');
        res.end();
      } else if (req.url === '/huge.iso') {
        res.writeHead(200, { 'content-length': String(2 ** 52) });
        res.end();
      } else if (req.url === '/moved.iso') {
        res.writeHead(302, { location: '/final.iso' }).end();
      } else if (req.url === '/traversal') {
        res.writeHead(200, {
          'content-length': '1',
          'content-disposition': 'attachment; filename=".."',
        });
        res.end('x');
      } else {
        res.writeHead(200, { 'content-length': '2' });
        res.end('ok');
      }
    });
    const err = async (query: string) => {
      const res = await fetch(writeRemote(query), { method: 'POST', headers: t.headers });
      return {
        status: res.status,
        ...((await res.json()) as { result: Record<string, string> }).result,
      };
    };
    expect(await err(`url=${url}/missing.iso`)).toMatchObject({
      status: 400,
      error: 'ClientResponseError',
      error_msg: `404, message='Not Found', url='${url}/missing.iso'`,
    });
    expect(await err(`url=${url}/chunked.iso`)).toMatchObject({
      status: 400,
      error: 'ClientError',
      error_msg: 'No Content-Length found',
    });
    expect(await err(`url=${url}/huge.iso`)).toMatchObject({
      status: 507,
      error: 'MsdNoSpaceError',
    });
    expect(await err(`url=${url}/traversal`)).toMatchObject({
      status: 400,
      error: 'ValidatorError',
    });
    expect(await err(`url=${url}/x.iso&prefix=..`)).toMatchObject({
      status: 400,
      error: 'ValidatorError',
    });
    expect(await err('url=http://127.0.0.1:1/x.iso')).toMatchObject({
      status: 400,
      error: 'ClientConnectorError',
    });
    // redirects are followed; the name comes from where they led
    expect((await post(writeRemote(`url=${url}/moved.iso`))).status).toBe(200);
    expect(await err(`url=${url}/final.iso`)).toMatchObject({
      status: 400,
      error: 'MsdImageExistsError',
    });
    await settled();
    expect(await readdir(images())).toEqual(['final.iso']);
  });

  it('gives up on a silent server after `timeout` seconds', async () => {
    const url = await serveRemote(() => undefined);
    const started = performance.now();
    const res = await fetch(writeRemote(`url=${url}/x.iso&timeout=0.3`), {
      method: 'POST',
      headers: t.headers,
    });
    expect(performance.now() - started).toBeLessThan(3000);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { result: { error: string } }).result.error).toBe(
      'ServerTimeoutError',
    );
    expect((await settled()).busy).toBe(false);
  });

  it.each([
    ['1', true],
    ['0', false],
  ])(
    'ends with a progress record, an error record and a cut body when the remote fails (remove_incomplete=%s)',
    async (flag, removed) => {
      const size = 8 * MiB;
      const url = await serveRemote((_req, res) => {
        res.writeHead(200, { 'content-length': String(size) });
        res.write(pattern(2 * MiB));
        setTimeout(() => res.socket?.destroy(), 300);
      });
      const res = await post(writeRemote(`url=${url}/x.iso&remove_incomplete=${flag}`));
      expect(res.status).toBe(200);
      expect(res.cut).toBe(true);
      const recs = records(res.body);
      const last = recs.at(-1)!;
      const beforeLast = recs.at(-2)!;
      expect(beforeLast.ok).toBe(true);
      expect(last).toMatchObject({ ok: false, result: { error: 'ClientPayloadError' } });
      expect(lastWriteRemoteRecord(res.body)).toEqual(last);
      const s = await settled();
      if (removed) {
        expect(await readdir(images())).toEqual([]);
        expect(s.storage.images).toEqual({});
      } else {
        expect((await readdir(images())).sort()).toEqual(['.__x.iso.incomplete', 'x.iso']);
        expect(s.storage.images['x.iso']).toMatchObject({ complete: false, size: 2 * MiB });
      }
    },
  );

  it('stops the download when the client hangs up', async () => {
    let remoteClosed = false;
    const url = await serveRemote((_req, res) => {
      res.on('close', () => (remoteClosed = true));
      slowBody(16 * MiB, 64, 100)(_req, res);
    });
    const res = await post(writeRemote(`url=${url}/x.iso&remove_incomplete=1`), (body, abort) => {
      if (body.includes('\r\n')) abort();
    });
    expect(res.cut).toBe(true);
    const s = await settled();
    expect(s.storage.images).toEqual({});
    expect(await readdir(images())).toEqual([]);
    for (let i = 0; i < 100 && !remoteClosed; i++) await new Promise((r) => setTimeout(r, 10));
    expect(remoteClosed).toBe(true);
    // the region is free again
    const again = await serveRemote((_req, r) =>
      r.writeHead(200, { 'content-length': '1' }).end('x'),
    );
    expect((await post(writeRemote(`url=${again}/y.iso`))).status).toBe(200);
  });

  it('checks TLS certificates unless insecure=1', async () => {
    const dir = join(t.dataDir, 'tls');
    const { key, cert } = await loadOrCreateCertificate(dir);
    const url = await serveRemote(
      (_req, res) => res.writeHead(200, { 'content-length': '2' }).end('ok'),
      createHttpsServer({ key, cert }) as unknown as Server,
    );
    const refused = await fetch(writeRemote(`url=${url}/x.iso`), {
      method: 'POST',
      headers: t.headers,
    });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { result: { error: string } }).result.error).toBe(
      'ClientConnectorCertificateError',
    );
    const res = await post(writeRemote(`url=${url}/x.iso&insecure=1`));
    expect(res.status).toBe(200);
    expect(lastWriteRemoteRecord(res.body)).toMatchObject({ ok: true });
  });
});

import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { newApp } from '../test-helpers';
import { testTempDir } from '../test-temp';

let app: FastifyInstance;
afterEach(async () => {
  await app?.close();
});

async function webDir(): Promise<string> {
  const dir = await testTempDir('web');
  await mkdir(join(dir, 'assets'));
  await writeFile(join(dir, 'index.html'), '<!doctype html><div id="root"></div>');
  const js = `console.log(${JSON.stringify('x'.repeat(4000))});`;
  await writeFile(join(dir, 'assets', 'app-abc123.js'), js);
  await writeFile(join(dir, 'assets', 'app-abc123.js.gz'), gzipSync(js));
  await writeFile(join(dir, 'favicon.svg'), '<svg/>');
  return dir;
}

describe('console files', () => {
  it('serves index.html for app routes without a session (SPA fallback)', async () => {
    app = await newApp(undefined, { server: { web_dir: await webDir() } });
    for (const path of ['/', '/kvm', '/login', '/init', '/twofactor', '/kvm/?id=1', '/webterm']) {
      const res = await app.inject(path);
      expect(res.statusCode, path).toBe(200);
      expect(res.headers['content-type']).toContain('text/html');
      expect(res.headers['cache-control']).toBe('no-cache');
      expect(res.body).toContain('id="root"');
    }
  });

  it('answers 404 in the envelope, not the console, for a path the console has no page for', async () => {
    app = await newApp(undefined, { server: { web_dir: await webDir() } });
    const page = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' };
    for (const path of ['/streamer/nothing', '/foo/bar.cgi', '/some/deep/link?id=1']) {
      const res = await app.inject(path);
      expect(res.statusCode, path).toBe(404);
      expect(res.headers['content-type'], path).toContain('application/json');
      expect(res.json()).toMatchObject({ ok: false, result: { error: 'NotFoundError' } });
    }
    // ustreamer's names and files stay JSON for a browser too
    for (const path of ['/streamer/nothing', '/foo/bar.cgi', '/extras/x']) {
      const res = await app.inject({ url: path, headers: page });
      expect(res.statusCode, path).toBe(404);
      expect(res.headers['content-type'], path).toContain('application/json');
    }
    // SPEC 2: a browser's navigation elsewhere shows the no-permission page, with the 404
    const res = await app.inject({ url: '/some/deep/link?id=1', headers: page });
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toContain('text/html');
    expect(res.body).toContain('id="root"');
  });

  it('sends hashed assets with a long cache and the pre-compressed variant when accepted', async () => {
    app = await newApp(undefined, { server: { web_dir: await webDir() } });
    const plain = await app.inject('/assets/app-abc123.js');
    expect(plain.statusCode).toBe(200);
    expect(plain.headers['content-type']).toContain('text/javascript');
    expect(plain.headers['cache-control']).toContain('immutable');
    expect(plain.headers['content-encoding']).toBeUndefined();
    const gz = await app.inject({
      url: '/assets/app-abc123.js',
      headers: { 'accept-encoding': 'gzip, deflate' },
    });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gz.headers['vary']).toBe('accept-encoding');
    expect(Number(gz.headers['content-length'])).toBeLessThan(
      Number(plain.headers['content-length']),
    );
  });

  it('answers 404 for a missing file and never serves outside the folder', async () => {
    app = await newApp(undefined, { server: { web_dir: await webDir() } });
    expect((await app.inject('/assets/gone-123.js')).statusCode).toBe(404);
    for (const path of [
      '/../package.json',
      '/assets/../../etc/passwd',
      '/%2e%2e/%2e%2e/etc/passwd',
    ]) {
      const res = await app.inject(path);
      expect(res.body, path).not.toContain('root:x:0');
      expect(res.body, path).not.toContain('"name"');
    }
  });

  it('answers 304 to a matching If-None-Match, with one ETag per encoding', async () => {
    app = await newApp(undefined, { server: { web_dir: await webDir() } });
    const plain = await app.inject('/assets/app-abc123.js');
    const gz = await app.inject({
      url: '/assets/app-abc123.js',
      headers: { 'accept-encoding': 'gzip' },
    });
    const tag = String(plain.headers['etag']);
    expect(tag).toMatch(/^"[^"]+"$/);
    expect(gz.headers['etag']).not.toBe(tag);
    expect(plain.headers['last-modified']).toBeDefined();

    const again = await app.inject({
      url: '/assets/app-abc123.js',
      headers: { 'if-none-match': `"other", W/${tag}` },
    });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');
    expect(again.headers['etag']).toBe(tag);
    expect(again.headers['cache-control']).toContain('immutable');
    // the plain tag does not validate the gzip bytes
    const gzAgain = await app.inject({
      url: '/assets/app-abc123.js',
      headers: { 'accept-encoding': 'gzip', 'if-none-match': tag },
    });
    expect(gzAgain.statusCode).toBe(200);

    // index.html (no-cache) revalidates on every load: the SPA fallback too
    const index = await app.inject('/kvm');
    const reload = await app.inject({
      url: '/login',
      headers: { 'if-none-match': String(index.headers['etag']) },
    });
    expect(reload.statusCode).toBe(304);
    expect(reload.headers['cache-control']).toBe('no-cache');
    const since = await app.inject({
      url: '/',
      headers: { 'if-modified-since': String(index.headers['last-modified']) },
    });
    expect(since.statusCode).toBe(304);
    const older = await app.inject({
      url: '/',
      headers: { 'if-modified-since': new Date(0).toUTCString() },
    });
    expect(older.statusCode).toBe(200);
  });

  it('answers one byte range with 206, past the end with 416, and ignores what it cannot serve', async () => {
    app = await newApp(undefined, { server: { web_dir: await webDir() } });
    const whole = await app.inject('/assets/app-abc123.js');
    const size = Number(whole.headers['content-length']);
    expect(whole.headers['accept-ranges']).toBe('bytes');
    const get = (headers: Record<string, string>) =>
      app.inject({ url: '/assets/app-abc123.js', headers });

    const first = await get({ range: 'bytes=0-9' });
    expect(first.statusCode).toBe(206);
    expect(first.headers['content-range']).toBe(`bytes 0-9/${size}`);
    expect(first.headers['content-length']).toBe('10');
    expect(first.body).toBe(whole.body.slice(0, 10));
    expect(first.headers['cache-control']).toContain('immutable');

    const tail = await get({ range: 'bytes=-5' });
    expect(tail.statusCode).toBe(206);
    expect(tail.body).toBe(whole.body.slice(-5));
    const open = await get({ range: `bytes=${size - 3}-` });
    expect(open.headers['content-range']).toBe(`bytes ${size - 3}-${size - 1}/${size}`);
    const clipped = await get({ range: `bytes=${size - 2}-${size + 100}` });
    expect(clipped.body).toBe(whole.body.slice(-2));

    const past = await get({ range: `bytes=${size}-` });
    expect(past.statusCode).toBe(416);
    expect(past.headers['content-range']).toBe(`bytes */${size}`);
    expect(past.json()).toMatchObject({ ok: false, result: { error: 'RangeNotSatisfiableError' } });
    expect(past.headers['content-encoding']).toBeUndefined();

    // several ranges, another unit, garbage, a stale If-Range: the whole file
    const ignored: Array<Record<string, string>> = [
      { range: 'bytes=0-1,5-6' },
      { range: 'items=0-1' },
      { range: 'bytes=9-2' },
      { range: 'bytes=0-1', 'if-range': '"stale"' },
    ];
    for (const headers of ignored) {
      const res = await get(headers);
      expect(res.statusCode, JSON.stringify(headers)).toBe(200);
      expect(res.body.length).toBe(size);
    }
    const current = await get({ range: 'bytes=0-1', 'if-range': String(whole.headers['etag']) });
    expect(current.statusCode).toBe(206);

    // a range of the compressed bytes when those are sent
    const gz = await get({ 'accept-encoding': 'gzip', range: 'bytes=0-1' });
    expect(gz.statusCode).toBe(206);
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gz.rawPayload).toEqual(Buffer.from([0x1f, 0x8b]));
  });

  it('says the console is not built when web/dist is missing', async () => {
    app = await newApp(undefined, { server: { web_dir: '/nonexistent/web/dist' } });
    const res = await app.inject('/login');
    expect(res.statusCode).toBe(503);
    expect(res.body).toContain('npm run build');
  });
});

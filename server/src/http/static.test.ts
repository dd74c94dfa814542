import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { newApp } from '../test-helpers';

let app: FastifyInstance;
afterEach(async () => {
  await app?.close();
});

async function webDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'kvm-web-'));
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
    for (const path of ['/', '/kvm', '/login', '/init', '/twofactor', '/some/deep/link?id=1']) {
      const res = await app.inject(path);
      expect(res.statusCode, path).toBe(200);
      expect(res.headers['content-type']).toContain('text/html');
      expect(res.headers['cache-control']).toBe('no-cache');
      expect(res.body).toContain('id="root"');
    }
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

  it('says the console is not built when web/dist is missing', async () => {
    app = await newApp(undefined, { server: { web_dir: '/nonexistent/web/dist' } });
    const res = await app.inject('/login');
    expect(res.statusCode).toBe(503);
    expect(res.body).toContain('npm run build');
  });
});

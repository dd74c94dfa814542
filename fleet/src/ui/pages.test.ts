/**
 * The fleet console's static serving (ui/routes.ts): the built app at `/` and every client-side
 * route, hashed assets immutable and pre-compressed, the security headers on everything, and
 * never the page for the API, the tunnel or a missing file.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliCompressSync } from 'node:zlib';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toHttp } from '../errors';
import { FLEET_CSP, registerPages } from './routes';

const INDEX =
  '<!doctype html><html><head><script type="module" src="/assets/app-abc123.js"></script></head><body><div id="root"></div></body></html>';
const SCRIPT = `console.log(${JSON.stringify('x'.repeat(4000))});`;

let dir: string;
let app: FastifyInstance;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'fleet-www-'));
  mkdirSync(join(dir, 'assets'));
  writeFileSync(join(dir, 'index.html'), INDEX);
  writeFileSync(join(dir, 'assets/app-abc123.js'), SCRIPT);
  writeFileSync(join(dir, 'assets/app-abc123.js.br'), brotliCompressSync(SCRIPT));
  app = Fastify();
  app.setErrorHandler((err, _req, reply) => {
    const a = toHttp(err);
    void reply.code(a.status).send(a.body);
  });
  registerPages(app, dir);
  await app.ready();
});

afterAll(async () => {
  await app.close();
  rmSync(dir, { recursive: true, force: true });
});

function expectSecure(headers: Record<string, unknown>): void {
  expect(headers['content-security-policy']).toBe(FLEET_CSP);
  expect(headers['x-frame-options']).toBe('DENY');
  expect(headers['x-content-type-options']).toBe('nosniff');
  expect(headers['referrer-policy']).toBe('same-origin');
}

describe('fleet console serving', () => {
  it('answers the app for / and every client-side route, revalidated each load', async () => {
    for (const url of [
      '/',
      '/devices',
      '/wall',
      '/jobs/abc',
      '/admin/users',
      '/signin?next=%2Fd%2Fx%2F',
    ]) {
      const r = await app.inject({ method: 'GET', url, headers: { accept: 'text/html' } });
      expect(r.statusCode, url).toBe(200);
      expect(r.headers['content-type'], url).toMatch(/^text\/html/);
      expect(r.headers['cache-control'], url).toBe('no-cache');
      expect(r.body, url).toBe(INDEX);
      expectSecure(r.headers);
    }
  });

  it('allows scripts only from this origin, no framing', () => {
    expect(FLEET_CSP).toContain("script-src 'self'");
    expect(FLEET_CSP).not.toMatch(/script-src[^;]*unsafe-inline/);
    expect(FLEET_CSP).toContain("frame-ancestors 'none'");
    expect(FLEET_CSP).toContain("img-src 'self' data: blob:");
  });

  it('serves hashed assets immutable, brotli when accepted', async () => {
    const plain = await app.inject({ method: 'GET', url: '/assets/app-abc123.js' });
    expect(plain.statusCode).toBe(200);
    expect(plain.headers['content-type']).toMatch(/^text\/javascript/);
    expect(plain.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(plain.body).toBe(SCRIPT);
    expectSecure(plain.headers);
    const br = await app.inject({
      method: 'GET',
      url: '/assets/app-abc123.js',
      headers: { 'accept-encoding': 'gzip, br' },
    });
    expect(br.headers['content-encoding']).toBe('br');
    expect(br.rawPayload.length).toBeLessThan(SCRIPT.length / 10);
  });

  it('is never the page for a missing file, the API or the tunnel', async () => {
    for (const url of [
      '/assets/gone-123.js',
      '/favicon.ico',
      '/cloud-basic/v1/nothing',
      '/d/abc/x',
    ]) {
      const r = await app.inject({ method: 'GET', url, headers: { accept: 'text/html' } });
      expect(r.statusCode, url).toBe(404);
      expect(r.json(), url).toMatchObject({ ok: false, result: { error: 'NotFoundError' } });
    }
  });

  it('answers 503 when the console is not built', async () => {
    const empty = Fastify();
    empty.setErrorHandler((err, _req, reply) => {
      const a = toHttp(err);
      void reply.code(a.status).send(a.body);
    });
    registerPages(empty, join(dir, 'nothing-here'));
    const r = await empty.inject({ method: 'GET', url: '/devices' });
    expect(r.statusCode).toBe(503);
    await empty.close();
  });
});

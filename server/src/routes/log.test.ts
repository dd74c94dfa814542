import { appendFile, mkdir, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { initAndLogin, newApp, tempDataDir } from '../test-helpers';
import { formatRecord, LOG_STREAMS_MAX, logTime } from './log';

let app: FastifyInstance | undefined;
let dir: string | undefined;
const open: IncomingMessage[] = [];
afterEach(async () => {
  open.splice(0).forEach((r) => r.destroy());
  await app?.close();
  app = undefined;
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

const rec = (time: number, msg: string, extra: Record<string, unknown> = {}): string =>
  `${JSON.stringify({ level: 30, time, pid: 1, msg, ...extra })}\n`;

async function setup(): Promise<{ token: string; logs: string }> {
  dir = await tempDataDir();
  const logs = join(dir, 'logs');
  await mkdir(logs, { recursive: true });
  const now = Date.now();
  await writeFile(join(logs, 'server.log.1'), rec(now - 3_600_000, 'an hour ago'));
  await writeFile(
    join(logs, 'server.log'),
    rec(now - 120_000, 'two minutes ago') +
      'not json at all\n' +
      rec(now - 1000, 'just now', { port: 80 }),
  );
  app = await newApp(dir);
  return { token: await initAndLogin(app), logs };
}

/** A real HTTP GET whose body is collected as it arrives. */
async function follow(url: string, token: string) {
  const port = (app!.server.address() as { port: number }).port;
  const res = await new Promise<IncomingMessage>((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: url, headers: { token } }, resolve);
    req.on('error', reject);
    req.end();
  });
  open.push(res);
  const chunks: string[] = [];
  let ended = false;
  res.setEncoding('utf8');
  res.on('data', (c: string) => chunks.push(c));
  res.on('end', () => (ended = true));
  res.on('error', () => (ended = true));
  return { res, text: () => chunks.join(''), ended: () => ended };
}

describe('log lines', () => {
  it('formats pino records as kvmd journal lines', () => {
    const t = Date.UTC(2026, 0, 2, 3, 4, 5);
    expect(formatRecord(JSON.stringify({ level: 50, time: t, msg: 'bad', err: { a: 1 } }), 0)).toBe(
      `[${logTime(t)} kvm-console.service] --- ERROR --- bad err={"a":1}\r\n`,
    );
    expect(formatRecord(JSON.stringify({ level: 30, time: t, msg: 'x' }), t + 1)).toBeNull();
    // secrets are masked as in the log export
    const token = 'ab'.repeat(32);
    const masked = formatRecord(
      JSON.stringify({ level: 30, time: t, msg: 'refused', url: `/api/x?auth_token=${token}` }),
      0,
    )!;
    expect(masked).toContain('auth_token=xxxx');
    expect(masked).not.toContain(token);
    expect(formatRecord(`crash with password=hunter22 in it`, 0)).toBe(
      'crash with password=xxxx in it\r\n',
    );
    expect(formatRecord('plain', t)).toBe('plain\r\n');
    expect(logTime(t)).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
  });
});

describe('GET /api/log', () => {
  it('sends the kept log, oldest first, and only the last seek seconds', async () => {
    const { token } = await setup();
    const all = await app!.inject({ url: '/api/log', headers: { token } });
    expect(all.statusCode).toBe(200);
    expect(all.headers['content-type']).toBe('text/plain; charset=utf-8');
    const lines = all.body.split('\r\n').filter(Boolean);
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(
      /^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d kvm-console\.service\] --- INFO --- an hour ago$/,
    );
    expect(lines[1]).toContain('two minutes ago');
    expect(lines[2]).toBe('not json at all');
    expect(lines[3]).toMatch(/--- INFO --- just now port=80$/);
    const recent = await app!.inject({ url: '/api/log?seek=60', headers: { token } });
    expect(recent.body.split('\r\n').filter(Boolean)).toEqual([lines[2], lines[3]]);
    const bad = await app!.inject({ url: '/api/log?seek=-1', headers: { token } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().result.error).toBe('ValidatorError');
    expect(
      (await app!.inject({ url: '/api/log?follow=perhaps', headers: { token } })).statusCode,
    ).toBe(400);
    expect((await app!.inject({ url: '/api/log' })).statusCode).toBe(401);
  });

  it('follows new lines until the session ends; at most LOG_STREAMS_MAX at once', async () => {
    const { token, logs } = await setup();
    await app!.listen({ host: '127.0.0.1', port: 0 });
    const f = await follow('/api/log?seek=5&follow=1', token);
    expect(f.res.statusCode).toBe(200);
    await expect.poll(() => f.text(), { timeout: 5000 }).toContain('just now');
    await appendFile(join(logs, 'server.log'), rec(Date.now(), 'a new line'));
    await expect.poll(() => f.text(), { timeout: 5000 }).toContain('a new line');

    const more = [];
    for (let i = 1; i < LOG_STREAMS_MAX; i++) more.push(await follow('/api/log?follow=1', token));
    const refused = await app!.inject({ url: '/api/log', headers: { token } });
    expect(refused.statusCode).toBe(429);
    expect(refused.json().result.error).toBe('LogStreamsLimitError');
    // A follower that leaves frees its place.
    more[0]!.res.destroy();
    await expect
      .poll(
        async () => (await app!.inject({ url: '/api/log?seek=1', headers: { token } })).statusCode,
      )
      .toBe(200);

    await app!.inject({ method: 'POST', url: '/api/auth/logout', headers: { token } });
    await expect.poll(() => f.ended(), { timeout: 5000 }).toBe(true);
  });

  it('ends a follower when the server stops', async () => {
    const { token } = await setup();
    await app!.listen({ host: '127.0.0.1', port: 0 });
    const f = await follow('/api/log?follow=1', token);
    await expect.poll(() => f.text(), { timeout: 5000 }).toContain('just now');
    const started = Date.now();
    await app!.close();
    app = undefined;
    expect(Date.now() - started).toBeLessThan(5000);
    await expect.poll(() => f.ended(), { timeout: 5000 }).toBe(true);
  });
});

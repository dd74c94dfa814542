import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { buildApp, createContext } from '../app';
import { buildConfig } from '../config';
import { loadConfigDefaults } from '../paths';
import { initAndLogin, newApp, tempDataDir } from '../test-helpers';
import { ANON_LOG_BURST } from './log-budget';

let app: FastifyInstance;
afterEach(async () => {
  await app?.close();
});

const part = (name: string, value: string, extra = ''): string =>
  `--abc\r\ncontent-disposition: form-data; name="${name}"${extra}\r\n\r\n${value}\r\n`;

const MALFORMED: Array<[string, string, string]> = [
  [
    'a boundary the body does not use',
    'multipart/form-data; boundary=abc',
    `--zzz\r\n\r\nx\r\n--zzz--\r\n`,
  ],
  ['no boundary at all', 'multipart/form-data', 'user=admin'],
  ['a boundary over 256 bytes', `multipart/form-data; boundary=${'b'.repeat(300)}`, 'x'],
  [
    'a truncated body',
    'multipart/form-data; boundary=abc',
    `${part('user', 'admin')}--abc\r\ncontent-dis`,
  ],
  [
    'a file part',
    'multipart/form-data; boundary=abc',
    `${part('user', 'admin', '; filename="a.txt"')}--abc--\r\n`,
  ],
  [
    'too many parts',
    'multipart/form-data; boundary=abc',
    `${Array.from({ length: 40 }, (_, i) => part(`f${i}`, 'v')).join('')}--abc--\r\n`,
  ],
  [
    'an oversize field',
    'multipart/form-data; boundary=abc',
    `${part('user', 'a'.repeat(70_000))}--abc--\r\n`,
  ],
  ['a broken % escape', 'application/x-www-form-urlencoded', 'user=%E0%A4%A&passwd=x'],
  ['a lone %', 'application/x-www-form-urlencoded', 'user=admin&passwd=%'],
  ['an escape that is not UTF-8', 'application/x-www-form-urlencoded', 'user=%FF%FE&passwd=x'],
  ['invalid JSON', 'application/json', '{"user":'],
];

describe('malformed bodies', () => {
  it.each(MALFORMED)(
    '%s is a 400 ValidatorError on the public login route',
    async (_name, type, payload) => {
      app = await newApp();
      const res = await app.inject({
        method: 'POST',
        url: '/api/auth/login',
        headers: { 'content-type': type },
        payload,
      });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ ok: false, result: { error: 'ValidatorError' } });
    },
  );

  it('still reads a well-formed multipart login form', async () => {
    app = await newApp();
    await initAndLogin(app);
    const res = await app.inject({
      method: 'POST',
      url: '/api/auth/login',
      headers: { 'content-type': 'multipart/form-data; boundary=abc' },
      payload: `${part('user', 'admin')}${part('passwd', 'correct horse')}--abc--\r\n`,
    });
    expect(res.statusCode).toBe(200);
  });
});

describe('malformed multipart on a file upload route', () => {
  it('is a 400 there too, not a 500', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    for (const [type, payload] of [
      [
        'multipart/form-data; boundary=abc',
        '--abc\r\ncontent-disposition: form-data; name="file"; filename="f.zip"\r\n\r\nPK',
      ],
      ['multipart/form-data; boundary=abc', '--zzz--\r\n'],
    ] as const) {
      const res = await app.inject({
        method: 'POST',
        url: '/api/fingerbot/upload',
        headers: { token, 'content-type': type },
        payload,
      });
      expect(res.statusCode, payload).toBe(400);
      expect(res.json()).toMatchObject({ ok: false, result: { error: 'ValidatorError' } });
    }
  });
});

describe('error log of anonymous requests', () => {
  it('writes failures of requests without a session only within the budget', async () => {
    const lines: Array<{ msg: string; suppressed?: number }> = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line));
        done();
      },
    });
    const config = buildConfig(
      { data_dir: await tempDataDir(), target: 'testbed', webrtc: { stun_url: null } },
      loadConfigDefaults(),
    );
    const logger = pino({ level: 'info' }, sink);
    app = await buildApp(await createContext(config, '0.0.0-test', logger), { logger });
    app.get('/api/test/boom', { config: { public: true } }, async () => {
      throw new Error('boom');
    });
    app.get('/api/test/boom-private', async () => {
      throw new Error('boom');
    });
    const token = await initAndLogin(app);
    for (let i = 0; i < 100; i += 1) {
      const res = await app.inject({ url: '/api/test/boom' });
      expect(res.statusCode).toBe(500);
      expect(res.json()).toMatchObject({ ok: false, result: { error: 'InternalError' } });
    }
    const anonymous = lines.filter((l) => l.msg === 'request failed').length;
    expect(anonymous).toBeGreaterThan(0);
    // the bucket refills at 30 a minute: a slow machine adds a few, never dozens
    expect(anonymous).toBeLessThan(ANON_LOG_BURST + 10);
    for (let i = 0; i < 30; i += 1) {
      await app.inject({ url: '/api/test/boom-private', headers: { token } });
    }
    expect(lines.filter((l) => l.msg === 'request failed').length).toBe(anonymous + 30);
  });
});

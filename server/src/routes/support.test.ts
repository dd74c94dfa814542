import { createServer, type Server } from 'node:http';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp, createContext } from '../app';
import { buildConfig } from '../config';
import { loadConfigDefaults } from '../paths';
import { readZip } from '../storage/zip';
import { SUPPORT_BUNDLES_KEPT } from '../services/support/support-service';

let app: FastifyInstance | null = null;
let dir = '';
let sink: Server | null = null;
afterEach(async () => {
  await app?.close();
  app = null;
  await new Promise((r) => (sink ? sink.close(r) : r(undefined)));
  sink = null;
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = '';
});

async function start(extra: Record<string, unknown> = {}) {
  dir = await mkdtemp(join(tmpdir(), 'kvm-support-'));
  const config = buildConfig(
    { data_dir: dir, target: 'testbed', webrtc: { stun_url: null }, ...extra },
    loadConfigDefaults(),
  );
  const ctx = await createContext(config, '0.0.0-test');
  app = await buildApp(ctx);
  const token = await ctx.auth.sessions.create('admin', 3_600_000);
  return { ctx, app, token };
}

const PNG = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  Buffer.alloc(64, 1),
]);
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(64, 2)]);

function multipart(
  fields: Record<string, string>,
  files: Array<{ field: string; filename: string; data: Buffer }>,
) {
  const boundary = '----kvmtest' + Math.random().toString(16).slice(2);
  const chunks: Buffer[] = [];
  for (const [k, v] of Object.entries(fields))
    chunks.push(
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`),
    );
  for (const f of files) {
    chunks.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${f.field}"; filename="${f.filename}"\r\n` +
          'Content-Type: application/octet-stream\r\n\r\n',
      ),
      f.data,
      Buffer.from('\r\n'),
    );
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return {
    payload: Buffer.concat(chunks),
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
  };
}

describe('GET/POST /api/upgrade/log', () => {
  it('exports a masked zip of logs, versions, config, state and network', async () => {
    const { ctx, app, token } = await start();
    const hash = 'ab'.repeat(32);
    await mkdir(join(dir, 'logs'), { recursive: true });
    await writeFile(
      join(dir, 'logs', 'server.log'),
      `{"msg":"login","password":"hunter2"} GET /api?auth_token=tok123 from 8.8.4.4 ` +
        `session ${hash} lan 192.168.1.5 v6 2001:db8:1:2::7\n`,
    );
    const posted = await app.inject({
      method: 'POST',
      url: '/api/upgrade/log',
      headers: { token, 'content-type': 'text/plain' },
      payload: 'console: passwd=letmein\n',
    });
    expect(posted.statusCode).toBe(200);
    expect(posted.json()).toEqual({ ok: true, result: { size: 24 } });

    const t0 = performance.now();
    const res = await app.inject({ method: 'GET', url: '/api/upgrade/log', headers: { token } });
    const ms = performance.now() - t0;
    console.log(`log_export_ms=${ms.toFixed(1)} bytes=${res.rawPayload.length}`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/zip');
    expect(res.headers['content-disposition']).toMatch(
      /^attachment; filename=system_logs_\d{8}_\d{6}\.zip$/,
    );
    const files = readZip(res.rawPayload);
    expect([...files.keys()].sort()).toEqual(
      [
        'config.json',
        'hostname.json',
        'logs/frontend.log',
        'logs/server.log',
        'network.json',
        'state.json',
        'system.json',
        'versions.json',
      ].sort(),
    );
    const all = [...files.values()].map((b) => b.toString()).join('\n');
    for (const secret of ['hunter2', 'tok123', 'letmein', hash, '8.8.4.4', '2001:db8:1:2::7'])
      expect(all).not.toContain(secret);
    const log = files.get('logs/server.log')!.toString();
    expect(log).toContain('8.8.4.x');
    expect(log).toContain('192.168.1.5');
    expect(files.get('logs/frontend.log')!.toString()).toBe('console: passwd=xxxx\n');
    expect(JSON.parse(files.get('versions.json')!.toString())).toMatchObject({
      firmware: '0.0.0-test',
      target: 'testbed',
    });
    expect(JSON.parse(files.get('config.json')!.toString())).toMatchObject({ target: 'testbed' });
    // the session itself is not in the bundle
    const session = ctx.auth.session(token);
    expect(session).not.toBeNull();
    expect(all).not.toContain(token);
  });

  it('requires a session, bounds the posted log', async () => {
    const { app, token } = await start();
    expect((await app.inject({ method: 'GET', url: '/api/upgrade/log' })).statusCode).toBe(401);
    expect(
      (await app.inject({ method: 'POST', url: '/api/upgrade/log', payload: 'x' })).statusCode,
    ).toBe(401);
    const big = await app.inject({
      method: 'POST',
      url: '/api/upgrade/log',
      headers: { token, 'content-type': 'text/plain' },
      payload: 'x'.repeat(1024 * 1024 + 1),
    });
    expect(big.statusCode).toBe(413);
  });

  it('runs one export at a time per session', async () => {
    const { app, token } = await start();
    const answers = await Promise.all(
      [1, 2, 3].map(() =>
        app.inject({ method: 'GET', url: '/api/upgrade/log', headers: { token } }),
      ),
    );
    const codes = answers.map((a) => a.statusCode);
    expect(codes).toContain(200);
    for (const a of answers.filter((x) => x.statusCode !== 200)) {
      expect(a.statusCode).toBe(429);
      expect(a.json().result.error).toBe('LogExportBusyError');
    }
  });
});

/** POSTs a multipart form to /api/support/submit with the session token. */
function submit(
  app: FastifyInstance,
  token: string,
  form: { headers: Record<string, string>; payload: Buffer },
) {
  return app.inject({
    method: 'POST',
    url: '/api/support/submit',
    headers: { token, ...form.headers },
    payload: form.payload,
  });
}

describe('/api/support', () => {
  it('saves a bundle when no support URL is configured; lists and downloads it', async () => {
    const { app, token } = await start();
    const form = multipart({ message: 'The video is black', contact: 'me@example.com' }, [
      { field: 'image1', filename: 'a.png', data: PNG },
      { field: 'image2', filename: 'b.JPG', data: JPEG },
    ]);
    const res = await submit(app, token, form);
    expect(res.statusCode).toBe(200);
    const result = res.json().result;
    expect(result.delivered).toBe('saved');
    const list = await app.inject({
      method: 'GET',
      url: '/api/support/bundles',
      headers: { token },
    });
    expect(list.json().result.bundles).toEqual([{ name: result.bundle, size: expect.any(Number) }]);
    const got = await app.inject({
      method: 'GET',
      url: `/api/support/bundles/${result.bundle}`,
      headers: { token },
    });
    expect(got.statusCode).toBe(200);
    const files = readZip(got.rawPayload);
    expect(files.get('message.txt')!.toString()).toBe('The video is black\n');
    expect(files.get('contact.txt')!.toString()).toBe('me@example.com\n');
    expect(files.get('images/image1_a.png')!.equals(PNG)).toBe(true);
    expect([...files.keys()].some((k) => /^system_logs_\d{8}_\d{6}\.zip$/.test(k))).toBe(true);
    const missing = await app.inject({
      method: 'GET',
      url: '/api/support/bundles/support_20000101_000000.zip',
      headers: { token },
    });
    expect(missing.statusCode).toBe(404);
    const bad = await app.inject({
      method: 'GET',
      url: '/api/support/bundles/..%2Fauth.json',
      headers: { token },
    });
    expect(bad.statusCode).toBe(404);
  });

  it(`keeps at most ${SUPPORT_BUNDLES_KEPT} bundles`, async () => {
    const { app, token } = await start();
    for (let i = 0; i < SUPPORT_BUNDLES_KEPT + 2; i++) {
      const form = multipart({ message: `m${i}` }, []);
      const res = await submit(app, token, form);
      expect(res.statusCode).toBe(200);
    }
    expect(await readdir(join(dir, 'support'))).toHaveLength(SUPPORT_BUNDLES_KEPT);
  });

  it('refuses a missing message, a fake image, too many images and a large one', async () => {
    const { app, token } = await start();
    const send = async (
      fields: Record<string, string>,
      files: Array<{ field: string; filename: string; data: Buffer }>,
    ) => {
      const form = multipart(fields, files);
      return submit(app, token, form);
    };
    const noMessage = await send({ message: '  ', contact: 'x' }, []);
    expect(noMessage.statusCode).toBe(400);
    expect(noMessage.json().result.error_msg).toMatch(/^message:/);
    // SPEC 5's text pattern on the contact (an email address or a phone number)
    for (const contact of ['me@x.com\nBcc: y@z', '<script>alert(1)</script>', '"a" b']) {
      const bad = await send({ message: 'm', contact }, []);
      expect(bad.statusCode, contact).toBe(400);
      expect(bad.json().result.error_msg).toMatch(/^contact: only ASCII letters, digits/);
    }
    const fake = await send({ message: 'm' }, [
      { field: 'image1', filename: 'x.png', data: Buffer.from('MZ not an image') },
    ]);
    expect(fake.statusCode).toBe(400);
    expect(fake.json().result.error_msg).toMatch(/^image1: only JPG, JPEG, GIF or PNG/);
    const wrongExt = await send({ message: 'm' }, [
      { field: 'image1', filename: 'x.bmp', data: PNG },
    ]);
    expect(wrongExt.statusCode).toBe(400);
    const nine = await send(
      { message: 'm' },
      Array.from({ length: 9 }, (_, i) => ({
        field: `image${i + 1}`,
        filename: 'a.png',
        data: PNG,
      })),
    );
    expect(nine.statusCode).toBe(400);
    expect(nine.json().result.error_msg).toMatch(/^images: at most 8/);
    // SPEC's 10 MB is 10,000,000 bytes: one byte over is refused, saying so in bytes
    const image = (size: number) => Buffer.concat([PNG, Buffer.alloc(size - PNG.length)]);
    const large = await send({ message: 'm' }, [
      { field: 'image1', filename: 'a.png', data: image(10_000_001) },
    ]);
    expect(large.statusCode).toBe(400);
    expect(large.json().result.error_msg).toBe(
      'image1: an image may be at most 10 MB (10,000,000 bytes)',
    );
    const notForm = await app.inject({
      method: 'POST',
      url: '/api/support/submit',
      headers: { token, 'content-type': 'application/json' },
      payload: '{"message":"m"}',
    });
    expect(notForm.statusCode).toBe(400);
    expect(await readdir(dir)).not.toContain('support');
    const anon = await app.inject({ method: 'GET', url: '/api/support/bundles' });
    expect(anon.statusCode).toBe(401);
  });

  it('takes an image of exactly 10 MB (10,000,000 bytes)', async () => {
    const { app, token } = await start();
    const data = Buffer.concat([PNG, Buffer.alloc(10_000_000 - PNG.length)]);
    const res = await submit(
      app,
      token,
      multipart({ message: 'm' }, [{ field: 'image1', filename: 'a.png', data }]),
    );
    expect(res.statusCode).toBe(200);
    expect(res.json().result.delivered).toBe('saved');
  });

  it('sends to the configured support URL with the log bundle', async () => {
    const received: Array<{ type: string; body: Buffer }> = [];
    sink = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ type: String(req.headers['content-type']), body: Buffer.concat(chunks) });
        res.end('ok');
      });
    });
    await new Promise<void>((r) => sink!.listen(0, '127.0.0.1', r));
    const port = (sink.address() as { port: number }).port;
    const url = `http://127.0.0.1:${port}/submit`;
    const { app, token } = await start({ support: { url } });
    const form = multipart({ message: 'help me', contact: 'c' }, [
      { field: 'image1', filename: 'a.png', data: PNG },
    ]);
    const res = await submit(app, token, form);
    expect(res.statusCode).toBe(200);
    expect(res.json().result).toEqual({ delivered: 'sent', url });
    expect(received).toHaveLength(1);
    expect(received[0]!.type).toMatch(/^multipart\/form-data/);
    const text = received[0]!.body.toString('latin1');
    expect(text).toContain('name="message"');
    expect(text).toContain('help me');
    expect(text).toMatch(/name="log"; filename="system_logs_\d{8}_\d{6}\.zip"/);
    expect(text).toContain('name="image1"; filename="a.png"');
    await new Promise((r) => sink!.close(r));
    sink = null;
    const down = await submit(app, token, form);
    expect(down.statusCode).toBe(503);
    expect(down.json().result.error).toBe('SupportSendError');
  });
});

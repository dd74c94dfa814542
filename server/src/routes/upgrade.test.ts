import { createReadStream } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp, createContext } from '../app';
import { buildConfig } from '../config';
import type { AppContext } from '../context';
import { loadConfigDefaults } from '../paths';
import { loadTrustedKeys, verifyPackage } from '../services/upgrade/package-reader';
import { makePackage, makeTree } from '../services/upgrade/test-package';
import { UpgradeService } from '../services/upgrade/upgrade-service';

/** An answer's envelope, loosely typed: the tests compare it with toEqual/toMatchObject. */
interface Answer {
  status: number;
  body: { ok: boolean; result: Record<string, unknown> & { error?: string } };
}

let work = '';
let channel: Server;
let base = '';
/** Bytes per 50 ms the channel sends a package with (0 = all at once). */
let throttle = 0;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'kvm-upgrade-'));
  await makeTree(join(work, 'tree'));
  await makePackage(work, ['--gen-key', join(work, 'k')]);
  await makePackage(work, [
    '--from',
    join(work, 'tree'),
    '--version',
    'V0.2.0',
    '--key',
    join(work, 'k.key'),
    '--out',
    join(work, 'out'),
    '--channel',
    join(work, 'ch'),
    '--release-note',
    'Faster video',
    '--release-note-cn',
    '视频更快',
  ]);
  // The channel folder on loopback, as a firmware server serves it.
  channel = createServer((req, res) => {
    const name = decodeURIComponent((req.url ?? '/').split('?')[0]!.slice(1));
    const [dir, file] = name.split('/');
    if (!dir || !file || file.includes('..')) return res.writeHead(404).end();
    const path = join(work, dir, file);
    stat(path).then(
      (s) => {
        res.writeHead(200, { 'content-length': s.size });
        if (!file.endsWith('.pkg') || throttle === 0) return createReadStream(path).pipe(res);
        void readFile(path).then((data) => {
          let at = 0;
          const timer = setInterval(() => {
            if (res.destroyed || at >= data.length) return clearInterval(timer);
            res.write(data.subarray(at, (at += throttle)));
            if (at >= data.length) res.end();
          }, 50);
          res.on('close', () => clearInterval(timer));
        });
      },
      () => res.writeHead(404).end(),
    );
  });
  await new Promise<void>((r) => channel.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(channel.address() as AddressInfo).port}`;
}, 60_000);

afterAll(async () => {
  channel?.closeAllConnections();
  await new Promise((r) => channel?.close(r));
  await rm(work, { recursive: true, force: true });
});

let app: FastifyInstance | null = null;
let ctx: AppContext | null = null;
let dir = '';
afterEach(async () => {
  throttle = 0;
  await app?.close();
  app = null;
  await rm(dir, { recursive: true, force: true });
});

async function start(
  upgrade: Record<string, unknown> = {},
  freeBytes?: () => Promise<number>,
): Promise<{ get: (url: string) => Promise<Answer>; token: string }> {
  dir = await mkdtemp(join(tmpdir(), 'kvm-upgrade-data-'));
  const config = buildConfig(
    { data_dir: dir, target: 'testbed', webrtc: { stun_url: null }, upgrade },
    loadConfigDefaults(),
  );
  ctx = await createContext(config, '0.1.0');
  if (freeBytes) {
    ctx.upgrade = new UpgradeService({
      dataDir: dir,
      config: config.upgrade,
      model: 'RM1',
      version: '0.1.0',
      log: { info() {}, warn() {}, error() {}, debug() {} },
      freeBytes,
    });
  }
  app = await buildApp(ctx);
  const token = await ctx.auth.sessions.create('admin', 3_600_000);
  const a = app;
  return {
    token,
    get: async (url) => {
      const res = await a.inject({ method: 'GET', url, headers: { token } });
      return { status: res.statusCode, body: res.json<Answer['body']>() };
    },
  };
}

describe('/api/upgrade version, status, compare', () => {
  it('answers version and status; compare says when no channel is configured', async () => {
    const { get } = await start();
    expect((await get('/api/upgrade/version')).body.result).toEqual({
      version: 'V0.1.0',
      model: 'RM1',
    });
    // Not under the launcher (no install folder): GL's `enabled`, and no install possible.
    expect((await get('/api/upgrade/status')).body.result).toEqual({
      enabled: true,
      can_install: false,
      in_progress: false,
      last_upgrade: null,
    });
    const c = await get('/api/upgrade/compare');
    expect(c.status).toBe(200);
    expect(c.body.result).toMatchObject({
      local_version: 'V0.1.0',
      local_model: 'RM1',
      server_version: null,
    });
    expect(c.body.result.error).toMatch(/No release channel is configured/);
    expect(c.body.result.beta_error).toMatch(/No beta channel is configured/);
    const d = await get('/api/upgrade/download');
    expect(d.status).toBe(400);
    expect(d.body.result.error).toBe('BadRequestError');
  });

  it('reads the release channel; a beta channel that fails fills beta_error only', async () => {
    const { get } = await start({ channel_url: `${base}/ch`, beta_channel_url: `${base}/none/` });
    const c = await get('/api/upgrade/compare');
    expect(c.status).toBe(200);
    expect(c.body.result).toMatchObject({
      server_version: 'V0.2.0',
      release_note: 'Faster video',
      release_note_cn: '视频更快',
      error: null,
      beta_version: null,
    });
    expect(c.body.result.beta_error).toMatch(/HTTP 404/);
  });
});

describe('/api/upgrade download', () => {
  it('answers the size at once, progresses in download_info, and leaves a verified package', async () => {
    const { get } = await start({ channel_url: `${base}/ch` });
    const pkgSize = (await stat(join(work, 'out', 'kvm-RM1-0.2.0.pkg'))).size;
    throttle = 64 * 1024;
    const d = await get('/api/upgrade/download');
    expect(d.body).toEqual({ ok: true, result: { size: pkgSize } });
    const sizes: number[] = [];
    await expect
      .poll(
        async () => {
          const info = (await get('/api/upgrade/download_info')).body.result;
          sizes.push(info.size as number);
          return info;
        },
        { timeout: 15_000, interval: 50 },
      )
      .toEqual({ size: pkgSize, total_size: pkgSize });
    expect(sizes.some((s) => s > 0 && s < pkgSize)).toBe(true);
    const keys = await loadTrustedKeys([join(work, 'k.pub')]);
    await expect.poll(() => stat(ctx!.upgrade.packagePath).then((s) => s.size)).toBe(pkgSize);
    const v = await verifyPackage(ctx!.upgrade.packagePath, keys, 'RM1', 'V0.1.0');
    expect(v).toMatchObject({ signature_valid: true, firmware_valid: true });
  });

  it('cancel stops a running download and resets total_size; a second cancel warns', async () => {
    const { get } = await start({ channel_url: `${base}/ch` });
    throttle = 4096;
    expect((await get('/api/upgrade/download')).status).toBe(200);
    await expect
      .poll(async () => (await get('/api/upgrade/download_info')).body.result.size)
      .toBeGreaterThan(0);
    expect((await get('/api/upgrade/download_cancel')).body.result).toEqual({
      status: 'success',
      message: 'Download cancelled',
    });
    expect((await get('/api/upgrade/download_info')).body.result).toEqual({
      size: 0,
      total_size: 0,
    });
    expect((await get('/api/upgrade/download_cancel')).body.result.status).toBe('warning');
    await expect(stat(join(dir, 'upgrade', 'update.pkg.part'))).rejects.toThrow();
  });

  it('two downloads at once run one after the other and end in one whole package', async () => {
    const { get } = await start({ channel_url: `${base}/ch` });
    const pkg = await readFile(join(work, 'out', 'kvm-RM1-0.2.0.pkg'));
    throttle = 64 * 1024;
    const answers = await Promise.all([
      get('/api/upgrade/download'),
      get('/api/upgrade/beta/download'),
      get('/api/upgrade/download'),
    ]);
    expect(answers.map((a) => a.status)).toEqual([200, 400, 200]);
    await expect
      .poll(async () => (await get('/api/upgrade/download_info')).body.result, { timeout: 15_000 })
      .toEqual({ size: pkg.length, total_size: pkg.length });
    await expect
      .poll(() =>
        readFile(ctx!.upgrade.packagePath).then(
          (b) => b.equals(pkg),
          () => false,
        ),
      )
      .toBe(true);
  });

  it('a second download cancels the first; a sha256 mismatch leaves no package', async () => {
    const { get } = await start({ channel_url: `${base}/bad` });
    // A channel whose list names the right file with a wrong sha256.
    const { cp, mkdir } = await import('node:fs/promises');
    await mkdir(join(work, 'bad'), { recursive: true });
    await cp(join(work, 'ch'), join(work, 'bad'), { recursive: true });
    const list = await readFile(join(work, 'bad', 'list-sha256.txt'), 'utf8');
    await writeFile(
      join(work, 'bad', 'list-sha256.txt'),
      list.replace(/ [0-9a-f]{64}/, ` ${'0'.repeat(64)}`),
    );
    throttle = 4096;
    expect((await get('/api/upgrade/download')).status).toBe(200);
    throttle = 0;
    expect((await get('/api/upgrade/download')).status).toBe(200);
    await expect
      .poll(async () => (await get('/api/upgrade/download_info')).body.result, { timeout: 10_000 })
      .toEqual({ size: 0, total_size: 0 });
    await expect(stat(ctx!.upgrade.packagePath)).rejects.toThrow();
    await expect(stat(join(dir, 'upgrade', 'update.pkg.part'))).rejects.toThrow();
  });
});

describe('/api/upgrade/upload', () => {
  it('stores the file part streamed; Content-Length is required; 413 names the sizes', async () => {
    const { token } = await start({}, async () => 1000);
    const a = app!;
    await a.listen({ port: 0, host: '127.0.0.1' });
    const url = `http://127.0.0.1:${(a.server.address() as AddressInfo).port}/api/upgrade/upload`;
    const pkg = await readFile(join(work, 'out', 'kvm-RM1-0.2.0.pkg'));

    const form = new FormData();
    form.append('file', new Blob([pkg]), 'kvm.pkg');
    const big = await fetch(url, { method: 'POST', headers: { token }, body: form });
    expect(big.status).toBe(413);
    const bigBody = (await big.json()) as { result: { error_msg: string } };
    expect(bigBody.result.error_msg).toMatch(/needs \d+ bytes, 1000 bytes are free/);

    // A chunked body has no Content-Length.
    const chunked = await fetch(url, {
      method: 'POST',
      headers: { token, 'content-type': 'multipart/form-data; boundary=x' },
      body: new ReadableStream({
        start(c) {
          c.enqueue(new TextEncoder().encode('--x--\r\n'));
          c.close();
        },
      }),
      duplex: 'half',
    } as RequestInit);
    expect(chunked.status).toBe(400);
    expect(((await chunked.json()) as { result: { error_msg: string } }).result.error_msg).toBe(
      'Content-Length header is required',
    );
  });

  it('answers {filename, size}; a field before file is refused', async () => {
    const { token } = await start();
    const a = app!;
    await a.listen({ port: 0, host: '127.0.0.1' });
    const url = `http://127.0.0.1:${(a.server.address() as AddressInfo).port}/api/upgrade/upload`;
    const pkg = await readFile(join(work, 'out', 'kvm-RM1-0.2.0.pkg'));
    const form = new FormData();
    form.append('file', new Blob([pkg]), 'kvm.pkg');
    const ok = await fetch(url, { method: 'POST', headers: { token }, body: form });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({
      ok: true,
      result: { filename: 'kvm.pkg', size: pkg.length },
    });
    expect((await readFile(ctx!.upgrade.packagePath)).equals(pkg)).toBe(true);

    const wrong = new FormData();
    wrong.append('note', 'x');
    wrong.append('file', new Blob([pkg]), 'kvm.pkg');
    const bad = await fetch(url, { method: 'POST', headers: { token }, body: wrong });
    expect(bad.status).toBe(400);
    const anonymous = await fetch(url, { method: 'POST', body: form });
    expect(anonymous.status).toBe(401);
  });
});

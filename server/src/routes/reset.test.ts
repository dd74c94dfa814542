import { spawn } from 'node:child_process';
import { access, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp, createContext } from '../app';
import { buildConfig } from '../config';
import { loadConfigDefaults } from '../paths';
import { finishPendingReset, RESET_MARKER, requestReset } from '../services/support/reset';

let app: FastifyInstance | null = null;
let dir = '';
afterEach(async () => {
  await app?.close();
  app = null;
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = '';
});

const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  );

async function boot(restarts: { n: number }) {
  const config = buildConfig(
    { data_dir: dir, target: 'testbed', webrtc: { stun_url: null } },
    loadConfigDefaults(),
  );
  const ctx = await createContext(config, '0.0.0-test', undefined, {
    requestRestart: () => restarts.n++,
  });
  app = await buildApp(ctx);
  return { ctx, app };
}

describe('GET /api/upgrade/reset_default', () => {
  it('marks the reset, restarts, and the next start is first-run with TLS and logs kept', async () => {
    dir = await mkdtemp(join(tmpdir(), 'kvm-reset-'));
    const restarts = { n: 0 };
    let { ctx, app: a } = await boot(restarts);
    await ctx.auth.init('secret-pass');
    const token = await ctx.auth.sessions.create('admin', 3_600_000);
    await mkdir(join(dir, 'tls'), { recursive: true });
    await writeFile(join(dir, 'tls', 'cert.pem'), 'CERT');
    await mkdir(join(dir, 'logs'), { recursive: true });
    await writeFile(join(dir, 'logs', 'server.log'), 'line\n');
    await mkdir(join(dir, 'msd', 'images'), { recursive: true });
    await writeFile(join(dir, 'msd', 'images', 'x.iso'), 'ISO');
    await writeFile(join(dir, 'wol.json'), '{"devices":[]}');

    expect((await a.inject({ method: 'GET', url: '/api/upgrade/reset_default' })).statusCode).toBe(
      401,
    );
    expect(await exists(join(dir, RESET_MARKER))).toBe(false);
    const res = await a.inject({
      method: 'GET',
      url: '/api/upgrade/reset_default',
      headers: { token },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      ok: true,
      result: { status: 'Reset to factory default started' },
    });
    expect(restarts.n).toBe(1);
    expect(await exists(join(dir, RESET_MARKER))).toBe(true);

    // the restart main.ts does: close, then a new context over the same folder
    await a.close();
    app = null;
    ({ ctx, app: a } = await boot(restarts));
    expect(ctx.auth.isInited()).toBe(false);
    expect(ctx.auth.session(token)).toBeNull();
    const inited = await a.inject({ method: 'GET', url: '/api/init/is_inited' });
    expect(inited.json().result.is_inited).toBe(false);
    expect(await exists(join(dir, RESET_MARKER))).toBe(false);
    expect(await exists(join(dir, 'tls', 'cert.pem'))).toBe(true);
    expect(await exists(join(dir, 'logs', 'server.log'))).toBe(true);
    expect(await exists(join(dir, 'msd', 'images', 'x.iso'))).toBe(false);
    expect(await exists(join(dir, 'wol.json'))).toBe(false);
    // first-run setup works again
    await ctx.auth.init('another-pass');
    expect(ctx.auth.isInited()).toBe(true);
  });
});

describe('finishPendingReset (crash safety)', () => {
  it('does nothing without the marker', async () => {
    dir = await mkdtemp(join(tmpdir(), 'kvm-reset-'));
    await writeFile(join(dir, 'auth.json'), '{}');
    expect(await finishPendingReset(dir)).toBe(false);
    expect(await readdir(dir)).toEqual(['auth.json']);
  });

  it('finishes a wipe a crash interrupted: the marker stays until everything is gone', async () => {
    dir = await mkdtemp(join(tmpdir(), 'kvm-reset-'));
    await requestReset(dir);
    // what a kill -9 halfway leaves: some state already removed, some still there
    await mkdir(join(dir, 'system'), { recursive: true });
    await writeFile(join(dir, 'system', 'network.json'), '{}');
    await writeFile(join(dir, 'hid.json'), '{}');
    await mkdir(join(dir, 'tls'));
    await mkdir(join(dir, 'run'));
    expect(await finishPendingReset(dir)).toBe(true);
    expect((await readdir(dir)).sort()).toEqual(['run', 'tls']);
    expect(await finishPendingReset(dir)).toBe(false);
  });

  it('a crash right after the answer (before the restart) wipes at the next start', async () => {
    dir = await mkdtemp(join(tmpdir(), 'kvm-reset-'));
    const restarts = { n: 0 };
    const { ctx, app: a } = await boot(restarts);
    await ctx.auth.init('secret-pass');
    await requestReset(dir);
    await a.close(); // the process is gone; nothing else happened
    app = null;
    const next = await boot(restarts);
    expect(next.ctx.auth.isInited()).toBe(false);
  });
});

describe('reset killed with SIGKILL in the middle of the wipe', () => {
  it('the next start finishes it', async () => {
    dir = await mkdtemp(join(tmpdir(), 'kvm-reset-kill-'));
    const data = join(dir, 'data');
    await mkdir(join(data, 'tls'), { recursive: true });
    await writeFile(join(data, 'tls', 'cert.pem'), 'CERT');
    // enough state that the wipe takes a while
    const FILES = 4000;
    for (let i = 0; i < FILES; i += 500) {
      await Promise.all(
        Array.from({ length: 500 }, (_, j) => writeFile(join(data, `state-${i + j}.json`), '{}')),
      );
    }
    await requestReset(data);
    const bundle = join(dir, 'reset.mjs');
    await build({
      stdin: {
        contents: `import { finishPendingReset } from ${JSON.stringify(
          join(import.meta.dirname, '..', 'services', 'support', 'reset.ts'),
        )};\nawait finishPendingReset(process.argv[2]);\n`,
        resolveDir: import.meta.dirname,
        loader: 'ts',
      },
      bundle: true,
      platform: 'node',
      format: 'esm',
      outfile: bundle,
      logLevel: 'silent',
    });
    const child = spawn(process.execPath, [bundle, data], { stdio: 'ignore' });
    const exited = new Promise((r) => child.once('exit', r));
    try {
      // kill it as soon as the wipe has begun, well before it can end
      await expect
        .poll(async () => (await readdir(data)).length, { timeout: 20_000, interval: 2 })
        .toBeLessThan(FILES + 2);
      child.kill('SIGKILL');
      await exited;
    } finally {
      child.kill('SIGKILL');
    }
    const left = await readdir(data);
    // Interrupted (the usual case): the marker is still there, so the next start goes on. On a
    // machine fast enough to finish before the kill lands, the wipe is simply complete: either
    // way no state survives and nothing is left half-done.
    if (left.includes(RESET_MARKER)) {
      expect(await finishPendingReset(data)).toBe(true);
    } else {
      expect(left).toEqual(['tls']);
      expect(await finishPendingReset(data)).toBe(false);
    }
    expect(await readdir(data)).toEqual(['tls']);
    expect(await exists(join(data, 'tls', 'cert.pem'))).toBe(true);
  }, 60_000);
});

/**
 * The replica's entry as a process (bundled like scripts/build.mjs does): a bad config stops it
 * naming the key; a good one makes its self-signed certificate, migrates, answers HTTPS, and
 * SIGTERM ends it promptly.
 */
import { spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  freePort,
  startPostgres,
  startSmtpSink,
  type PostgresEngine,
  type SmtpSink,
} from '../../scripts/cloud/engines.mjs';

const dir = mkdtempSync(join(tmpdir(), 'fleet-main-'));
const bundle = join(dir, 'main.js');
let pg: PostgresEngine;
let sink: SmtpSink;

beforeAll(async () => {
  await build({
    entryPoints: [new URL('./main.ts', import.meta.url).pathname],
    outfile: bundle,
    bundle: true,
    external: ['pg-native'],
    platform: 'node',
    format: 'esm',
    target: 'node20',
    keepNames: true,
    logLevel: 'error',
    banner: {
      js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
    },
  });
  // the console the bundle serves at / is the `www` folder beside it (a built one's stand-in:
  // this test does not need `node scripts/build.mjs fleet` to have run)
  mkdirSync(join(dir, 'www'));
  writeFileSync(join(dir, 'www', 'index.html'), '<!doctype html><title>fleet</title>');
  [pg, sink] = await Promise.all([startPostgres(), startSmtpSink()]);
});
afterAll(async () => {
  await Promise.all([pg?.stop(), sink?.stop()]);
  rmSync(dir, { recursive: true, force: true });
});

function run(args: string[], env: Record<string, string> = {}) {
  // dies with this process even when it is killed outright
  const child = spawn(
    'setpriv',
    ['--pdeathsig', 'SIGKILL', '--', process.execPath, bundle, ...args],
    {
      env: { ...process.env, FLEET_LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
  return { child, exited, out: () => out };
}

function httpsStatus(url: string): Promise<number | null> {
  return new Promise((res) => {
    const req = get(url, { rejectUnauthorized: false, timeout: 2000 }, (r) => {
      r.resume();
      res(r.statusCode ?? null);
    });
    req.once('timeout', () => req.destroy());
    req.once('error', () => res(null));
  });
}

function httpsText(url: string): Promise<string> {
  return new Promise((res, rej) => {
    const req = get(url, { rejectUnauthorized: false, timeout: 5000 }, (r) => {
      let text = '';
      r.setEncoding('utf8');
      r.on('data', (c: string) => (text += c));
      r.on('end', () => res(text));
    });
    req.once('timeout', () => req.destroy(new Error('timeout')));
    req.once('error', rej);
  });
}

describe('fleet main', () => {
  it('a bad config stops the start with exit 2 and the key path', async () => {
    const file = join(dir, 'bad.json');
    writeFileSync(file, JSON.stringify({ database: pg.url, port: 'many' }));
    const p = run(['--config', file]);
    expect(await p.exited).toBe(2);
    expect(p.out()).toMatch(/config: port:/);
  });

  it('starts on HTTPS with a certificate it made, and stops on SIGTERM', async () => {
    const port = await freePort();
    const data = join(dir, 'data');
    const file = join(dir, 'fleet.yaml');
    writeFileSync(
      file,
      [
        `database: ${pg.url}`,
        `port: ${port}`,
        `data: ${data}`,
        `smtp: { host: 127.0.0.1, port: ${sink.port}, from: fleet@localhost }`,
        '',
      ].join('\n'),
    );
    const p = run(['--config', file]);
    try {
      await expect
        .poll(() => httpsStatus(`https://127.0.0.1:${port}/`), { timeout: 30_000, interval: 200 })
        .toBe(200);
      expect(await httpsText(`https://127.0.0.1:${port}/devices`)).toContain(
        '<title>fleet</title>',
      );
      const cert = new X509Certificate(readFileSync(join(data, 'tls', 'cert.pem')));
      expect(cert.subjectAltName).toContain('IP Address:127.0.0.1');
      expect(existsSync(join(data, 'tls', 'key.pem'))).toBe(true);
      const started = Date.now();
      p.child.kill('SIGTERM');
      expect(await p.exited).toBe(0);
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      p.child.kill('SIGKILL');
    }
  }, 60_000);
});

/**
 * The server as `npm start` runs it: HTTPS by default with a certificate made once and kept,
 * HTTP redirecting to it, logs in a file, config errors that name the key, clean SIGTERM.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { get as httpGet } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { NETNS_ETC, netnsNames } from '../server/src/drivers/network/netns';
import { removeNamespaces } from '../server/src/platform/netns/namespaces';
import { runCommand } from '../server/src/process/run';
import { freePort, REPO_ROOT } from './fixtures/server';

const MAIN = join(REPO_ROOT, 'server/dist/main.js');
const LAUNCHER = join(REPO_ROOT, 'server/dist/launcher.js');

/**
 * Every server or launcher a test here started or found. Whatever the test's outcome, each one
 * still running is killed after it (checked by its command line, so a reused pid is left alone).
 */
const started = new Set<number>();
/**
 * Every data folder a test here made, removed after the test with the network namespaces a
 * server killed here (SIGKILL, exit 70) could not remove (the next start that would is never
 * made).
 */
const dataDirs = new Set<string>();
afterEach(async () => {
  for (const pid of started) {
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (!cmdline.includes('server/dist/')) continue;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
  started.clear();
  for (const dir of dataDirs) {
    const names = netnsNames(dir);
    await removeNamespaces(runCommand, names).catch(() => undefined);
    await rm(join(NETNS_ETC, names.dev), { recursive: true, force: true });
    await rm(dir, { recursive: true, force: true, maxRetries: 3 });
  }
  dataDirs.clear();
});

async function tempData(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  dataDirs.add(dir);
  return dir;
}

function startServer(args: string[], script = MAIN, env: NodeJS.ProcessEnv = process.env) {
  const child = spawn(process.execPath, [script, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env,
  });
  if (child.pid) started.add(child.pid);
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setInterval(() => {
      if (out.includes(' ready in ')) {
        clearInterval(timer);
        resolve();
      }
    }, 20);
    child.once('exit', (code) => {
      clearInterval(timer);
      reject(new Error(`exited ${code}: ${out}`));
    });
  });
  return { child, ready, output: () => out };
}

function httpsGet(
  port: number,
  path: string,
): Promise<{ status: number; body: string; cert: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      { host: '127.0.0.1', port, path, rejectUnauthorized: false, agent: false },
      (res) => {
        const socket = res.socket as unknown as {
          getPeerCertificate(): { fingerprint256: string };
        };
        const cert = socket.getPeerCertificate().fingerprint256;
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, cert }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('server process', () => {
  it('serves HTTPS with a certificate made once and kept, and redirects HTTP to it', async () => {
    const data = await tempData('kvm-proc-');
    const port = await freePort();
    const redirect = await freePort();
    const args = [
      '--data',
      data,
      '--listen',
      `127.0.0.1:${port}`,
      '--redirect',
      `127.0.0.1:${redirect}`,
      '--target',
      'testbed',
    ];
    let srv = startServer(args);
    await srv.ready;
    const first = await httpsGet(port, '/api/init/is_inited');
    expect(first.status).toBe(200);
    expect(JSON.parse(first.body)).toEqual({
      ok: true,
      result: { is_inited: false, country_code: 'US' },
    });
    // An error's wire name is its class name: the bundle must keep class names (keepNames).
    const refused = await httpsGet(port, '/api/no-such-route');
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.body)).toMatchObject({
      ok: false,
      result: { error: 'UnauthorizedError' },
    });

    const redirected = (host: string): Promise<string | undefined> =>
      new Promise((resolve, reject) => {
        httpGet(
          { host: '127.0.0.1', port: redirect, path: '/kvm?x=1', headers: { host } },
          (res) => {
            expect(res.statusCode).toBe(301);
            resolve(res.headers.location);
            res.resume();
          },
        ).on('error', reject);
      });
    expect(await redirected(`localhost:${redirect}`)).toBe(`https://localhost:${port}/kvm?x=1`);
    // a Host that is not the device's is never echoed (issue 9, item 22)
    expect(await redirected('evil.example')).toBe(`https://127.0.0.1:${port}/kvm?x=1`);

    const exited = new Promise<number | null>((r) => srv.child.once('exit', (code) => r(code)));
    srv.child.kill('SIGTERM');
    expect(await exited).toBe(0);

    srv = startServer(args);
    await srv.ready;
    const second = await httpsGet(port, '/api/init/is_inited');
    expect(second.cert).toBe(first.cert);
    srv.child.kill('SIGTERM');
    await new Promise((r) => srv.child.once('exit', r));

    expect((await readdir(join(data, 'tls'))).sort()).toEqual(['server.crt', 'server.key']);
    const log = await readFile(join(data, 'logs', 'server.log'), 'utf8');
    const lines = log
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { msg: string });
    expect(lines.some((l) => l.msg === 'listening')).toBe(true);
    expect(lines.some((l) => l.msg === 'stopping')).toBe(true);
  });

  it('refuses a bad config file and a bad option with the key named, exit 2', async () => {
    const dir = await tempData('kvm-cfg-');
    const file = join(dir, 'config.yaml');
    await writeFile(file, 'server:\n  listen: nowhere\nauth:\n  sesion_expire_s: 5\n');
    let r = spawnSync(process.execPath, [MAIN, '--config', file, '--data', dir], {
      encoding: 'utf8',
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('server.listen');
    expect(r.stderr).toContain('auth.sesion_expire_s');
    r = spawnSync(process.execPath, [MAIN, '--target', 'toaster'], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--target');
    r = spawnSync(process.execPath, [MAIN, '--help'], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('--no-tls');
  });
});

/** The pids of a process's children (Linux /proc). */
async function childrenOf(pid: number): Promise<number[]> {
  const text = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '');
  return text.trim().split(/\s+/).filter(Boolean).map(Number);
}

function plainGet(port: number, path: string): Promise<number> {
  return new Promise((resolve) => {
    httpGet({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }).on('error', () => resolve(0));
  });
}

describe('crash and restart (issue 9, item 1)', () => {
  it('the launcher starts the server again after it is killed, and stops with it', async () => {
    const data = await tempData('kvm-launch-');
    const port = await freePort();
    const args = [
      '--data',
      data,
      '--listen',
      `127.0.0.1:${port}`,
      '--no-tls',
      '--target',
      'testbed',
    ];
    const srv = startServer(args, LAUNCHER);
    await srv.ready;
    expect(srv.output()).toMatch(/launcher: open-file limit for the server: \d+/);
    const launcherPid = srv.child.pid!;
    const [first] = await childrenOf(launcherPid);
    if (first) started.add(first);
    expect(first).toBeGreaterThan(0);
    process.kill(first!, 'SIGKILL');
    await expect
      .poll(
        async () => {
          const [now] = await childrenOf(launcherPid);
          if (now) started.add(now);
          return (
            now !== undefined && now !== first && (await plainGet(port, '/api/init/is_inited'))
          );
        },
        { timeout: 30_000, interval: 200 },
      )
      .toBe(200);
    expect(srv.output()).toContain('server exited (signal SIGKILL)');
    const exited = new Promise<number | null>((r) => srv.child.once('exit', (code) => r(code)));
    srv.child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(await childrenOf(launcherPid)).toEqual([]);
  });

  it('a launcher killed with SIGKILL takes its server down with it (no orphan on the port)', async () => {
    const data = await tempData('kvm-launch-');
    const port = await freePort();
    const args = ['--data', data, '--listen', `127.0.0.1:${port}`, '--no-tls'];
    const srv = startServer([...args, '--target', 'testbed'], LAUNCHER);
    await srv.ready;
    const [server] = await childrenOf(srv.child.pid!);
    if (server) started.add(server);
    expect(server).toBeGreaterThan(0);
    srv.child.kill('SIGKILL');
    const alive = (pid: number): boolean => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    await expect.poll(() => alive(server!), { timeout: 15_000, interval: 100 }).toBe(false);
    expect(await plainGet(port, '/api/init/is_inited')).toBe(0);
  });

  it('an uncaught exception is logged as fatal and the server exits non-zero (70)', async () => {
    const data = await tempData('kvm-crash-');
    const port = await freePort();
    // a bug somewhere after start: a timer that throws
    const fault = join(data, 'fault.mjs');
    await writeFile(fault, 'setTimeout(() => { throw new Error("injected fault"); }, 1500);\n');
    const env = { ...process.env, NODE_OPTIONS: `--import=${fault}` };
    const child = spawn(
      process.execPath,
      [MAIN, '--data', data, '--listen', `127.0.0.1:${port}`, '--no-tls', '--target', 'testbed'],
      { stdio: 'ignore', env },
    );
    const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
    expect(code).toBe(70);
    const lines = (await readFile(join(data, 'logs', 'server.log'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { level: number; msg: string; err?: { message: string } });
    const fatal = lines.find((l) => l.level === 60);
    expect(fatal?.msg).toContain('uncaught exception');
    expect(fatal?.err?.message).toBe('injected fault');
  });
});

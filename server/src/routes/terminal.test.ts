/**
 * The terminal sockets against a real pty: ttyd's handshake, echo, resize, the per-session
 * bound, the session's end; and the serial line over a unix socket of the test's own.
 */
import { readdir, readFile, readlink, rm } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import fastifyWebsocket from '@fastify/websocket';
import WebSocket from 'ws';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { form, initAndLogin, login, newApp, PASSWORD, tempDataDir } from '../test-helpers';
import { FAST_HASHER, newAuthApp, TestClock } from '../services/auth/auth-test-kit';
import { MAX_SESSIONS_PER_USER, SESSION_SWEEP_MS } from '../services/auth/sessions';
import { NoSerialConsole } from '../drivers/serial/disabled';
import { UnixSocketSerial } from '../drivers/serial/qemu';
import { TerminalService } from '../terminal/terminal-service';
import { SocketRegistry } from '../ws/socket-guard';
import { SILENT_LOGGER } from '../log';
import { terminalRoutes } from './terminal';

let app: FastifyInstance | null = null;
let dir: string | null = null;
const clients: WebSocket[] = [];
/** Processes a test started in a shell: killed after it, whatever the test found. */
const strays: number[] = [];
afterEach(async () => {
  for (const pid of strays.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone, as it should be */
    }
  }
  for (const c of clients.splice(0)) c.terminate();
  vi.useRealTimers();
  await app?.close();
  app = null;
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = null;
});

async function start(
  overrides: Record<string, unknown> = {},
): Promise<{ base: string; token: string }> {
  dir = await tempDataDir();
  app = await newApp(dir, overrides);
  const token = await initAndLogin(app);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  if (!addr || typeof addr === 'string') throw new Error('no address');
  return { base: `ws://127.0.0.1:${addr.port}`, token };
}

/** The app with a session clock the test moves and a cheap password hash. */
async function startAuth(clock?: TestClock): Promise<{ base: string; token: string }> {
  dir = await tempDataDir();
  app = await newAuthApp({
    dataDir: dir,
    clock,
    passwords: FAST_HASHER,
    overrides: { terminal: { shell: '/bin/bash', args: ['--noprofile', '--norc'] } },
  });
  const token = await initAndLogin(app);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  if (!addr || typeof addr === 'string') throw new Error('no address');
  return { base: `ws://127.0.0.1:${addr.port}`, token };
}

/** A ttyd client: collects OUTPUT text and the other frames. */
function term(url: string, token: string | null, hello = true) {
  const ws = new WebSocket(
    url,
    ['tty'],
    token ? { headers: { cookie: `auth_token=${token}` } } : {},
  );
  clients.push(ws);
  const state = { out: '', frames: [] as Buffer[], close: 0, reason: '', status: 0, opened: false };
  ws.on('message', (d: Buffer) => {
    state.frames.push(d);
    if (d[0] === 0x30) state.out += d.subarray(1).toString('utf8');
  });
  ws.on('open', () => {
    state.opened = true;
    if (hello) ws.send(JSON.stringify({ AuthToken: '', columns: 80, rows: 24 }));
  });
  ws.on('close', (code, reason) => {
    state.reason = reason.toString();
    state.close = code;
  });
  ws.on('unexpected-response', (_req, res) => (state.status = res.statusCode ?? 0));
  ws.on('error', () => undefined);
  const input = (text: string) => ws.send(Buffer.from(`0${text}`));
  return { ws, state, input };
}

const rand = () => 10_000 + Math.floor(Math.random() * 80_000);

/** Waits for `re` in a terminal's output (typed input echoes literally: match only results). */
async function waitFor(t: { state: { out: string } }, re: RegExp): Promise<RegExpExecArray> {
  await expect.poll(() => re.exec(t.state.out), { timeout: 15_000 }).toBeTruthy();
  return re.exec(t.state.out)!;
}

/** A process's state, process group and session (`/proc/<pid>/stat`), null once gone/zombie. */
async function procStat(pid: number): Promise<{ pgrp: number; sid: number } | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (f[0] === 'Z' || f[0] === 'X') return null;
    return { pgrp: Number(f[2]), sid: Number(f[3]) };
  } catch {
    return null;
  }
}

async function alive(pids: number[]): Promise<number[]> {
  const out: number[] = [];
  for (const p of pids) if (await procStat(p)) out.push(p);
  return out;
}

/**
 * Starts, in a shell, a job that ignores SIGHUP and SIGTERM (own process group, job control)
 * and a child in the shell's own process group, the shell ignoring both signals too.
 */
async function stubbornShell(t: ReturnType<typeof term>): Promise<number[]> {
  await expect.poll(() => t.state.frames.length).toBeGreaterThan(1);
  t.input(
    "trap '' HUP TERM; sleep 1000 & a=$!; set +m; sleep 1001 & b=$!; set -m; echo pids-$$-$a-$b-end\r",
  );
  const m = await waitFor(t, /pids-(\d+)-(\d+)-(\d+)-end/);
  const [shell, job, child] = [Number(m[1]), Number(m[2]), Number(m[3])];
  strays.push(shell, job, child);
  // what the test means to build: a job of its own and a child in the shell's group
  expect(await procStat(job)).toMatchObject({ sid: shell });
  expect((await procStat(job))!.pgrp).not.toBe(shell);
  expect(await procStat(child)).toEqual({ pgrp: shell, sid: shell });
  return [shell, job, child];
}

describe('terminal sockets', () => {
  it('needs a session', async () => {
    const { base } = await start();
    const t = term(`${base}/extras/webterm/ttyd/ws`, null);
    await expect.poll(() => t.state.status).toBeGreaterThanOrEqual(400);
    expect(t.state.opened).toBe(false);
  });

  it('speaks ttyd: title, preferences, echo through the shell, resize reaches the pty', async () => {
    const { base, token } = await start();
    const t = term(`${base}/extras/webterm/ttyd/ws`, token);
    await expect.poll(() => t.state.frames.length).toBeGreaterThanOrEqual(2);
    expect(t.ws.protocol).toBe('tty');
    expect(t.state.frames[0]![0]).toBe(0x31); // SET_WINDOW_TITLE
    expect(t.state.frames[1]!.toString()).toBe('2{}'); // SET_PREFERENCES
    const n = rand();
    t.input(`echo hi-$((${n}+1))\r`);
    await expect.poll(() => t.state.out, { timeout: 10_000 }).toContain(`hi-${n + 1}`);
    t.ws.send(Buffer.from('1' + JSON.stringify({ columns: 101, rows: 33 })));
    t.input('stty size\r');
    await expect.poll(() => t.state.out, { timeout: 10_000 }).toContain('33 101');
  });

  it('answers a bad target with 400 and a fifth terminal of a session with 429', async () => {
    const { base, token } = await start();
    const bad = term(`${base}/api/terminal/ws?target=nope`, token);
    await expect.poll(() => bad.state.status).toBe(400);
    const four = [1, 2, 3, 4].map(() => term(`${base}/api/terminal/ws?target=device`, token));
    for (const t of four) await expect.poll(() => t.state.frames.length).toBeGreaterThan(0);
    const fifth = term(`${base}/api/terminal/ws`, token);
    await expect.poll(() => fifth.state.status).toBe(429);
    // one closes: room for another
    four[0]!.ws.close();
    await expect
      .poll(async () => {
        const again = term(`${base}/api/terminal/ws`, token, false);
        await expect.poll(() => again.state.opened || again.state.status > 0).toBe(true);
        again.ws.terminate();
        return again.state.opened;
      })
      .toBe(true);
  });

  it('closes with 4001 and ends the shell when the session ends', async () => {
    const { base, token } = await start();
    const t = term(`${base}/api/terminal/ws?target=device`, token);
    await expect.poll(() => t.state.frames.length).toBeGreaterThan(1);
    t.input('echo pid-$$-end\r');
    await expect.poll(() => /pid-(\d+)-end/.exec(t.state.out), { timeout: 10_000 }).toBeTruthy();
    const pid = Number(/pid-(\d+)-end/.exec(t.state.out)![1]);
    expect(() => process.kill(pid, 0)).not.toThrow();
    await app!.inject({ method: 'POST', url: '/api/auth/logout', headers: { token } });
    await expect.poll(() => t.state.close).toBe(4001);
    await expect
      .poll(() => {
        try {
          process.kill(pid, 0);
          return 'alive';
        } catch {
          return 'gone';
        }
      })
      .toBe('gone');
  });

  it('gives a new shell its own terminal only: no other pty master, pipe or socket', async () => {
    const { base, token } = await start();
    const a = term(`${base}/api/terminal/ws?target=device`, token);
    await expect.poll(() => a.state.frames.length).toBeGreaterThan(1);
    a.input('echo first-$$-end\r');
    await waitFor(a, /first-(\d+)-end/);
    const b = term(`${base}/api/terminal/ws?target=device`, token);
    await expect.poll(() => b.state.frames.length).toBeGreaterThan(1);
    b.input('echo second-$$-$(tty)-end\r');
    const m = await waitFor(b, /second-(\d+)-(\/dev\/pts\/\d+)-end/);
    const [pid, tty] = [Number(m[1]), m[2]!];
    const fds = await readdir(`/proc/${pid}/fd`);
    const links = Object.fromEntries(
      await Promise.all(fds.map(async (fd) => [fd, await readlink(`/proc/${pid}/fd/${fd}`)])),
    ) as Record<string, string>;
    expect(links).toMatchObject({ '0': tty, '1': tty, '2': tty });
    // bash keeps a copy of its terminal (fd 255); anything else is inherited
    for (const [fd, target] of Object.entries(links))
      expect({ fd, target }).toEqual({ fd, target: tty });
  });

  it('ends a shell that ignores SIGHUP and SIGTERM, its job and its child, on logout', async () => {
    const { base, token } = await start();
    const t = term(`${base}/api/terminal/ws?target=device`, token);
    const pids = await stubbornShell(t);
    await app!.inject({ method: 'POST', url: '/api/auth/logout', headers: { token } });
    await expect.poll(() => t.state.close).toBe(4001);
    // SIGHUP, 2 s, SIGTERM, 2 s, SIGKILL
    await expect.poll(() => alive(pids), { timeout: 20_000, interval: 200 }).toEqual([]);
  }, 40_000);

  it('ends the shell and its jobs when another session changes the password', async () => {
    const { base, token } = await start();
    const other = await login(app!, PASSWORD);
    const t = term(`${base}/api/terminal/ws?target=device`, other);
    const pids = await stubbornShell(t);
    const res = await app!.inject({
      method: 'POST',
      url: `/api/init/change_password?user=admin&old_password=${encodeURIComponent(PASSWORD)}&new_password=another-one`,
      headers: { token },
    });
    expect(res.statusCode).toBe(200);
    await expect.poll(() => t.state.close).toBe(4001);
    await expect.poll(() => alive(pids), { timeout: 20_000, interval: 200 }).toEqual([]);
  }, 40_000);

  it('ends the shell when its session expires idle; typing counts as using the session', async () => {
    const clock = new TestClock();
    // only the session sweep's interval is the test's; every timeout stays real
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const { base, token } = await startAuth(clock);
    const lifetime = 43_200_000; // auth.session_expire_s's default
    const t = term(`${base}/api/terminal/ws?target=device`, token);
    await expect.poll(() => t.state.frames.length).toBeGreaterThan(1);
    clock.advance(lifetime * 0.75);
    t.input('echo pid-$$-end\r');
    const pid = Number((await waitFor(t, /pid-(\d+)-end/))[1]);
    strays.push(pid);
    // 1.25 lifetimes after the login, 0.5 after the typing: the session lives on
    clock.advance(lifetime * 0.5);
    vi.advanceTimersByTime(SESSION_SWEEP_MS);
    t.input('echo alive-$((2+3))\r');
    await waitFor(t, /alive-5/);
    expect(t.state.close).toBe(0);
    // idle past its expiry: the sweep ends it without waiting for the token's next use
    clock.advance(lifetime * 10);
    vi.advanceTimersByTime(SESSION_SWEEP_MS);
    await expect.poll(() => t.state.close).toBe(4001);
    expect(t.state.reason).toBe('expired');
    await expect.poll(() => alive([pid]), { timeout: 10_000, interval: 200 }).toEqual([]);
  });

  it('ends the shell when its session is evicted by newer logins', async () => {
    const { base, token } = await startAuth();
    const t = term(`${base}/api/terminal/ws?target=device`, token);
    await expect.poll(() => t.state.frames.length).toBeGreaterThan(1);
    t.input('echo pid-$$-end\r');
    const pid = Number((await waitFor(t, /pid-(\d+)-end/))[1]);
    strays.push(pid);
    for (let i = 0; i < MAX_SESSIONS_PER_USER; i += 1) {
      const res = await app!.inject({
        method: 'POST',
        url: '/api/auth/login',
        ...form({ user: 'admin', passwd: PASSWORD }),
      });
      expect(res.statusCode).toBe(200);
    }
    await expect.poll(() => t.state.close).toBe(4001);
    expect(t.state.reason).toBe('evicted');
    await expect.poll(() => alive([pid]), { timeout: 10_000, interval: 200 }).toEqual([]);
  });

  it('ends a shell that prints nothing within terminal.start_timeout_s, with a message', async () => {
    const pidFile = join(tmpdir(), `kvm-term-${process.pid}-${rand()}.pid`);
    const { base, token } = await start({
      terminal: {
        shell: '/bin/sh',
        // a login profile that hangs
        args: ['-c', `echo $$ > ${pidFile}; exec sleep 1000`],
        start_timeout_s: 1,
      },
    });
    const t = term(`${base}/api/terminal/ws?target=device`, token);
    await expect.poll(() => t.state.close, { timeout: 15_000 }).toBe(1000);
    expect(t.state.out).toContain('The shell printed nothing for 1 s and was ended');
    expect(t.state.reason).toBe('start timeout 1');
    const pid = Number(await readFile(pidFile, 'utf8'));
    await rm(pidFile, { force: true });
    strays.push(pid);
    await expect.poll(() => alive([pid]), { timeout: 10_000, interval: 200 }).toEqual([]);
  }, 30_000);

  it('closes a socket whose input frame is over 64 KiB', async () => {
    const { base, token } = await start();
    const t = term(`${base}/api/terminal/ws`, token);
    await expect.poll(() => t.state.frames.length).toBeGreaterThan(1);
    t.ws.send(Buffer.alloc(64 * 1024 + 1, 0x30));
    await expect.poll(() => t.state.close).toBe(1009);
  });

  it('pauses the shell while the client does not read, and goes on when it does', async () => {
    const { base, token } = await start();
    const t = term(`${base}/api/terminal/ws`, token);
    await expect.poll(() => t.state.frames.length).toBeGreaterThan(1);
    const raw = (t.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
    raw.pause();
    // ~200 MB of output if nothing stopped it
    t.input('yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 200000000; echo done-$((40+2))\r');
    let max = 0;
    const deadline = Date.now() + 2_000;
    while (Date.now() < deadline) {
      max = Math.max(max, app!.sockets.heldBytes('terminal'));
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(max).toBeGreaterThan(0);
    // paused at 256 KiB: what is held stays far under the socket's 4 MiB bound
    expect(max).toBeLessThan(2 * 1024 * 1024);
    expect(t.state.close).toBe(0);
    raw.resume();
    t.state.out = '';
    const got = () => t.state.out.length;
    await expect.poll(got, { timeout: 10_000 }).toBeGreaterThan(1024 * 1024);
  }, 30_000);

  it('says so on the testbed, which has no serial line', async () => {
    const { base, token } = await start();
    const t = term(`${base}/api/terminal/ws?target=serial`, token);
    await expect.poll(() => t.state.out).toContain('no serial line');
    await expect.poll(() => t.state.close).toBe(1000);
  });
});

describe('the device-wide bound', () => {
  it('refuses a terminal over it with 429, before the upgrade', async () => {
    app = Fastify();
    await app.register(fastifyWebsocket);
    const service = new TerminalService({
      serial: new NoSerialConsole('none'),
      log: SILENT_LOGGER,
      total: 2,
    });
    terminalRoutes(app, service, new SocketRegistry(SILENT_LOGGER));
    await app.listen({ host: '127.0.0.1', port: 0 });
    const addr = app.server.address();
    if (!addr || typeof addr === 'string') throw new Error('no address');
    const base = `ws://127.0.0.1:${addr.port}`;
    const two = [1, 2].map(() => term(`${base}/api/terminal/ws`, null));
    for (const t of two) await expect.poll(() => t.state.frames.length).toBeGreaterThan(1);
    expect(service.count).toBe(2);
    const third = term(`${base}/api/terminal/ws`, null);
    await expect.poll(() => third.state.status).toBe(429);
  });
});

describe('UnixSocketSerial', () => {
  let server: Server | null = null;
  let sockDir: string | null = null;
  afterEach(async () => {
    await new Promise((r) => (server ? server.close(r) : r(null)));
    server = null;
    if (sockDir) await rm(sockDir, { recursive: true, force: true });
  });

  it('carries bytes both ways, one terminal at a time', async () => {
    sockDir = await tempDataDir();
    const path = join(sockDir, 'serial.sock');
    const peers: Socket[] = [];
    let got = '';
    server = createServer((s) => {
      peers.push(s);
      s.on('data', (d) => (got += d.toString()));
    });
    await new Promise<void>((r) => server!.listen(path, r));
    const serial = new UnixSocketSerial(path);
    const line = await serial.open();
    if (typeof line === 'string') throw new Error(line);
    let out = '';
    line.onData((d) => (out += d.toString()));
    line.write(Buffer.from('root\r'));
    await expect.poll(() => got).toBe('root\r');
    await expect.poll(() => peers.length).toBe(1);
    peers[0]!.write('login: ');
    await expect.poll(() => out).toBe('login: ');
    expect(await serial.open()).toMatch(/in use/);
    line.kill();
    const again = await serial.open();
    expect(typeof again).toBe('object');
    if (typeof again !== 'string') again.kill();
    for (const p of peers) p.destroy();
  });

  it('closes and releases the line when the credentials of its socket end', async () => {
    sockDir = await tempDataDir();
    const path = join(sockDir, 'serial.sock');
    const peers: Socket[] = [];
    const peerClosed: boolean[] = [];
    server = createServer((s) => {
      const i = peers.push(s) - 1;
      peerClosed[i] = false;
      s.on('close', () => (peerClosed[i] = true));
      s.on('error', () => undefined);
    });
    await new Promise<void>((r) => server!.listen(path, r));
    app = Fastify();
    await app.register(fastifyWebsocket);
    const registry = new SocketRegistry(SILENT_LOGGER);
    const serial = new UnixSocketSerial(path);
    terminalRoutes(app, new TerminalService({ serial, log: SILENT_LOGGER }), registry);
    await app.listen({ host: '127.0.0.1', port: 0 });
    const addr = app.server.address();
    if (!addr || typeof addr === 'string') throw new Error('no address');
    const t = term(`ws://127.0.0.1:${addr.port}/api/terminal/ws?target=serial`, null);
    await expect.poll(() => peers.length).toBe(1);
    // what a password change does to sockets opened with header credentials
    registry.endHeaderAuthenticated('credentials changed');
    await expect.poll(() => t.state.close).toBe(4001);
    await expect.poll(() => peerClosed[0]).toBe(true);
    const again = await serial.open();
    expect(typeof again).toBe('object');
    if (typeof again !== 'string') await again.kill();
    for (const p of peers) p.destroy();
  });

  it('reports a missing socket', async () => {
    expect(await new UnixSocketSerial('/nonexistent/serial.sock').open()).toMatch(/not available/);
  });
});

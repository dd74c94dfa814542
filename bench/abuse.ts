/**
 * `npm run bench -- abuse [--fuzz-minutes N] [--flood-seconds S] [--only login,lockout,...]`: the
 * each against a fresh real server (`server/dist/main.js`, testbed, plain HTTP) on loopback:
 * - login_flood_admin_p95_ms: p95 of a logged-in admin's GET /api/auth/check (Token header),
 *   one sample started every 50 ms (overlapping, so a stalled server yields many slow samples),
 *   while 200 wrong logins arrive at once from 20 loopback addresses (127.0.0.2-21, 10 each: the
 *   lockout is per address, so this is the worst case for the global hash bound). The same
 *   figure with all 200 from one address is `login_flood_one_source_admin_p95_ms`.
 * - lockout_attempts_in_burst: of 60 concurrent wrong logins from one address (max_failures at
 *   its default 10), the password verifications that actually ran, counted in an in-process
 *   app (real scrypt, real HTTP on loopback); the answers are reported beside it.
 *   lockout_holds_after_burst: the right password from that address right after is refused.
 * - pingflood_rss_growth_mb: a client that stops reading its TCP socket and sends pings as fast
 *   as it can for S s (30) on /api/ws?stream=0, /api/media/ws and /janus/ws (a fresh server each); the
 *   server's VmRSS growth from before to the largest seen during and 5 s after. The figure is
 *   the max of the three; per-socket fields too.
 * - slowloris_admin_ok: 1,100 half-open connections (a partial request, never finished) from
 *   127.0.0.2, then GET /api/auth/check from 127.0.0.1 answered 200 within 5 s.
 * - fuzz_frames_per_crash: the long fuzz run (server/src/fuzz/long-run.ts) for N minutes (10):
 *   frames ÷ crashes; with no crash it is the frame count (a lower bound) and
 *   fuzz_crashes is 0.
 * Every exit path stops the child and removes its folder. Traffic goes to 127.0.0.0/8 only.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { REPO_ROOT, ServerProcess } from '../e2e/fixtures/server';
import { buildTestApp } from '../server/src/test-helpers';
import { runLong } from '../server/src/fuzz/long-run';
import { randomSeed } from '../server/src/fuzz/prng';
import { CountingHasher, newAuthApp } from '../server/src/services/auth/auth-test-kit';
import { note, round } from './lib';

const PASSWORD = 'bench password';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  return Number.isFinite(v) && v >= 0 ? v : fallback;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Answer {
  status: number;
  body: string;
  ms: number;
}

function http(
  port: number,
  method: string,
  path: string,
  opts: {
    headers?: Record<string, string>;
    body?: string;
    localAddress?: string;
    timeoutMs?: number;
  } = {},
): Promise<Answer> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        agent: false,
        localAddress: opts.localAddress ?? '127.0.0.1',
        headers: {
          ...(opts.body !== undefined
            ? { 'content-type': 'application/x-www-form-urlencoded' }
            : {}),
          ...opts.headers,
        },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body, ms: performance.now() - t0 }),
        );
        res.on('error', () => resolve({ status: 0, body, ms: performance.now() - t0 }));
      },
    );
    req.setTimeout(opts.timeoutMs ?? 60_000, () => req.destroy());
    req.on('error', () => resolve({ status: 0, body: '', ms: performance.now() - t0 }));
    req.end(opts.body);
  });
}

/** A fresh real server (the e2e fixture's process), initialised, with /proc reads. */
class Server {
  private constructor(readonly process: ServerProcess) {}

  get port(): number {
    return this.process.port;
  }

  static async start(): Promise<Server> {
    // Wake-on-LAN aimed at loopback, in case the fuzz or a flood ever sends one.
    const s = new Server(
      await ServerProcess.start({ config: 'wol:\n  network: host\n  address: 127.0.0.1\n' }),
    );
    servers.add(s);
    const init = await http(
      s.port,
      'GET',
      `/api/init/init?password=${encodeURIComponent(PASSWORD)}`,
    );
    if (init.status !== 200) throw new Error(`init: ${init.status} ${init.body}`);
    return s;
  }

  async login(localAddress = '127.0.0.1'): Promise<string> {
    const res = await http(this.port, 'POST', '/api/auth/login', {
      body: new URLSearchParams({ user: 'admin', passwd: PASSWORD }).toString(),
      localAddress,
    });
    if (res.status !== 200) throw new Error(`login: ${res.status} ${res.body}`);
    return (JSON.parse(res.body) as { result: { token: string } }).result.token;
  }

  async rssMb(): Promise<number> {
    try {
      const status = await readFile(`/proc/${this.process.pid}/status`, 'utf8');
      return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
    } catch {
      return 0;
    }
  }

  async nofile(): Promise<number> {
    try {
      const limits = await readFile(`/proc/${this.process.pid}/limits`, 'utf8');
      return Number(/Max open files\s+(\d+)/.exec(limits)?.[1] ?? 0);
    } catch {
      return 0;
    }
  }

  async stop(): Promise<void> {
    await this.process.dispose();
    servers.delete(this);
  }
}

const servers = new Set<Server>();
async function withServer<T>(fn: (s: Server) => Promise<T>): Promise<T> {
  const s = await Server.start();
  try {
    return await fn(s);
  } finally {
    await s.stop();
  }
}

function p95(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(s.length * 0.95) - 1)] ?? 0;
}

function countStatuses(answers: Answer[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const a of answers) {
    let name = '';
    try {
      name = String((JSON.parse(a.body) as { result?: { error?: unknown } }).result?.error ?? '');
    } catch {
      // no JSON body (a reset connection is status 0)
    }
    const key = name ? `${a.status} ${name}` : String(a.status);
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}

async function loginFlood(sources: number): Promise<Record<string, unknown>> {
  return withServer(async (s) => {
    const token = await s.login();
    const samples: number[] = [];
    const sampling: Promise<void>[] = [];
    let flooding = true;
    const sampler = (async () => {
      while (flooding) {
        sampling.push(
          http(s.port, 'GET', '/api/auth/check', { headers: { token } }).then((a) => {
            samples.push(a.status === 200 ? a.ms : Number.POSITIVE_INFINITY);
          }),
        );
        await sleep(50);
      }
    })();
    await sleep(100);
    const t0 = performance.now();
    const wrong = new URLSearchParams({ user: 'admin', passwd: 'wrong password' }).toString();
    const logins = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        http(s.port, 'POST', '/api/auth/login', {
          body: wrong,
          localAddress: `127.0.0.${2 + (i % sources)}`,
        }),
      ),
    );
    const floodMs = performance.now() - t0;
    flooding = false;
    await sampler;
    await Promise.all(sampling);
    const failed = samples.filter((v) => !Number.isFinite(v)).length;
    return {
      p95: round(p95(samples.map((v) => (Number.isFinite(v) ? v : 60_000)))),
      samples: samples.length,
      failed,
      floodMs: round(floodMs),
      statuses: countStatuses(logins),
    };
  });
}

/**
 * 60 wrong logins at once from one address. The figure is the number of password verifications
 * that actually ran: counted inside an in-process app (real scrypt behind a counting wrapper,
 * real HTTP on loopback), since from outside a checked-and-wrong attempt that starts the lock
 * answers 429 like an unchecked one. The answers are reported too.
 */
async function lockout(): Promise<Record<string, unknown>> {
  const hasher = new CountingHasher();
  const dataDir = await mkdtemp(join(tmpdir(), 'kvm-bench-lockout-'));
  const app = await newAuthApp({ dataDir, passwords: hasher });
  try {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    if (!address || typeof address === 'string') throw new Error('no address');
    const port = address.port;
    const init = await http(port, 'GET', `/api/init/init?password=${encodeURIComponent(PASSWORD)}`);
    if (init.status !== 200) throw new Error(`init failed: ${init.status} ${init.body}`);
    const from = '127.0.0.50';
    const before = hasher.verifications;
    const wrong = new URLSearchParams({ user: 'admin', passwd: 'wrong password' }).toString();
    const burst = await Promise.all(
      Array.from({ length: 60 }, () =>
        http(port, 'POST', '/api/auth/login', { body: wrong, localAddress: from }),
      ),
    );
    const checked = hasher.verifications - before;
    const right = await http(port, 'POST', '/api/auth/login', {
      body: new URLSearchParams({ user: 'admin', passwd: PASSWORD }).toString(),
      localAddress: from,
    });
    return { checked, statuses: countStatuses(burst), rightStatus: right.status };
  } finally {
    await app.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

type SocketKind = 'ws' | 'media' | 'janus';
const PATHS: Record<SocketKind, string> = {
  ws: '/api/ws',
  media: '/api/media/ws',
  janus: '/janus/ws',
};

/**
 * `/api/ws` defaults to `stream=1`, which keeps the encoder warm: the testbed's 720p frames
 * alone swing the server's RSS by about 25 MB (garbage-collected frame buffers), flood or not.
 * The figure asks what the pings cost, so it floods a `stream=0` socket; `withVideo` floods a
 * `stream=1` one and is reported beside it (`pingflood_ws_with_video`).
 */
async function pingFlood(
  kind: SocketKind,
  seconds: number,
  withVideo = false,
): Promise<Record<string, unknown>> {
  return withServer(async (s) => {
    const token = await s.login();
    const query = kind === 'ws' ? `?stream=${withVideo ? 1 : 0}` : '';
    const ws = new WebSocket(
      `ws://127.0.0.1:${s.port}${PATHS[kind]}${query}`,
      kind === 'janus' ? 'janus-protocol' : [],
      { headers: { cookie: `auth_token=${token}` } },
    );
    let closedAt: number | null = null;
    ws.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    await sleep(1000);
    const before = await s.rssMb();
    let max = before;
    const t0 = performance.now();
    ws.on('close', () => (closedAt ??= performance.now() - t0));
    // Stop reading: what the server sends piles up in its own buffers.
    (ws as unknown as { _socket: Socket })._socket.pause();
    const pings: Array<string | Buffer> =
      kind === 'ws'
        ? [Buffer.from([0x00]), JSON.stringify({ event_type: 'ping', event: {} })]
        : kind === 'media'
          ? [Buffer.from([0x00])]
          : [JSON.stringify({ janus: 'ping', transaction: 'p' })];
    let sent = 0;
    const end = t0 + seconds * 1000;
    let lastSample = 0;
    while (performance.now() < end && ws.readyState === WebSocket.OPEN) {
      // As fast as the kernel takes them, without growing our own buffer without bound.
      if (ws.bufferedAmount < 1024 * 1024) {
        for (let i = 0; i < 500; i += 1) {
          const p = pings[sent % pings.length]!;
          ws.send(p, { binary: typeof p !== 'string' });
          sent += 1;
        }
      }
      await new Promise((r) => setImmediate(r));
      if (performance.now() - lastSample > 250) {
        lastSample = performance.now();
        max = Math.max(max, await s.rssMb());
      }
    }
    const closedDuring = closedAt !== null || ws.readyState !== WebSocket.OPEN;
    ws.terminate();
    for (let i = 0; i < 20; i += 1) {
      await sleep(250);
      max = Math.max(max, await s.rssMb());
    }
    const after = await s.rssMb();
    return {
      growth: round(max - before),
      before: round(before),
      max: round(max),
      after: round(after),
      sent,
      closedBySecond: closedDuring ? round((closedAt ?? performance.now() - t0) / 1000) : null,
    };
  });
}

async function slowloris(): Promise<Record<string, unknown>> {
  return withServer(async (s) => {
    const token = await s.login();
    const sockets: Socket[] = [];
    const closedAt: number[] = [];
    let refused = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from(
        { length: 1100 },
        () =>
          new Promise<void>((resolve) => {
            const sock = connect({ host: '127.0.0.1', port: s.port, localAddress: '127.0.0.2' });
            sockets.push(sock);
            sock.on('error', () => undefined);
            // Read what the server answers (its 408 and end): a socket that never reads never
            // sees the end either, and would count as open after the server has closed it.
            sock.on('data', () => undefined);
            sock.once('connect', () => {
              sock.write(`GET /api/auth/check HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: `);
              resolve();
            });
            sock.once('close', () => {
              closedAt.push((performance.now() - t0) / 1000);
              resolve();
            });
            sock.once('error', () => {
              refused += 1;
            });
          }),
      ),
    );
    const admin = await http(s.port, 'GET', '/api/auth/check', {
      headers: { token },
      timeoutMs: 5_000,
    });
    // How many the server closes, and when (watch 30 s).
    await sleep(30_000);
    const open = sockets.filter((k) => !k.destroyed).length;
    for (const k of sockets) k.destroy();
    const sorted = [...closedAt].sort((a, b) => a - b);
    return {
      ok: admin.status === 200 && admin.ms <= 5_000,
      adminStatus: admin.status,
      adminMs: round(admin.ms),
      closed: closedAt.length,
      refused,
      stillOpen: open,
      firstCloseS: sorted.length ? round(sorted[0]!) : null,
      medianCloseS: sorted.length ? round(sorted[Math.floor(sorted.length / 2)]!) : null,
      lastCloseS: sorted.length ? round(sorted[sorted.length - 1]!) : null,
      serverNofile: await s.nofile(),
    };
  });
}

async function routeTable() {
  const dir = await mkdtemp(join(tmpdir(), 'kvm-bench-routes-'));
  try {
    const app = await buildTestApp(dir);
    await app.ready();
    const routes = [...app.routeTable];
    await app.close();
    return routes;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function cleanup(): Promise<void> {
  for (const s of [...servers]) await s.stop().catch(() => undefined);
}
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    void cleanup().finally(() => process.exit(130));
  });
}

/** `--only login,lockout,pingflood,slowloris,fuzz`: a part of the run (default: all). */
const onlyAt = process.argv.indexOf('--only');
const only = onlyAt >= 0 ? new Set((process.argv[onlyAt + 1] ?? '').split(',')) : null;
const want = (part: string): boolean => only === null || only.has(part);

try {
  const floodSeconds = arg('flood-seconds', 30);
  const fuzzMinutes = want('fuzz') ? arg('fuzz-minutes', 10) : 0;
  let flood: Record<string, unknown> = {};
  let flood1: Record<string, unknown> = {};
  if (want('login')) {
    note('abuse: login flood, 20 sources');
    flood = await loginFlood(20);
    note(`  ${JSON.stringify(flood)}`);
    note('abuse: login flood, one source');
    flood1 = await loginFlood(1);
    note(`  ${JSON.stringify(flood1)}`);
  }
  let lock: Record<string, unknown> = {};
  if (want('lockout')) {
    note('abuse: lockout burst');
    lock = await lockout();
    note(`  ${JSON.stringify(lock)}`);
  }
  const pf: Partial<Record<SocketKind, Record<string, unknown>>> = {};
  let pfVideo: Record<string, unknown> | undefined;
  if (want('pingflood')) {
    for (const kind of ['ws', 'media', 'janus'] as const) {
      note(`abuse: ping flood ${PATHS[kind]} ${floodSeconds} s`);
      pf[kind] = await pingFlood(kind, floodSeconds);
      note(`  ${JSON.stringify(pf[kind])}`);
    }
    note(`abuse: ping flood /api/ws?stream=1 (the encoder warm too) ${floodSeconds} s`);
    pfVideo = await pingFlood('ws', floodSeconds, true);
    note(`  ${JSON.stringify(pfVideo)}`);
  }
  let slow: Record<string, unknown> = {};
  if (want('slowloris')) {
    note('abuse: slowloris 1,100');
    slow = await slowloris();
    note(`  ${JSON.stringify(slow)}`);
  }
  const seed = randomSeed();
  if (fuzzMinutes > 0) note(`abuse: fuzz ${fuzzMinutes} min, seed ${seed}`);
  const fuzz =
    fuzzMinutes > 0
      ? await runLong({
          repoRoot: REPO_ROOT,
          routes: await routeTable(),
          seconds: fuzzMinutes * 60,
          seed,
          log: note,
        })
      : null;
  for (const f of fuzz?.findings ?? [])
    note(`  finding: [${f.kind}] ${f.where}: ${f.detail} (x${f.count})`);
  const growth = (k: SocketKind): number => Number(pf[k]?.['growth'] ?? 0);
  process.stdout.write(
    `${JSON.stringify({
      login_flood_admin_p95_ms: flood['p95'],
      login_flood_admin_samples: flood['samples'],
      login_flood_admin_failed: flood['failed'],
      login_flood_sources: want('login') ? 20 : undefined,
      login_flood_ms: flood['floodMs'],
      login_flood_statuses: flood['statuses'],
      login_flood_one_source_admin_p95_ms: flood1['p95'],
      login_flood_one_source_statuses: flood1['statuses'],
      lockout_attempts_in_burst: lock['checked'],
      lockout_burst_statuses: lock['statuses'],
      lockout_holds_after_burst: want('lockout') ? lock['rightStatus'] !== 200 : undefined,
      lockout_right_password_status: lock['rightStatus'],
      pingflood_rss_growth_mb: want('pingflood')
        ? Math.max(growth('ws'), growth('media'), growth('janus'))
        : undefined,
      pingflood_seconds: want('pingflood') ? floodSeconds : undefined,
      pingflood_ws: pf['ws'],
      pingflood_media: pf['media'],
      pingflood_janus: pf['janus'],
      pingflood_ws_with_video: pfVideo,
      slowloris_admin_ok: slow['ok'],
      slowloris: slow,
      fuzz_minutes: want('fuzz') ? fuzzMinutes : undefined,
      fuzz_seed: fuzz ? seed : null,
      fuzz_frames: fuzz?.frames ?? 0,
      fuzz_requests: fuzz?.requests ?? 0,
      fuzz_crashes: fuzz?.crashes ?? 0,
      fuzz_frames_per_crash: fuzz
        ? fuzz.crashes
          ? round(fuzz.frames / fuzz.crashes)
          : fuzz.frames
        : null,
      fuzz_frames_per_crash_is_lower_bound: fuzz ? fuzz.crashes === 0 : null,
      fuzz_findings: fuzz?.findings.length ?? 0,
    })}\n`,
  );
} finally {
  await cleanup();
}
process.exit(0);

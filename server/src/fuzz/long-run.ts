/**
 * The long mode (`npm run fuzz -- --minutes N [--seed S]`): the real built server
 * (`server/dist/main.js`, testbed target, plain HTTP on a loopback port) as a child process,
 * fuzzed over real HTTP and real sockets until the time is up. A child that exits is a crash:
 * it is counted, the inputs sent just before it and the tail of its output are kept, and the
 * child is started again on the same data folder. Ends with one JSON line on stdout:
 * `{"seed","frames","requests","crashes","seconds","findings":[...]}`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FrameGenerator, HttpGenerator, type RouteSpec } from './generator';
import { authCheck, describeRequest, loginToken, runHttp, type Credentials } from './http-runner';
import { Findings, type Finding } from './oracle';
import { Prng } from './prng';
import { rawTransport } from './raw-transport';
import { describeFrame, ServerGone, SocketFuzzer } from './socket-runner';

export interface LongRunOptions {
  repoRoot: string;
  routes: readonly RouteSpec[];
  seconds: number;
  seed: number;
  log?: (msg: string) => void;
}

export interface LongRunResult {
  seed: number;
  frames: number;
  requests: number;
  crashes: number;
  seconds: number;
  /** Server RSS, MB: the largest seen (sampled between batches). */
  max_rss_mb: number;
  findings: Finding[];
}

const PASSWORD = 'fuzz password';
const RSS_FINDING_MB = 1024;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

class Child {
  proc: ChildProcess | null = null;
  output = '';
  exited: { code: number | null; signal: string | null } | null = null;

  constructor(
    private readonly repoRoot: string,
    readonly dataDir: string,
    readonly port: number,
  ) {}

  async start(): Promise<void> {
    const config = join(this.dataDir, 'fuzz-config.yaml');
    // Loopback only: no public STUN, Wake-on-LAN packets to 127.0.0.1.
    await writeFile(
      config,
      'webrtc:\n  stun_url: null\nwol:\n  network: host\n  address: 127.0.0.1\n',
    );
    this.output = '';
    this.exited = null;
    const proc = spawn(
      process.execPath,
      [
        join(this.repoRoot, 'server/dist/main.js'),
        '--target',
        'testbed',
        '--no-tls',
        '--listen',
        `127.0.0.1:${this.port}`,
        '--data',
        join(this.dataDir, 'data'),
        '--config',
        config,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.proc = proc;
    const keep = (c: Buffer): void => {
      this.output = (this.output + c.toString()).slice(-8000);
    };
    proc.stdout?.on('data', keep);
    proc.stderr?.on('data', keep);
    proc.on('exit', (code, signal) => {
      this.exited = { code, signal };
    });
    const deadline = performance.now() + 30_000;
    while (!this.output.includes(' ready in ')) {
      if (this.exited) throw new Error(`server exited at start:\n${this.output}`);
      if (performance.now() > deadline) throw new Error(`server did not start:\n${this.output}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  get alive(): boolean {
    return this.proc !== null && this.exited === null;
  }

  async rssMb(): Promise<number> {
    if (!this.proc?.pid || !this.alive) return 0;
    try {
      const status = await readFile(`/proc/${this.proc.pid}/status`, 'utf8');
      return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
    } catch {
      return 0;
    }
  }

  async stop(): Promise<void> {
    const proc = this.proc;
    if (!proc || !this.alive) return;
    await new Promise<void>((done) => {
      proc.once('exit', () => done());
      proc.kill('SIGTERM');
      setTimeout(() => proc.kill('SIGKILL'), 5_000).unref();
    });
  }
}

/** Initialises the device on first start, then logs in. */
async function session(port: number, prng: Prng): Promise<Credentials> {
  const transport = rawTransport(port, prng);
  const init = await transport.send({
    method: 'GET',
    url: `/api/init/init?password=${encodeURIComponent(PASSWORD)}`,
    headers: {},
    body: null,
    lengthLie: null,
    source: 'admin',
    timeoutMs: 10_000,
  });
  if (init.status !== 200 && init.status !== 403) throw new Error(`init: ${init.status}`);
  return { token: await loginToken(transport, PASSWORD, 10_000), password: PASSWORD };
}

/** The run's session still works, or a new one once the server answers again. */
async function ensureSession(child: Child, creds: Credentials, prng: Prng): Promise<Credentials> {
  const deadline = performance.now() + 60_000;
  for (;;) {
    try {
      if ((await authCheck(rawTransport(child.port, prng), creds.token, 10_000)) === 200)
        return creds;
      return await session(child.port, prng);
    } catch (err) {
      if (!child.alive || performance.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

export async function runLong(opts: LongRunOptions): Promise<LongRunResult> {
  const log = opts.log ?? ((m: string) => process.stderr.write(`${m}\n`));
  const started = performance.now();
  const deadline = started + opts.seconds * 1000;
  const root = await mkdtemp(join(tmpdir(), 'kvm-fuzz-'));
  const child = new Child(opts.repoRoot, root, await freePort());
  const findings = new Findings();
  const prng = new Prng(opts.seed);
  const httpGen = new HttpGenerator(prng.fork(), opts.routes, { restartRarely: true });
  const frameGen = new FrameGenerator(prng.fork());
  const transportPrng = prng.fork();
  const recent: string[] = [];
  const remember = (what: string): void => {
    recent.push(what);
    if (recent.length > 8) recent.shift();
  };
  let requests = 0;
  let frames = 0;
  let crashes = 0;
  let maxRss = 0;
  const onExit = (): void => {
    child.proc?.kill('SIGKILL');
  };
  process.once('exit', onExit);
  try {
    await child.start();
    let creds = await session(child.port, transportPrng);
    let sockets: SocketFuzzer | null = null;
    const newSockets = (): SocketFuzzer =>
      new SocketFuzzer({
        base: `ws://127.0.0.1:${child.port}`,
        token: () => creds.token,
        findings,
        probeTimeoutMs: 10_000,
        onSend: (f) => remember(describeFrame(f)),
      });
    let lastReport = started;
    while (performance.now() < deadline) {
      // A batch of requests, then a batch of frames; the child is checked between them.
      const stats = await runHttp({
        gen: httpGen,
        transport: rawTransport(child.port, transportPrng),
        creds,
        findings,
        count: 200,
        deadline,
        concurrency: 4,
        timeoutMs: 10_000,
        onSend: (req) => remember(describeRequest(req)),
        stop: () => !child.alive,
      });
      requests += stats.requests;
      if (child.alive && performance.now() < deadline) {
        sockets ??= newSockets();
        try {
          for (let i = 0; i < 500 && child.alive && performance.now() < deadline; i += 1) {
            await sockets.send(frameGen.next(sockets.janusIds));
          }
        } catch (err) {
          if (!(err instanceof ServerGone) && child.alive)
            log(`fuzz: socket run: ${(err as Error).stack ?? String(err)}`);
        }
        frames += sockets.stats.frames;
        sockets.close();
        sockets = null;
      }
      const rss = await child.rssMb();
      maxRss = Math.max(maxRss, rss);
      if (rss > RSS_FINDING_MB)
        findings.add('memory', 'server', `RSS over ${RSS_FINDING_MB} MB`, `${Math.round(rss)} MB`);
      // Let a dying child finish dying before judging it alive.
      await new Promise((r) => setTimeout(r, 20));
      if (child.alive) {
        try {
          // set_enabled restarts the server in place: wait for it to answer again.
          creds = await ensureSession(child, creds, transportPrng);
        } catch (err) {
          if (child.alive) throw err;
        }
      }
      if (!child.alive) {
        crashes += 1;
        const firstError =
          /^\s*(\w*Error[^\n]*)/m.exec(child.output)?.[1] ?? `exit ${JSON.stringify(child.exited)}`;
        findings.add(
          'crash',
          'server',
          firstError,
          `last inputs: ${recent.join(' | ')}\noutput tail: ${child.output.slice(-1500)}`,
        );
        log(`fuzz: CRASH ${crashes}: ${firstError}`);
        await child.start();
        creds = await ensureSession(child, creds, transportPrng);
      }
      if (performance.now() - lastReport > 30_000) {
        lastReport = performance.now();
        log(
          `fuzz: ${Math.round((performance.now() - started) / 1000)} s, ${requests} requests, ${frames} frames, ${crashes} crashes, ${findings.size} findings, rss ${Math.round(rss)} MB`,
        );
      }
    }
  } finally {
    process.off('exit', onExit);
    await child.stop();
    await rm(root, { recursive: true, force: true });
  }
  return {
    seed: opts.seed,
    frames,
    requests,
    crashes,
    seconds: Math.round((performance.now() - started) / 1000),
    max_rss_mb: Math.round(maxRss),
    findings: findings.list(),
  };
}

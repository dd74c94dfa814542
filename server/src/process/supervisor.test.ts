import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { IllegalTransitionError } from '@kvm/protocol/transitions';
import {
  findSetpriv,
  MAX_LINE_CHARS,
  readProcArgv,
  Supervisor,
  SUPERVISOR_TRANSITIONS,
  type SupervisorState,
  waitForExit,
} from './supervisor';

let dir: string;
const supervisors: Supervisor[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kvm-supervisor-'));
});
afterEach(async () => {
  await Promise.all(supervisors.splice(0).map((s) => s.ensureStopped()));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function supervise(opts: ConstructorParameters<typeof Supervisor>[0]): Supervisor {
  const s = new Supervisor(opts);
  supervisors.push(s);
  return s;
}

async function until<T>(
  what: string,
  fn: () => T | Promise<T>,
  timeoutMs = 5000,
): Promise<NonNullable<T>> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value) return value as NonNullable<T>;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const alive = async (pid: number): Promise<boolean> => (await readProcArgv(pid)) !== null;

describe('Supervisor', () => {
  it('starts and stops idempotently', async () => {
    const s = supervise({ name: 'sleep', command: 'sleep', args: ['30'] });
    const events: string[] = [];
    s.on('started', () => events.push('started'));
    s.on('exited', (e) => events.push(`exited expected=${e.expected} signal=${e.signal}`));
    await Promise.all([s.ensureStarted(), s.ensureStarted()]);
    await s.ensureStarted();
    const pid = s.pid as number;
    expect(s.state).toBe('running');
    // setpriv execs sleep: the same pid, once exec has happened.
    await until('exec', async () => (await readProcArgv(pid))?.[0] === 'sleep');
    await Promise.all([s.ensureStopped(), s.ensureStopped()]);
    expect(s.state).toBe('stopped');
    expect(s.pid).toBeNull();
    expect(await waitForExit(pid, 2000)).toBe(true);
    expect(events).toEqual(['started', 'exited expected=true signal=SIGTERM']);
  });

  it('restarts with exponential backoff, and not after ensureStopped', async () => {
    const s = supervise({
      name: 'fail',
      command: 'sh',
      args: ['-c', 'exit 3'],
      backoff: { initialMs: 40, maxMs: 160, healthyMs: 60_000 },
    });
    const delays: number[] = [];
    const codes: Array<number | null> = [];
    s.on('restarting', (ms) => delays.push(ms));
    s.on('exited', (e) => codes.push(e.code));
    await s.ensureStarted();
    await until('five restarts', () => delays.length >= 5);
    expect(delays.slice(0, 5)).toEqual([40, 80, 160, 160, 160]);
    expect(codes.every((c) => c === 3)).toBe(true);
    await s.ensureStopped();
    expect(s.state).toBe('stopped');
    const starts = codes.length;
    // Longer than the longest backoff: a pending restart would have fired by now.
    await new Promise((r) => setTimeout(r, 400));
    expect(codes.length).toBe(starts);
    expect(s.state).toBe('stopped');
  });

  it('restarts a child that was killed', async () => {
    const s = supervise({
      name: 'sleep',
      command: 'sleep',
      args: ['30'],
      backoff: { initialMs: 20 },
    });
    const pids: number[] = [];
    s.on('started', (pid) => pids.push(pid));
    await s.ensureStarted();
    process.kill(pids[0] as number, 'SIGKILL');
    await until('a second start', () => pids.length === 2);
    expect(s.state).toBe('running');
    expect(await alive(pids[1] as number)).toBe(true);
  });

  it('kills with SIGKILL when SIGTERM is ignored', async () => {
    const s = supervise({
      name: 'stubborn',
      command: 'sh',
      args: ['-c', 'trap "" TERM; echo ready; while :; do sleep 1; done'],
      stopTimeoutMs: 200,
    });
    const exits: Array<NodeJS.Signals | null> = [];
    s.on('exited', (e) => exits.push(e.signal));
    await s.ensureStarted();
    await until('the trap', () => s.recentOutput().includes('ready'));
    await s.ensureStopped();
    expect(exits).toEqual(['SIGKILL']);
  });

  it('carries messages and the sockets they hold over an ipc channel, through setpriv', async () => {
    // The child listens on loopback and sends each accepted socket to the parent (the console bridge's way).
    const js = `const net = require('node:net');
const srv = net.createServer({ pauseOnConnect: true }, (c) => process.send({ type: 'conn' }, c));
srv.listen(0, '127.0.0.1', () => process.send({ type: 'listening', port: srv.address().port }));
process.on('disconnect', () => process.exit(0));`;
    const s = supervise({ name: 'ipc', command: process.execPath, args: ['-e', js], ipc: true });
    const messages: { type: string; port?: number }[] = [];
    const handles: unknown[] = [];
    s.on('message', (m, h) => {
      messages.push(m as { type: string; port?: number });
      if (h) handles.push(h);
    });
    await s.ensureStarted();
    // a node start on a loaded machine: seconds
    const port = await until(
      'listening',
      () => messages.find((m) => m.type === 'listening')?.port,
      30_000,
    );
    const { connect, Socket } = await import('node:net');
    const client = connect(port, '127.0.0.1');
    const got = await until('a socket', () => handles[0]);
    expect(got).toBeInstanceOf(Socket);
    // the parent owns it now: it answers on it
    const reply = new Promise<string>((resolve) => client.once('data', (d) => resolve(String(d))));
    (got as InstanceType<typeof Socket>).end('from the parent');
    expect(await reply).toBe('from the parent');
    client.destroy();
  });

  it('rejects a missing command at once', async () => {
    const s = supervise({ name: 'nothing', command: 'no-such-command-kvm' });
    await expect(s.ensureStarted()).rejects.toThrow(/not found/);
    expect(s.state).toBe('stopped');
  });

  it('pipes binary stdin and stdout in data mode', async () => {
    const s = supervise({ name: 'cat', command: 'cat', stdin: 'pipe', stdout: 'data' });
    const chunks: Buffer[] = [];
    const lines: string[] = [];
    s.on('data', (c) => chunks.push(c));
    s.on('output', (l, stream) => lines.push(`${stream}:${l}`));
    await s.ensureStarted();
    const bytes = Buffer.from([0, 1, 2, 0xff, 0x0a, 0x80, 0x0a]);
    s.stdin?.write(bytes);
    await until('the echo', () => Buffer.concat(chunks).length >= bytes.length);
    // bytes as they were: no utf8 decoding, no line splitting
    expect(Buffer.concat(chunks)).toEqual(bytes);
    expect(lines.filter((l) => l.startsWith('stdout:'))).toEqual([]);
  });

  it('survives writing to the stdin of a child that died', async () => {
    const s = supervise({
      name: 'early-exit',
      command: 'sh',
      args: ['-c', 'sleep 0.2; exit 0'],
      stdin: 'pipe',
      backoff: { initialMs: 5_000 },
    });
    await s.ensureStarted();
    // More than the pipe holds, never read: the child's exit makes the pending write fail
    // with EPIPE, an unhandled stream error without the supervisor's handler.
    s.stdin?.write(Buffer.alloc(1 << 20));
    await until('the exit', () => s.state === 'backoff');
    await new Promise((r) => setTimeout(r, 50));
    expect(s.state).toBe('backoff');
  });

  it('kill() counts as an unexpected exit: restarted with backoff', async () => {
    const s = supervise({
      name: 'sleep',
      command: 'sleep',
      args: ['30'],
      backoff: { initialMs: 20 },
    });
    const exits: boolean[] = [];
    const pids: number[] = [];
    s.on('exited', (e) => exits.push(e.expected));
    s.on('started', (pid) => pids.push(pid));
    expect(s.kill()).toBe(false); // nothing runs yet
    await s.ensureStarted();
    expect(s.kill()).toBe(true);
    await until('the restart', () => pids.length === 2 && s.state === 'running');
    expect(exits).toEqual([false]);
    expect(await waitForExit(pids[0] as number, 2000)).toBe(true);
  });

  it('retryFirstSpawn: a missing command is retried with backoff, not rejected', async () => {
    const s = supervise({
      name: 'missing',
      command: 'no-such-command-kvm',
      retryFirstSpawn: true,
      backoff: { initialMs: 20, maxMs: 40 },
    });
    const errors: string[] = [];
    const delays: number[] = [];
    s.on('spawnError', (e) => errors.push(e.message));
    s.on('restarting', (ms) => delays.push(ms));
    await s.ensureStarted();
    expect(['backoff', 'starting']).toContain(s.state);
    await until('three failed spawns', () => errors.length >= 3);
    expect(delays.slice(0, 3)).toEqual([20, 40, 40]);
    await s.ensureStopped();
    expect(s.state).toBe('stopped');
    const count = errors.length;
    await new Promise((r) => setTimeout(r, 150));
    expect(errors.length).toBe(count);
  });

  it('cuts output without newlines into bounded lines as it comes', async () => {
    const s = supervise({
      name: 'noisy',
      command: 'sh',
      args: ['-c', "head -c 1000000 /dev/zero | tr '\\0' x >&2; sleep 30"],
    });
    await s.ensureStarted();
    // the child is still running: the lines were cut on the way, not at the end
    await until('the pieces', () => s.recentOutput().length >= 50);
    expect(s.recentOutput().every((l) => l.length === MAX_LINE_CHARS)).toBe(true);
    expect(s.state).toBe('running');
  });

  it('kills the stale child a pidfile names, and only that', async () => {
    const pidfile = join(dir, 'stale.pid');
    const stale = spawn('sleep', ['300'], { detached: true, stdio: 'ignore' });
    stale.unref();
    const stalePid = stale.pid as number;
    await writeFile(pidfile, `${stalePid}\n`);
    const s = supervise({ name: 'sleep', command: 'sleep', args: ['30'], pidfile });
    await s.ensureStarted();
    expect(await waitForExit(stalePid, 5000)).toBe(true);
    expect(await readFile(pidfile, 'utf8')).toBe(`${s.pid}\n`);
    await s.ensureStopped();
    await until('pidfile removal', () =>
      readFile(pidfile).then(
        () => false,
        () => true,
      ),
    );

    // A recycled pid (here: a live process that is not a `sleep`) is left alone.
    const other = spawn('sh', ['-c', 'sleep 300'], { detached: true, stdio: 'ignore' });
    try {
      await writeFile(pidfile, `${other.pid}\n`);
      await s.ensureStarted();
      expect(await alive(other.pid as number)).toBe(true);
    } finally {
      process.kill(-(other.pid as number), 'SIGKILL'); // sh and its sleep
    }
  });

  it.skipIf(!findSetpriv())('never leaves an orphan when node is SIGKILLed', async () => {
    // A real node parent running the supervisor (bundled, as node cannot import TypeScript).
    const bundle = join(dir, 'supervisor.mjs');
    await build({
      entryPoints: [join(import.meta.dirname, 'supervisor.ts')],
      bundle: true,
      platform: 'node',
      format: 'esm',
      outfile: bundle,
      logLevel: 'silent',
    });
    const script = join(dir, 'parent.mjs');
    await writeFile(
      script,
      `import { Supervisor } from ${JSON.stringify(bundle)};
       const s = new Supervisor({ name: 'sleep', command: 'sleep', args: ['300'] });
       await s.ensureStarted();
       console.log(s.pid);
       setInterval(() => {}, 1000);`,
    );
    const parent = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    parent.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const childPid = await until('the child pid', () => Number.parseInt(out, 10) || 0, 10_000);
    await until('exec', async () => (await readProcArgv(childPid))?.[0] === 'sleep');
    parent.kill('SIGKILL');
    expect(await waitForExit(childPid, 5000)).toBe(true);
  });

  describe('state machine', () => {
    it('refuses a state change outside its table: it throws under the tests', () => {
      const s = supervise({ name: 'sleep', command: 'sleep', args: ['30'] });
      const setState = (to: SupervisorState): void =>
        (s as unknown as { setState(to: SupervisorState): void }).setState(to);
      expect(() => setState('running')).toThrow(IllegalTransitionError);
      expect(() => setState('running')).toThrow(
        'supervisor sleep: illegal state transition stopped -> running',
      );
      expect(s.state).toBe('stopped');
    });

    it('an ensureStarted during stopping restarts the child through backoff', async () => {
      const s = supervise({
        name: 'sleep',
        command: 'sleep',
        args: ['30'],
        backoff: { initialMs: 10 },
      });
      const states: SupervisorState[] = [];
      s.on('state', (st) => states.push(st));
      await s.ensureStarted();
      const first = s.pid as number;
      const stopped = s.ensureStopped();
      expect(s.state).toBe('stopping');
      await s.ensureStarted();
      await stopped;
      await until('restarted', () => s.state === 'running' && s.pid !== first);
      expect(states).toEqual(['starting', 'running', 'stopping', 'backoff', 'starting', 'running']);
      let from: SupervisorState = 'stopped';
      for (const to of states) {
        expect(SUPERVISOR_TRANSITIONS[from]).toContain(to);
        from = to;
      }
    });
  });
});

describe('readProcArgv', () => {
  it('never answers the empty command line of a process in the middle of an exec', async () => {
    // a shell that execs itself again and again: one raw read in several finds no arguments
    const script = join(dir, 'reexec.sh');
    await writeFile(script, '#!/bin/sh\nexec /bin/sh "$0"\n');
    const child = spawn('/bin/sh', [script], { stdio: 'ignore' });
    try {
      await new Promise((r) => child.once('spawn', r));
      const pid = child.pid as number;
      const seen = new Set<string>();
      for (let i = 0; i < 300; i += 1) seen.add(JSON.stringify(await readProcArgv(pid)));
      expect([...seen]).toEqual([JSON.stringify(['/bin/sh', script])]);
      const raw = async (): Promise<string> => readFile(`/proc/${pid}/cmdline`, 'utf8');
      // the gap this reads through is there: a raw read of /proc finds it
      await until('an empty raw read', async () => (await raw()) === '');
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('answers null for a process that is gone', async () => {
    const child = spawn('true', [], { stdio: 'ignore' });
    await new Promise((r) => child.once('exit', r));
    expect(await readProcArgv(child.pid as number)).toBeNull();
  });
});

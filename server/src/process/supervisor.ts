/**
 * A supervised child process (QEMU, ffmpeg): idempotent `ensureStarted()` /
 * `ensureStopped()`, restart with exponential backoff when it dies unexpectedly, and never an
 * orphan:
 * - spawned through `setpriv --pdeathsig KILL --` (util-linux) where it exists, so the kernel
 *   kills the child even when node itself is SIGKILLed (architecture.md: a QEMU whose parent
 *   died keeps a core at 100 %);
 * - killed with SIGKILL from a `process.on('exit')` hook on every other exit path;
 * - with a pidfile, a restarted server kills the stale child a dead one left behind.
 *
 * State table:
 * | state    | child   | wanted | next                                          |
 * |----------|---------|--------|-----------------------------------------------|
 * | stopped  | none    | no     | ensureStarted -> starting                     |
 * | starting | spawning| yes    | spawned -> running; spawn error -> backoff    |
 * | running  | alive   | yes    | exit -> backoff; ensureStopped -> stopping    |
 * | backoff  | none    | yes    | timer -> starting; ensureStopped -> stopped   |
 * | stopping | alive   | no     | exit -> stopped (SIGTERM, SIGKILL after stopTimeoutMs) |
 *
 * `TRANSITIONS` lists every move, including the ones a race makes (a child that exits on its
 * own while ensureStopped waits for its spawn; an ensureStarted during stopping, which makes
 * the exit unexpected and restarts it with backoff); every state change is checked against it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { accessSync, constants as fsConstants } from 'node:fs';
import { readFile, unlink } from 'node:fs/promises';
import { basename, delimiter, join } from 'node:path';
import type { Writable } from 'node:stream';
import { checkTransition, type TransitionMap } from '@kvm/protocol/transitions';
import { atomicWriteFile } from '../storage/atomic';

export type SupervisorState = 'stopped' | 'starting' | 'running' | 'backoff' | 'stopping';

/** Every state change the supervisor may make (the table above); others are bugs. */
export const SUPERVISOR_TRANSITIONS: TransitionMap<SupervisorState> = {
  stopped: ['starting'],
  // spawned; a failed spawn: retried (backoff) or given up (stopped)
  starting: ['running', 'backoff', 'stopped'],
  // ensureStopped; an unexpected exit; an exit while ensureStopped waited for the spawn
  running: ['stopping', 'backoff', 'stopped'],
  backoff: ['starting', 'stopped'],
  // the exit; an ensureStarted during stopping makes the exit unexpected: restart
  stopping: ['stopped', 'backoff'],
};

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The exit was asked for (ensureStopped); no restart follows. */
  expected: boolean;
  uptimeMs: number;
}

export interface SupervisorEvents {
  started: [pid: number];
  exited: [info: ExitInfo];
  restarting: [delayMs: number, attempt: number];
  /** The child could not be spawned (ENOENT, EACCES...); a restart is scheduled. */
  spawnError: [error: Error];
  /** One line of the child's stdout (in `lines` mode) or stderr. */
  output: [line: string, stream: 'stdout' | 'stderr'];
  /** A chunk of the child's stdout, in `data` mode (binary output such as ffmpeg's). */
  data: [chunk: Buffer];
  state: [state: SupervisorState];
  /** A message on the `ipc` channel (option `ipc`), with the handle it carried (a socket). */
  message: [message: unknown, handle: unknown];
}

export interface BackoffOptions {
  /** First restart delay. */
  initialMs?: number;
  /** The delay doubles up to this. */
  maxMs?: number;
  /** A child that ran this long was healthy: the next restart starts from initialMs again. */
  healthyMs?: number;
}

export interface SupervisorOptions {
  /** For logs and errors. */
  name: string;
  command: string;
  args?: readonly string[];
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** The child's pid is kept here while it runs; a stale child named in it is killed first. */
  pidfile?: string;
  /** SIGTERM, then SIGKILL after this. */
  stopTimeoutMs?: number;
  backoff?: BackoffOptions;
  /** Spawn through `setpriv --pdeathsig KILL` when available (default true). */
  pdeathsig?: boolean;
  /**
   * Whether the process a stale pidfile names is really our old child (and not a recycled
   * pid): gets its argv from /proc. Default: the same executable name as `command`.
   */
  isStale?: (argv: string[]) => boolean;
  /** Lines of output kept for `recentOutput()`. */
  keepLines?: number;
  /** `pipe`: the child reads what `stdin` is given (ffmpeg's raw frames). Default `ignore`. */
  stdin?: 'ignore' | 'pipe';
  /** `data`: stdout is binary and comes as `data` events, not lines. Default `lines`. */
  stdout?: 'lines' | 'data';
  /**
   * A first spawn that fails (missing executable) is retried with backoff like any later one,
   * and `ensureStarted()` resolves in state `backoff`, instead of rejecting. For children that
   * run on demand (ffmpeg while somebody watches), where nobody is there to see a rejection.
   */
  retryFirstSpawn?: boolean;
  /**
   * A Node IPC channel to the child (a node script, also through `setpriv` and `ip netns
   * exec`, which keep the descriptor): its messages and the handles they carry (sockets) come
   * as `message` events.
   */
  ipc?: boolean;
}

/**
 * A line of output longer than this is cut into pieces of this size: a child that writes
 * without newlines (garbage, a binary on the wrong stream) must not grow a buffer here.
 */
export const MAX_LINE_CHARS = 4096;

const DEFAULT_BACKOFF: Required<BackoffOptions> = {
  initialMs: 500,
  maxMs: 10_000,
  healthyMs: 60_000,
};

/** Every live child of every supervisor, killed on any exit of this process. */
const liveChildren = new Set<number>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const pid of liveChildren) killGroup(pid, 'SIGKILL');
  });
}

/** Signals the child's process group (it leads one: spawned detached), else the child alone. */
function killGroup(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    try {
      process.kill(pid, signal);
      return true;
    } catch {
      return false;
    }
  }
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The path of an executable: as given when it holds a `/`, else the first one on PATH. */
export function findExecutable(command: string): string | null {
  if (command.includes('/')) return isExecutable(command) ? command : null;
  const dirs = (process.env['PATH'] ?? '').split(delimiter).filter(Boolean);
  for (const dir of [...dirs, '/usr/local/bin', '/usr/bin', '/bin']) {
    if (isExecutable(join(dir, command))) return join(dir, command);
  }
  return null;
}

let setprivPath: string | null | undefined;
/** util-linux `setpriv` (for --pdeathsig), or null. */
export function findSetpriv(): string | null {
  if (setprivPath === undefined) setprivPath = findExecutable('setpriv');
  return setprivPath;
}

/** How long an empty command line of a live process is read again (readProcArgv). */
const EXEC_SETTLE_MS = 500;

/**
 * A process's argv from /proc, or null if it is gone or a zombie. An empty command line from a
 * live process is a moment, not an answer: execve installs the new image before it writes the
 * arguments (a spawn returns in that gap, and setpriv's exec of the command makes another), and
 * an exiting process drops its memory before it is a zombie. Such a read is made again, for at
 * most EXEC_SETTLE_MS, and then answers what it sees.
 */
export async function readProcArgv(pid: number): Promise<string[] | null> {
  const deadline = performance.now() + EXEC_SETTLE_MS;
  for (;;) {
    const argv = await readProcArgvOnce(pid);
    if (argv === null || argv.length > 0 || performance.now() >= deadline) return argv;
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function readProcArgvOnce(pid: number): Promise<string[] | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Field 3, after the parenthesised command name (which may itself hold spaces or parens).
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    if (state === 'Z' || state === 'X') return null;
    const raw = await readFile(`/proc/${pid}/cmdline`, 'utf8');
    return raw.split('\0').filter((s, i, all) => s !== '' || i < all.length - 1);
  } catch {
    return null;
  }
}

/** Waits until `pid` is gone (or a zombie), polling /proc; false after `timeoutMs`. */
export async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if ((await readProcArgv(pid)) === null) return true;
    if (performance.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
}

export class Supervisor extends EventEmitter<SupervisorEvents> {
  readonly name: string;
  private readonly opts: SupervisorOptions;
  private readonly backoff: Required<BackoffOptions>;
  private _state: SupervisorState = 'stopped';
  private child: ChildProcess | null = null;
  private startedAt = 0;
  private attempt = 0;
  private nextDelayMs: number;
  private restartTimer: NodeJS.Timeout | null = null;
  /** ensureStarted was called last (not ensureStopped): restarts happen only then. */
  private wanted = false;
  private starting: Promise<void> | null = null;
  private stopping: Promise<void> | null = null;
  private exitWaiters: Array<() => void> = [];
  private readonly lines: string[] = [];

  constructor(opts: SupervisorOptions) {
    super();
    this.name = opts.name;
    this.opts = opts;
    this.backoff = { ...DEFAULT_BACKOFF, ...opts.backoff };
    this.nextDelayMs = this.backoff.initialMs;
    installExitHook();
  }

  get state(): SupervisorState {
    return this._state;
  }

  /** The running child's pid, or null. */
  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  /** The running child's stdin (option `stdin: 'pipe'`), or null. */
  get stdin(): Writable | null {
    return this.child?.stdin ?? null;
  }

  /**
   * Signals the running child without asking it to stop: its exit counts as unexpected and a
   * restart with backoff follows (a child that hangs or talks nonsense). False if none runs.
   */
  kill(signal: NodeJS.Signals = 'SIGKILL'): boolean {
    const pid = this.child?.pid;
    if (pid === undefined || this._state !== 'running') return false;
    return killGroup(pid, signal);
  }

  /** The last lines the child printed (stdout and stderr), for error messages. */
  recentOutput(): string[] {
    return [...this.lines];
  }

  /**
   * Starts the child unless it runs or is about to restart. Resolves once it is spawned;
   * rejects if the very first spawn fails (missing executable), leaving the supervisor stopped.
   */
  async ensureStarted(): Promise<void> {
    this.wanted = true;
    if (this.stopping) await this.stopping;
    if (!this.wanted) return;
    if (this._state === 'running' || this._state === 'backoff') return;
    if (this.starting) return this.starting;
    this.attempt = 0;
    this.nextDelayMs = this.backoff.initialMs;
    this.starting = this.spawnChild().finally(() => {
      this.starting = null;
    });
    try {
      await this.starting;
    } catch (err) {
      if (this.opts.retryFirstSpawn && this.wanted) {
        this.scheduleRestart();
        return;
      }
      this.wanted = false;
      this.setState('stopped');
      throw err;
    }
  }

  /** Stops the child (SIGTERM, then SIGKILL) and any pending restart. Idempotent. */
  async ensureStopped(): Promise<void> {
    this.wanted = false;
    if (this.restartTimer) {
      clearTimeout(this.restartTimer);
      this.restartTimer = null;
    }
    if (this.starting) await this.starting.catch(() => undefined);
    if (this.stopping) return this.stopping;
    const child = this.child;
    if (!child?.pid) {
      this.setState('stopped');
      return;
    }
    this.setState('stopping');
    this.stopping = this.stopChild(child.pid).finally(() => {
      this.stopping = null;
    });
    return this.stopping;
  }

  private async stopChild(pid: number): Promise<void> {
    const exited = new Promise<void>((resolve) => this.exitWaiters.push(resolve));
    killGroup(pid, 'SIGTERM');
    const timeoutMs = this.opts.stopTimeoutMs ?? 5000;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      exited.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      this.emit('output', `no exit ${timeoutMs} ms after SIGTERM: SIGKILL`, 'stderr');
      killGroup(pid, 'SIGKILL');
      await exited;
    }
  }

  private setState(state: SupervisorState): void {
    if (!checkTransition(`supervisor ${this.name}`, SUPERVISOR_TRANSITIONS, this._state, state)) {
      return;
    }
    this._state = state;
    this.emit('state', state);
  }

  private async killStale(): Promise<void> {
    const pidfile = this.opts.pidfile;
    if (!pidfile) return;
    let text: string;
    try {
      text = await readFile(pidfile, 'utf8');
    } catch {
      return;
    }
    const pid = Number.parseInt(text.trim(), 10);
    if (Number.isInteger(pid) && pid > 1 && pid !== process.pid) {
      const argv = await readProcArgv(pid);
      const isStale =
        this.opts.isStale ??
        ((a: string[]) => basename(a[0] ?? '') === basename(this.opts.command));
      // A pid caught between setpriv's start and its exec still shows setpriv's argv.
      const own =
        argv && basename(argv[0] ?? '') === 'setpriv' ? argv.slice(argv.indexOf('--') + 1) : argv;
      if (own && isStale(own)) {
        this.emit('output', `killing stale ${this.name} (pid ${pid}) from ${pidfile}`, 'stderr');
        killGroup(pid, 'SIGKILL');
        if (!(await waitForExit(pid, 5000))) {
          throw new Error(`${this.name}: stale pid ${pid} from ${pidfile} does not die`);
        }
      }
    }
    await unlink(pidfile).catch(() => undefined);
  }

  private async spawnChild(): Promise<void> {
    this.setState('starting');
    await this.killStale();
    if (!findExecutable(this.opts.command)) {
      // Through setpriv a missing command would only show as exit 127: say it now.
      const err = new Error(`${this.opts.command} not found`);
      this.emit('spawnError', err);
      throw new Error(`${this.name}: cannot start ${this.opts.command}: not found`);
    }
    const args = [...(this.opts.args ?? [])];
    const setpriv = this.opts.pdeathsig === false ? null : findSetpriv();
    // setpriv execs the command: the pid, the pidfile and every signal are the command's own.
    const [cmd, argv] = setpriv
      ? [setpriv, ['--pdeathsig', 'KILL', '--', this.opts.command, ...args]]
      : [this.opts.command, args];
    const child = spawn(cmd, argv, {
      cwd: this.opts.cwd,
      env: this.opts.env ?? process.env,
      stdio: this.opts.ipc
        ? [this.opts.stdin ?? 'ignore', 'pipe', 'pipe', 'ipc']
        : [this.opts.stdin ?? 'ignore', 'pipe', 'pipe'],
      // Its own process group: a Ctrl-C on the terminal reaches the server, which stops the
      // child in order, and ensureStopped can signal the whole group.
      detached: true,
    });
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    }).catch((err: Error) => {
      this.emit('spawnError', err);
      throw new Error(`${this.name}: cannot start ${this.opts.command}: ${err.message}`);
    });
    const pid = child.pid as number;
    this.child = child;
    this.startedAt = performance.now();
    liveChildren.add(pid);
    if (this.opts.stdout === 'data') child.stdout?.on('data', (c: Buffer) => this.emit('data', c));
    else this.pipeLines(child, 'stdout');
    this.pipeLines(child, 'stderr');
    // EPIPE when the child dies with input still queued: its exit reports that, and an
    // unhandled stream error would take this whole process down.
    child.stdin?.on('error', () => undefined);
    child.on('error', (err) => this.emit('output', `${err.message}`, 'stderr'));
    if (this.opts.ipc) child.on('message', (m, handle) => this.emit('message', m, handle));
    child.once('exit', (code, signal) => this.onExit(child, pid, code, signal));
    this.setState('running');
    this.emit('started', pid);
    // A stale pidfile after a quick exit is harmless: killStale checks the process first.
    if (this.opts.pidfile) {
      await atomicWriteFile(this.opts.pidfile, `${pid}\n`, 0o644).catch(() => undefined);
    }
  }

  private pipeLines(child: ChildProcess, stream: 'stdout' | 'stderr'): void {
    let rest = '';
    const source = child[stream];
    if (!source) return;
    source.setEncoding('utf8');
    source.on('data', (chunk: string) => {
      const parts = (rest + chunk).split('\n');
      rest = parts.pop() ?? '';
      while (rest.length > MAX_LINE_CHARS) {
        parts.push(rest.slice(0, MAX_LINE_CHARS));
        rest = rest.slice(MAX_LINE_CHARS);
      }
      for (const line of parts) this.pushLine(line.slice(0, MAX_LINE_CHARS), stream);
    });
    source.on('end', () => {
      if (rest) this.pushLine(rest, stream);
      rest = '';
    });
  }

  private pushLine(line: string, stream: 'stdout' | 'stderr'): void {
    this.lines.push(line);
    if (this.lines.length > (this.opts.keepLines ?? 50)) this.lines.shift();
    this.emit('output', line, stream);
  }

  private onExit(
    child: ChildProcess,
    pid: number,
    code: number | null,
    signal: NodeJS.Signals | null,
  ): void {
    liveChildren.delete(pid);
    if (this.child === child) this.child = null;
    if (this.opts.pidfile) unlink(this.opts.pidfile).catch(() => undefined);
    const uptimeMs = performance.now() - this.startedAt;
    const expected = !this.wanted;
    this.emit('exited', { code, signal, expected, uptimeMs });
    const waiters = this.exitWaiters;
    this.exitWaiters = [];
    for (const w of waiters) w();
    if (expected) {
      this.setState('stopped');
      return;
    }
    if (uptimeMs >= this.backoff.healthyMs) {
      this.attempt = 0;
      this.nextDelayMs = this.backoff.initialMs;
    }
    this.scheduleRestart();
  }

  private scheduleRestart(): void {
    if (!this.wanted) {
      this.setState('stopped');
      return;
    }
    const delay = this.nextDelayMs;
    this.nextDelayMs = Math.min(this.nextDelayMs * 2, this.backoff.maxMs);
    this.attempt += 1;
    this.setState('backoff');
    this.emit('restarting', delay, this.attempt);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      if (!this.wanted) return;
      this.starting = this.spawnChild()
        .catch(() => {
          // spawnError was emitted; keep trying with the next delay.
          this.scheduleRestart();
        })
        .finally(() => {
          this.starting = null;
        });
    }, delay);
  }
}

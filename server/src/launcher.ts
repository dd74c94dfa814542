/**
 * What `npm start` runs: the device server as a child process, started again when it dies
 * (issue 9, item 1: a crash must not leave the device down). Under systemd the unit runs this
 * too (deploy/kvm-console.service) and restarts the launcher itself if it ever dies.
 *
 * States and transitions (checked in `setState`):
 *
 *   starting ──spawned──▶ running ──exit(crash)──▶ backoff ──timer──▶ starting
 *       │                    │                        │
 *       └────────────────────┴── SIGTERM/SIGINT ──────┴──▶ stopping ──child gone──▶ stopped
 *   running ──exit(0, or 2 = bad config)──▶ stopped   (nothing a restart would fix)
 *
 * A crash is any exit the launcher did not ask for: a non-zero code other than 2, or a signal
 * it did not send. Restarts wait 0.5 s, doubling to 30 s; a child that stayed up 60 s resets
 * the wait. The next issue (signed A/B upgrade with rollback) grows here: which build to start
 * and "healthy within a bounded time, else the previous one" are transitions of this machine.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { raiseOpenFileLimit } from './fd-limit';
import { findSetpriv } from './process/supervisor';

export type LauncherState = 'starting' | 'running' | 'backoff' | 'stopping' | 'stopped';

const TRANSITIONS: Record<LauncherState, readonly LauncherState[]> = {
  starting: ['running', 'stopping'],
  running: ['backoff', 'stopping', 'stopped'],
  backoff: ['starting', 'stopping'],
  stopping: ['stopped'],
  stopped: [],
};

export interface RestartPolicy {
  firstDelayMs: number;
  maxDelayMs: number;
  /** A child that stayed up this long is healthy: the next crash waits firstDelayMs again. */
  resetAfterMs: number;
}

export const DEFAULT_POLICY: RestartPolicy = {
  firstDelayMs: 500,
  maxDelayMs: 30_000,
  resetAfterMs: 60_000,
};

/** Exit code of a bad command line or config (main.ts): a restart cannot fix it. */
const EXIT_CONFIG = 2;

export interface LauncherOptions {
  /** The server's entry script and its arguments. */
  entry: string;
  args: string[];
  policy?: RestartPolicy;
  log?: (line: string) => void;
  /** Called once the launcher has nothing left to supervise, with the exit code to use. */
  onStopped?: (code: number) => void;
}

export class Launcher {
  private state: LauncherState = 'starting';
  private child: ChildProcess | null = null;
  private delayMs: number;
  private startedAt = 0;
  private timer: NodeJS.Timeout | null = null;
  private stopSignal: NodeJS.Signals | null = null;
  private readonly policy: RestartPolicy;
  private readonly log: (line: string) => void;
  /** How many times the server was started; for the log and the tests. */
  starts = 0;

  constructor(private readonly opts: LauncherOptions) {
    this.policy = opts.policy ?? DEFAULT_POLICY;
    this.delayMs = this.policy.firstDelayMs;
    this.log = opts.log ?? ((line) => process.stderr.write(`launcher: ${line}\n`));
  }

  get current(): LauncherState {
    return this.state;
  }

  start(): void {
    this.spawnChild();
  }

  /** Forwards a stop signal; the launcher ends when the child has. */
  stop(signal: NodeJS.Signals = 'SIGTERM'): void {
    if (this.state === 'stopping' || this.state === 'stopped') return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const child = this.child;
    this.stopSignal = signal;
    this.setState('stopping');
    if (child && child.exitCode === null && child.signalCode === null) child.kill(signal);
    else this.finish(0);
  }

  private setState(next: LauncherState): void {
    if (!TRANSITIONS[this.state].includes(next)) {
      throw new Error(`launcher: illegal transition ${this.state} -> ${next}`);
    }
    this.state = next;
  }

  private spawnChild(): void {
    this.starts += 1;
    this.startedAt = Date.now();
    // Through `setpriv --pdeathsig TERM` where it exists: if the launcher itself is killed
    // (kill -9, OOM), the kernel stops the server too, which stops its QEMU and ffmpeg, instead
    // of leaving an orphan that holds the port and the VM.
    const setpriv = findSetpriv();
    const argv = [process.execPath, this.opts.entry, ...this.opts.args];
    const child = setpriv
      ? spawn(setpriv, ['--pdeathsig', 'TERM', '--', ...argv], { stdio: 'inherit' })
      : spawn(argv[0]!, argv.slice(1), { stdio: 'inherit' });
    this.child = child;
    child.once('spawn', () => {
      if (this.state === 'starting') this.setState('running');
    });
    child.once('error', (err) => {
      // could not even be spawned: treated as a crash, with backoff
      this.log(`server could not start: ${err.message}`);
      this.onExit(child, 1, null);
    });
    child.once('exit', (code, signal) => this.onExit(child, code, signal));
  }

  private onExit(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (child !== this.child) return;
    this.child = null;
    if (this.state === 'stopping') {
      // ended by the signal we forwarded before it could set up its handler: still a clean stop
      this.finish(code ?? (signal === this.stopSignal ? 0 : 1));
      return;
    }
    if (this.state === 'starting') this.setState('running');
    if (code === 0 || code === EXIT_CONFIG) {
      this.log(`server exited with ${code}: not restarting`);
      this.setState('stopped');
      this.opts.onStopped?.(code);
      return;
    }
    const upMs = Date.now() - this.startedAt;
    if (upMs >= this.policy.resetAfterMs) this.delayMs = this.policy.firstDelayMs;
    const how = signal ? `signal ${signal}` : `code ${code}`;
    this.log(`server exited (${how}) after ${upMs} ms; restarting in ${this.delayMs} ms`);
    this.setState('backoff');
    this.timer = setTimeout(() => {
      this.timer = null;
      this.setState('starting');
      this.spawnChild();
    }, this.delayMs);
    this.delayMs = Math.min(this.delayMs * 2, this.policy.maxDelayMs);
  }

  private finish(code: number): void {
    this.setState('stopped');
    this.opts.onStopped?.(code);
  }
}

/** `node server/dist/launcher.js [server options]`: main.js beside it, same options. */
function runFromCommandLine(): void {
  const here = dirname(fileURLToPath(import.meta.url));
  const raised = raiseOpenFileLimit();
  process.stderr.write(
    `launcher: open-file limit for the server: ${raised.limit ?? 'unknown'} (${raised.note})\n`,
  );
  const launcher = new Launcher({
    entry: join(here, 'main.js'),
    args: process.argv.slice(2),
    onStopped: (code) => process.exit(code),
  });
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    process.on(signal, () => launcher.stop(signal === 'SIGHUP' ? 'SIGTERM' : signal));
  }
  launcher.start();
}

// Run only as the bundle's entry (server/dist/launcher.js), never when a test imports the class.
if (/launcher\.js$/.test(process.argv[1] ?? '')) runFromCommandLine();

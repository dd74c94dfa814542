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
 * the wait.
 *
 * With an install folder (issue 12, install/boot.ts) every start first asks `planBoot` which
 * version to run: the `current` slot, or the new one of an upgrade on trial. A trial must send
 * READY_MESSAGE within `healthTimeoutMs`, with no `problems` (a start that could not restore
 * the device's network is not healthy); if it exits first, stays silent or names problems, the
 * previous version is put back and started at once, and the reason is kept for
 * /api/upgrade/status.
 * Exit EXIT_UPGRADE (the server prepared an upgrade) restarts at once, without backoff. The
 * launcher itself is never upgraded: like a boot loader, it stays the factory's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { raiseOpenFileLimit } from './fd-limit';
import { EXIT_UPGRADE, keepTrial, planBoot, READY_MESSAGE, rollBack } from './install/boot';
import { linkModules, type InstallLayout, type TrialRecord } from './install/install-dir';
import { findSetpriv } from './process/supervisor';
import type { RollbackReasonKey } from '@kvm/protocol';

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

/** A new version must listen with its drivers started within this, or it is rolled back. */
export const DEFAULT_HEALTH_TIMEOUT_MS = 20_000;
/** A trial that was told to stop (not healthy in time) is killed after this. */
const TRIAL_KILL_MS = 10_000;

export interface LauncherOptions {
  /** The server's entry script, when there is no install folder to choose it from. */
  entry?: string;
  args: string[];
  /** The A/B install folder: the entry is the `current` slot's, upgrades are tried. */
  install?: InstallLayout;
  healthTimeoutMs?: number;
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
  /** The upgrade this child tries, until it is healthy. */
  private trial: TrialRecord | null = null;
  private trialFailure: string | null = null;
  /** trialFailure as a code for the console (protocol/upgrade.ts RollbackReasonKey). */
  private trialFailureKey: RollbackReasonKey | null = null;
  private healthTimer: NodeJS.Timeout | null = null;
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

  /** The entry to start now and the trial it is, from the install folder when there is one. */
  private plan(): { entry: string; env: NodeJS.ProcessEnv } {
    const install = this.opts.install;
    if (!install) return { entry: this.opts.entry!, env: process.env };
    linkModules(install);
    const plan = planBoot(install, this.log);
    this.trial = plan.trial;
    this.trialFailure = null;
    this.trialFailureKey = null;
    return {
      entry: plan.entry,
      env: {
        ...process.env,
        KVM_INSTALL_DIR: install.installDir,
        KVM_FACTORY_ROOT: install.factoryRoot,
      },
    };
  }

  private spawnChild(): void {
    this.starts += 1;
    this.startedAt = Date.now();
    let entry: string;
    let env: NodeJS.ProcessEnv;
    try {
      ({ entry, env } = this.plan());
    } catch (err) {
      // An install folder that cannot be read or written: the factory version still boots.
      this.log(`install folder: ${(err as Error).message}; starting the factory version`);
      this.trial = null;
      entry = join(this.opts.install!.factoryRoot, 'server', 'dist', 'main.js');
      env = process.env;
    }
    // Through `setpriv --pdeathsig TERM` where it exists: if the launcher itself is killed
    // (kill -9, OOM), the kernel stops the server too, which stops its QEMU and ffmpeg, instead
    // of leaving an orphan that holds the port and the VM. The IPC channel carries READY.
    const setpriv = findSetpriv();
    const argv = [process.execPath, entry, ...this.opts.args];
    const stdio: ['inherit', 'inherit', 'inherit', 'ipc'] = [
      'inherit',
      'inherit',
      'inherit',
      'ipc',
    ];
    const child = setpriv
      ? spawn(setpriv, ['--pdeathsig', 'TERM', '--', ...argv], { stdio, env })
      : spawn(argv[0]!, argv.slice(1), { stdio, env });
    this.child = child;
    child.once('spawn', () => {
      if (this.state === 'starting') this.setState('running');
    });
    child.on('message', (msg: unknown) => {
      const m = msg as { type?: unknown; problems?: unknown } | null;
      if (m?.type !== READY_MESSAGE) return;
      const problems = Array.isArray(m.problems)
        ? m.problems.filter((p): p is string => typeof p === 'string')
        : [];
      this.onReady(child, problems);
    });
    if (this.trial) {
      const timeoutMs = this.opts.healthTimeoutMs ?? DEFAULT_HEALTH_TIMEOUT_MS;
      this.healthTimer = setTimeout(() => {
        this.healthTimer = null;
        if (child !== this.child || !this.trial) return;
        this.trialFailure = `${this.trial.to_version} was not ready within ${timeoutMs / 1000} s`;
        this.trialFailureKey = { code: 'not_ready', seconds: timeoutMs / 1000 };
        this.log(`${this.trialFailure}: stopping it`);
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), TRIAL_KILL_MS).unref();
      }, timeoutMs);
    }
    child.once('error', (err) => {
      // could not even be spawned: treated as a crash, with backoff
      this.log(`server could not start: ${err.message}`);
      this.onExit(child, 1, null);
    });
    child.once('exit', (code, signal) => this.onExit(child, code, signal));
  }

  private onReady(child: ChildProcess, problems: readonly string[]): void {
    if (child !== this.child) return;
    const trial = this.trial;
    if (problems.length > 0) this.log(`the server started with problems: ${problems.join('; ')}`);
    if (!trial || this.trialFailure) return;
    this.clearHealthTimer();
    if (problems.length > 0) {
      // Listening, but it could not put back what the device had (its network): not healthy.
      this.trialFailure = `${trial.to_version} started, but ${problems.join('; ')}`;
      this.trialFailureKey = { code: 'unhealthy', problems: [...problems] };
      this.log(`${this.trialFailure}: stopping it`);
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), TRIAL_KILL_MS).unref();
      return;
    }
    this.trial = null;
    try {
      keepTrial(this.opts.install!, trial);
      this.log(`upgrade to ${trial.to_version} is healthy and kept`);
    } catch (err) {
      this.log(`could not record the upgrade's success: ${(err as Error).message}`);
    }
  }

  private clearHealthTimer(): void {
    if (this.healthTimer) clearTimeout(this.healthTimer);
    this.healthTimer = null;
  }

  private onExit(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (child !== this.child) return;
    this.child = null;
    this.clearHealthTimer();
    const trial = this.trial;
    this.trial = null;
    if (trial && this.state !== 'stopping') {
      const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
      const reason = this.trialFailure ?? `${trial.to_version} ${how} before it was ready`;
      const key: RollbackReasonKey | null = this.trialFailure
        ? this.trialFailureKey
        : signal
          ? { code: 'killed', signal }
          : { code: 'exited', exit_code: code };
      try {
        rollBack(this.opts.install!, trial, reason, this.log, key);
      } catch (err) {
        this.log(`rollback failed: ${(err as Error).message}`);
      }
      this.restartNow();
      return;
    }
    if (this.state === 'stopping') {
      // ended by the signal we forwarded before it could set up its handler: still a clean stop
      this.finish(code ?? (signal === this.stopSignal ? 0 : 1));
      return;
    }
    if (this.state === 'starting') this.setState('running');
    if (code === EXIT_UPGRADE && this.opts.install) {
      this.log('server stopped for an upgrade: starting the new version');
      this.restartNow();
      return;
    }
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

  /** Straight to the next start: an upgrade or a rollback is not a crash to back off from. */
  private restartNow(): void {
    if (this.state === 'starting') this.setState('running');
    this.setState('backoff');
    this.timer = setTimeout(() => {
      this.timer = null;
      this.setState('starting');
      this.spawnChild();
    }, 0);
  }

  private finish(code: number): void {
    this.setState('stopped');
    this.opts.onStopped?.(code);
  }
}

/**
 * `node server/dist/launcher.js [server options]`: the server of the `current` slot (or the
 * checkout's own, `main.js` beside this file), same options. `KVM_INSTALL_DIR` moves the install
 * folder (default `<checkout>/.install`), `KVM_HEALTH_TIMEOUT_S` the trial's bound.
 */
function runFromCommandLine(): void {
  const here = dirname(fileURLToPath(import.meta.url));
  const factoryRoot = resolve(here, '..', '..');
  const health = Number(process.env['KVM_HEALTH_TIMEOUT_S']);
  const raised = raiseOpenFileLimit();
  process.stderr.write(
    `launcher: open-file limit for the server: ${raised.limit ?? 'unknown'} (${raised.note})\n`,
  );
  const launcher = new Launcher({
    install: {
      factoryRoot,
      installDir: resolve(process.env['KVM_INSTALL_DIR'] || join(factoryRoot, '.install')),
    },
    healthTimeoutMs: health > 0 ? health * 1000 : DEFAULT_HEALTH_TIMEOUT_MS,
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

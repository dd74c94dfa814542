/**
 * What a terminal socket talks to: the device's shell in a pty, or the remote computer's serial
 * console. Routes see only `TerminalBackend`; which serial line exists is the target's business
 * (`SerialConsole`).
 */
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import type * as NodePty from 'node-pty';
import type { IPty } from 'node-pty';
import type { TerminalBackend, TermSize } from '../drivers/serial/types';

export type { TerminalBackend } from '../drivers/serial/types';

// A native addon: loaded on the first terminal (the bundle keeps it external, scripts/build.mjs).
const requireCjs = createRequire(import.meta.url);
let ptyModule: typeof NodePty | null = null;
function nodePty(): typeof NodePty {
  ptyModule ??= requireCjs('node-pty') as typeof NodePty;
  return ptyModule;
}

export interface ShellOptions {
  /** The login shell and its arguments: $SHELL -l, else /bin/bash -l. */
  file?: string;
  args?: string[];
  cwd?: string;
  /** Where the terminal's end is logged (SIGTERM or SIGKILL needed). */
  log?: { warn(obj: object, msg: string): void };
}

/**
 * Every descriptor above 2 is closed before the shell runs (issue 21 item 1). node-pty forks
 * with forkpty(3), whose pty masters are opened without O_CLOEXEC, and the server may hold
 * other inheritable descriptors (a launcher's pipe): the child of a plain fork+exec would hold
 * the masters of every shell already open and could write into their terminals. Node has no
 * fcntl to mark them close-on-exec and node-pty no option for it, so the pty's child runs this
 * bash first: it closes whatever /proc/self/fd lists above 2 and execs the shell in its place
 * (same pid, session and terminal). Fails closed without /proc.
 */
export const CLOSE_INHERITED_FDS =
  '[ -d /proc/self/fd ] || { echo "no /proc: the shell is not started" >&2; exit 126; }; ' +
  'for f in /proc/self/fd/*; do f=${f##*/}; case $f in 0|1|2) ;; *) eval "exec $f>&-" ;; esac; done; ' +
  'exec "$@"';

const BASH_PATHS = ['/bin/bash', '/usr/bin/bash', '/usr/local/bin/bash'];
function bashPath(): string {
  const found = BASH_PATHS.find((p) => existsSync(p));
  if (!found) throw new Error('bash is needed to start the shell with only its own terminal');
  return found;
}

/** After SIGHUP, then after SIGTERM, this long for the shell's session to end (issue 21 item 2). */
export const HANGUP_GRACE_MS = 2_000;
export const TERM_GRACE_MS = 2_000;
/** After SIGKILL: the kernel is quick, but a loaded machine is not. */
const KILL_WAIT_MS = 2_000;
const POLL_MS = 100;

/**
 * The live processes of a session (`/proc/<pid>/stat` field 6). A pty's shell leads a session of
 * its own (forkpty calls setsid), and each job an interactive shell starts is a process group in
 * that session, so the session is what "everything the shell started" is. A process that leaves
 * it (setsid, a daemon) is on its own. Linux keeps a session's id from being reused while any
 * process is in it.
 */
export async function sessionMembers(sid: number): Promise<number[]> {
  let names: string[];
  try {
    names = await readdir('/proc');
  } catch {
    return [];
  }
  const out: number[] = [];
  await Promise.all(
    names.map(async (n) => {
      if (!/^\d+$/.test(n)) return;
      let stat: string;
      try {
        stat = await readFile(`/proc/${n}/stat`, 'utf8');
      } catch {
        return; // gone meanwhile
      }
      // "pid (comm) state ppid pgrp session ...": comm may hold spaces and parentheses
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (f[0] !== 'Z' && f[0] !== 'X' && Number(f[3]) === sid) out.push(Number(n));
    }),
  );
  return out;
}

function signalAll(pids: number[], sig: NodeJS.Signals): void {
  for (const p of pids) {
    try {
      process.kill(p, sig);
    } catch {
      /* gone already */
    }
  }
}

async function goneWithin(sid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if ((await sessionMembers(sid)).length === 0) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/**
 * Ends every process of session `sid`: SIGHUP (a hung-up terminal), after `HANGUP_GRACE_MS`
 * SIGTERM (and SIGCONT, for stopped jobs), after `TERM_GRACE_MS` SIGKILL. Resolves with the last
 * signal it needed.
 */
export async function endSession(
  sid: number,
  grace = { hangupMs: HANGUP_GRACE_MS, termMs: TERM_GRACE_MS },
): Promise<'SIGHUP' | 'SIGTERM' | 'SIGKILL' | 'survivors'> {
  signalAll([sid, ...(await sessionMembers(sid))], 'SIGHUP');
  if (await goneWithin(sid, grace.hangupMs)) return 'SIGHUP';
  const rest = await sessionMembers(sid);
  signalAll(rest, 'SIGTERM');
  signalAll(rest, 'SIGCONT');
  if (await goneWithin(sid, grace.termMs)) return 'SIGTERM';
  signalAll(await sessionMembers(sid), 'SIGKILL');
  return (await goneWithin(sid, KILL_WAIT_MS)) ? 'SIGKILL' : 'survivors';
}

/** The device's login shell for the admin, in a pty of its own. */
export class PtyShell implements TerminalBackend {
  private readonly pty: IPty;
  private exited = false;
  private ending: Promise<void> | null = null;

  constructor(
    size: TermSize,
    private readonly opts: ShellOptions = {},
  ) {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
    env['TERM'] = 'xterm-256color';
    const file = opts.file ?? process.env['SHELL'] ?? '/bin/bash';
    // bash -c CLOSE_INHERITED_FDS <$0> <shell> <args...>: the shell runs with fds 0-2 only
    this.pty = nodePty().spawn(
      bashPath(),
      ['-c', CLOSE_INHERITED_FDS, 'kvm-shell', file, ...(opts.args ?? ['-l'])],
      {
        name: 'xterm-256color',
        cols: size.columns,
        rows: size.rows,
        cwd: opts.cwd ?? homedir(),
        env,
        encoding: null,
      },
    );
    this.pty.onExit(() => {
      this.exited = true;
    });
  }

  /** The shell's pid: it leads the session everything typed into it runs in. */
  get pid(): number {
    return this.pty.pid;
  }

  write(data: Buffer): void {
    if (!this.exited) this.pty.write(data);
  }
  resize(size: TermSize): void {
    if (!this.exited) this.pty.resize(size.columns, size.rows);
  }
  pause(): void {
    this.pty.pause();
  }
  resume(): void {
    this.pty.resume();
  }
  onData(fn: (data: Buffer) => void): void {
    // encoding null: node-pty hands Buffers (its typings say string)
    this.pty.onData((d: string | Buffer) => fn(typeof d === 'string' ? Buffer.from(d) : d));
  }
  onExit(fn: (message: string | null) => void): void {
    this.pty.onExit(({ exitCode }) => fn(`shell exited (${exitCode})`));
  }
  /**
   * Closes the pty master (the kernel hangs the terminal up) and ends the shell's whole session,
   * also what ignores SIGHUP: `endSession`'s SIGHUP, SIGTERM, SIGKILL. Also after the shell
   * itself exited: its jobs may live on.
   */
  kill(): Promise<void> {
    if (this.ending) return this.ending;
    this.exited = true;
    const sid = this.pty.pid;
    try {
      // closes the master fd; node-pty sends SIGHUP once its read stream is closed (its
      // typings leave destroy out)
      (this.pty as IPty & { destroy(): void }).destroy();
    } catch {
      /* closed already */
    }
    this.ending = endSession(sid).then(
      (last) => {
        if (last !== 'SIGHUP')
          this.opts.log?.warn({ pid: sid, signal: last }, 'terminal: the shell outlived SIGHUP');
      },
      () => undefined,
    );
    return this.ending;
  }
}

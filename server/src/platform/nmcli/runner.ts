/**
 * The one way the nmcli and timedatectl drivers run a command: `execFile` (never a shell, so an
 * SSID or a key is one argv entry whatever it holds), a timeout, the C locale (nmcli translates
 * its messages, and the Wi-Fi failure mapping reads them), bounded output. Tests inject a fake
 * runner that serves fixtures and records every argv.
 */
import { execFile } from 'node:child_process';

export interface CommandResult {
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** Default 10 s. */
  timeoutMs?: number;
}

export type CommandRunner = (
  file: string,
  args: readonly string[],
  opts?: RunOptions,
) => Promise<CommandResult>;

/** A command that failed: exit status, timeout or not found. `message` is what it said. */
export class CommandFailedError extends Error {
  constructor(
    readonly argv: readonly string[],
    /** Exit status, or a Node code (`ENOENT`, `ETIMEDOUT`). */
    readonly code: number | string | null,
    readonly stderr: string,
    readonly stdout: string,
  ) {
    super(describeFailure(argv, code, stderr, stdout));
    this.name = 'CommandFailedError';
  }

  /** What the command said, without our prefix (nmcli's "Error: ..." line). */
  get said(): string {
    return saidOf(this.stderr, this.stdout);
  }
}

function describeFailure(
  argv: readonly string[],
  code: number | string | null,
  stderr: string,
  stdout: string,
): string {
  const said = saidOf(stderr, stdout);
  const how =
    code === 'ENOENT'
      ? 'not installed'
      : code === 'ETIMEDOUT'
        ? 'timed out'
        : `exit ${String(code)}`;
  return `${argv[0] ?? '?'} ${argv[1] ?? ''} failed (${how})${said ? `: ${said}` : ''}`;
}

/** The last lines of what a command said, without nmcli's "Hint: use journalctl" line. */
function saidOf(stderr: string, stdout: string): string {
  return (stderr.trim() || stdout.trim())
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('Hint:'))
    .slice(-3)
    .join(' ');
}

const MAX_OUTPUT = 1024 * 1024;

/** The real runner. */
export const execRunner: CommandRunner = (file, args, opts = {}) =>
  new Promise((resolve, reject) => {
    const timeout = opts.timeoutMs ?? 10_000;
    execFile(
      file,
      [...args],
      {
        timeout,
        killSignal: 'SIGKILL',
        maxBuffer: MAX_OUTPUT,
        encoding: 'utf8',
        env: { ...process.env, LC_ALL: 'C', LANG: 'C', LANGUAGE: '' },
      },
      (err, stdout, stderr) => {
        if (!err) {
          resolve({ stdout, stderr });
          return;
        }
        const e = err as NodeJS.ErrnoException & { killed?: boolean; code?: number | string };
        const code = e.killed ? 'ETIMEDOUT' : (e.code ?? null);
        reject(new CommandFailedError([file, ...args], code, stderr ?? '', stdout ?? ''));
      },
    );
  });

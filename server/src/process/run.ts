/**
 * The one way the server runs a one-shot command (`ip`, `nmcli`, `timedatectl`, `date`, a
 * program's `help` probe, a short node helper): `execFile`, never a shell (a value is one argv
 * entry whatever it holds), a timeout after which the command is killed (SIGKILL by default),
 * bounded output, and on failure one `CommandError` that names the command and carries its exit
 * status or signal, what it said and whether it timed out. Long-lived children (QEMU, ffmpeg,
 * dnsmasq) are the Supervisor's.
 *
 * Drivers take a `CommandRunner` (this function's shape) so their tests can inject fakes that
 * serve fixtures, record argv or fail one step.
 */
import { execFile, type ExecFileException } from 'node:child_process';

export interface RunOptions {
  /** Killed after this long (`timedOut` on the error). Default 10 s. */
  timeoutMs?: number;
  /** Bytes of stdout or stderr past which the command is killed. Default 1 MiB. */
  maxBuffer?: number;
  /** The command's environment. Default: the server's. */
  env?: NodeJS.ProcessEnv;
  /** Written to the command's stdin, which is then closed. Default: stdin is closed at once. */
  input?: string | Uint8Array;
  /** Default SIGKILL: a command that overran gets no chance to linger. */
  killSignal?: NodeJS.Signals;
  /**
   * Each chunk of stdout as it comes (text), besides the whole at the end: for a command that
   * prints something to act on before it finishes (a login URL, then waits for the login).
   */
  onStdout?: (chunk: string) => void;
  /** Aborting kills the command (`killSignal`); it then rejects like any killed command. */
  signal?: AbortSignal;
}

export interface CommandResult {
  stdout: string;
  stderr: string;
}

/** Runs a command; the drivers' constructors take one so their tests can inject a fake. */
export type CommandRunner = (
  file: string,
  args: readonly string[],
  opts?: RunOptions,
) => Promise<CommandResult>;

export const DEFAULT_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_BUFFER = 1024 * 1024;
/** How much of stderr a message carries. */
const REASON_CHARS = 500;

export interface CommandFailure {
  /** The exit status; or Node's code when it did not run or was cut off (`ENOENT`, ...). */
  code?: number | string | null;
  /** The signal that ended it (the kill after a timeout, or somebody else's). */
  signal?: NodeJS.Signals | null;
  stdout?: string;
  stderr?: string;
  /** Killed after `timeoutMs`. */
  timedOut?: boolean;
  timeoutMs?: number;
  /** Why it did not run, when it did not (`spawn ip ENOENT`). */
  spawnError?: string;
}

/** A command exited non-zero, was killed (timeout, output over the bound) or could not start. */
export class CommandError extends Error {
  readonly code: number | string | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly timedOut: boolean;
  readonly timeoutMs: number | null;
  private readonly spawnError: string | null;

  constructor(
    readonly file: string,
    readonly args: readonly string[],
    failure: CommandFailure,
  ) {
    super('');
    this.name = 'CommandError';
    this.code = failure.code ?? null;
    this.signal = failure.signal ?? null;
    this.stdout = failure.stdout ?? '';
    this.stderr = failure.stderr ?? '';
    this.timedOut = failure.timedOut ?? false;
    this.timeoutMs = failure.timeoutMs ?? null;
    this.spawnError = failure.spawnError ?? null;
    this.message = `${[file, ...args].join(' ')}: ${this.reason}`;
  }

  /** `[file, ...args]`. */
  get argv(): string[] {
    return [this.file, ...this.args];
  }

  /** What the command said on stderr (trimmed, bounded), or why it did not run or finish. */
  get reason(): string {
    if (this.timedOut) return `timed out after ${this.timeoutMs ?? '?'} ms`;
    const said = this.stderr.trim().slice(0, REASON_CHARS);
    if (said) return said;
    if (this.spawnError) return this.spawnError;
    return this.signal ? `killed by ${this.signal}` : `exit ${String(this.code)}`;
  }
}

function run<E extends 'utf8' | 'buffer'>(
  file: string,
  args: readonly string[],
  opts: RunOptions,
  encoding: E,
): Promise<{ stdout: E extends 'utf8' ? string : Buffer; stderr: string }> {
  type Out = E extends 'utf8' ? string : Buffer;
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  return new Promise((resolve, reject) => {
    const child = execFile(
      file,
      [...args],
      {
        encoding,
        timeout: timeoutMs,
        killSignal: opts.killSignal ?? 'SIGKILL',
        maxBuffer: opts.maxBuffer ?? DEFAULT_MAX_BUFFER,
        env: opts.env ?? process.env,
        ...(opts.signal ? { signal: opts.signal } : {}),
      },
      (err: ExecFileException | null, stdout: string | Buffer, stderrRaw: string | Buffer) => {
        const stderr = typeof stderrRaw === 'string' ? stderrRaw : stderrRaw.toString('utf8');
        if (!err) {
          resolve({ stdout: stdout as Out, stderr });
          return;
        }
        const code = (err.code as number | string | undefined) ?? null;
        const cutOff = code === 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER';
        // `killed` is execFile's own kill: after the timeout, or for output over maxBuffer.
        const timedOut = err.killed === true && !cutOff;
        reject(
          new CommandError(file, args, {
            code,
            signal: err.signal ?? null,
            stdout: typeof stdout === 'string' ? stdout : stdout.toString('utf8'),
            stderr,
            timedOut,
            timeoutMs,
            // a non-zero exit's message only repeats the command line
            spawnError: typeof code === 'string' ? err.message : undefined,
          }),
        );
      },
    );
    if (opts.onStdout) {
      const onStdout = opts.onStdout;
      child.stdout?.on('data', (chunk: string | Buffer) =>
        onStdout(typeof chunk === 'string' ? chunk : chunk.toString('utf8')),
      );
    }
    // EPIPE when the command exits before reading all its input: its exit status tells.
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(opts.input);
  });
}

/** Runs `file args` (no shell); resolves with its output, rejects with a `CommandError`. */
export const runCommand: CommandRunner = (file, args, opts = {}) => run(file, args, opts, 'utf8');

/** `runCommand` for binary output (an image, a PCM stream): stdout as bytes. */
export function runCommandBuffer(
  file: string,
  args: readonly string[],
  opts: RunOptions = {},
): Promise<{ stdout: Buffer; stderr: string }> {
  return run(file, args, opts, 'buffer');
}

/**
 * The one way the netns driver runs a command: execFile (never a shell), a timeout, bounded
 * output, and an error that names the command and carries its stderr. Tests pass their own
 * runner to make one step fail.
 */
import { execFile } from 'node:child_process';

export interface CommandResult {
  stdout: string;
  stderr: string;
}

export type CommandRunner = (
  file: string,
  args: readonly string[],
  timeoutMs?: number,
) => Promise<CommandResult>;

export const COMMAND_TIMEOUT_MS = 5000;

/** A command exited non-zero, timed out or could not start. */
export class CommandError extends Error {
  constructor(
    readonly file: string,
    readonly args: readonly string[],
    /** What the command said on stderr (trimmed), or why it did not run. */
    readonly stderr: string,
    readonly code: number | string | null,
  ) {
    super(`${[file, ...args].join(' ')}: ${stderr || `exit ${String(code)}`}`);
    this.name = 'CommandError';
  }
}

export const execRunner: CommandRunner = (file, args, timeoutMs = COMMAND_TIMEOUT_MS) =>
  new Promise((resolve, reject) => {
    execFile(
      file,
      [...args],
      { timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 1 << 20, encoding: 'utf8' },
      (err, stdout, stderr) => {
        if (!err) {
          resolve({ stdout, stderr });
          return;
        }
        const e = err as NodeJS.ErrnoException & { killed?: boolean; code?: number | string };
        const said = stderr.trim().slice(0, 500);
        const why = e.killed ? `timed out after ${timeoutMs} ms` : said || e.message;
        reject(new CommandError(file, args, why, e.code ?? null));
      },
    );
  });

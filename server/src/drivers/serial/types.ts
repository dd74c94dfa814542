/**
 * The remote computer's serial line (`terminal.serial`): what the console's serial terminal
 * reads and writes. A line takes one terminal at a time.
 */

/** Columns and rows of a terminal window (ttyd's resize message). */
export interface TermSize {
  columns: number;
  rows: number;
}

/** One open terminal: a device shell (terminal/backends.ts) or the serial line. */
export interface TerminalBackend {
  write(data: Buffer): void;
  resize(size: TermSize): void;
  pause(): void;
  resume(): void;
  onData(fn: (data: Buffer) => void): void;
  /** Once, when the shell exits or the line closes; `message` is shown to the user. */
  onExit(fn: (message: string | null) => void): void;
  /** Ends it and everything it started; resolves once all of it is gone and released. */
  kill(): Promise<void>;
}

export interface SerialConsole {
  /** Null when there is one; else why not, shown in the tab. */
  readonly unavailable: string | null;
  /** The line, or a refusal message when another terminal holds it. */
  open(): Promise<TerminalBackend | string>;
}

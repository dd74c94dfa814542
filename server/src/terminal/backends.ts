/**
 * What a terminal socket talks to: the device's shell in a pty, or the remote computer's serial
 * console. Routes see only `TerminalBackend`; which serial line exists is the target's business
 * (`SerialConsole`).
 */
import { createRequire } from 'node:module';
import { connect, type Socket } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type * as NodePty from 'node-pty';
import type { IPty } from 'node-pty';
import type { TermSize } from './ttyd-protocol';

export interface TerminalBackend {
  write(data: Buffer): void;
  resize(size: TermSize): void;
  pause(): void;
  resume(): void;
  onData(fn: (data: Buffer) => void): void;
  /** Once, when the shell exits or the line closes; `message` is shown to the user. */
  onExit(fn: (message: string | null) => void): void;
  kill(): void;
}

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
}

/** The device's login shell for the admin, in a pty of its own. */
export class PtyShell implements TerminalBackend {
  private readonly pty: IPty;
  private exited = false;

  constructor(size: TermSize, opts: ShellOptions = {}) {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
    env['TERM'] = 'xterm-256color';
    this.pty = nodePty().spawn(
      opts.file ?? process.env['SHELL'] ?? '/bin/bash',
      opts.args ?? ['-l'],
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
  kill(): void {
    if (this.exited) return;
    this.exited = true;
    try {
      // SIGHUP as a closing terminal does; the shell's children get it from the kernel.
      this.pty.kill('SIGHUP');
    } catch {
      /* gone already */
    }
  }
}

/** The remote computer's serial line, as the target wires it. */
export interface SerialConsole {
  /** Null when there is one; else why not, shown in the tab. */
  readonly unavailable: string | null;
  /** The line, or a refusal message when another terminal holds it. */
  open(): Promise<TerminalBackend | string>;
}

export class NoSerialConsole implements SerialConsole {
  constructor(readonly unavailable: string) {}
  async open(): Promise<string> {
    return this.unavailable;
  }
}

/**
 * A serial line behind a unix socket (QEMU's `-chardev socket,...,server=on`). One terminal at
 * a time: a second is refused with a message (QEMU's socket takes one client too, and two
 * keyboards on one console garble each other's lines).
 */
export class UnixSocketSerial implements SerialConsole {
  readonly unavailable = null;
  private holder: SocketLine | null = null;

  constructor(private readonly path: string) {}

  async open(): Promise<TerminalBackend | string> {
    if (this.holder) return 'The serial console is in use by another terminal.';
    const sock = await new Promise<Socket | string>((resolve) => {
      const s = connect(this.path);
      const timer = setTimeout(() => {
        s.destroy();
        resolve('The serial console did not answer.');
      }, 5_000);
      s.once('connect', () => {
        clearTimeout(timer);
        resolve(s);
      });
      s.once('error', (err: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        resolve(`The serial console is not available (${err.code ?? err.message}).`);
      });
    });
    if (typeof sock === 'string') return sock;
    if (this.holder) {
      sock.destroy();
      return 'The serial console is in use by another terminal.';
    }
    const line = new SocketLine(sock, () => {
      if (this.holder === line) this.holder = null;
    });
    this.holder = line;
    return line;
  }
}

class SocketLine implements TerminalBackend {
  private done = false;
  private readonly exitFns: Array<(m: string | null) => void> = [];

  constructor(
    private readonly sock: Socket,
    private readonly released: () => void,
  ) {
    sock.on('error', () => undefined);
    sock.on('close', () => {
      this.finish();
      for (const fn of this.exitFns.splice(0)) fn('serial console closed');
    });
  }
  write(data: Buffer): void {
    if (!this.done) this.sock.write(data);
  }
  resize(): void {
    // a serial line has no window size
  }
  pause(): void {
    this.sock.pause();
  }
  resume(): void {
    this.sock.resume();
  }
  onData(fn: (data: Buffer) => void): void {
    this.sock.on('data', fn);
  }
  onExit(fn: (message: string | null) => void): void {
    this.exitFns.push(fn);
  }
  kill(): void {
    this.finish();
    this.sock.destroy();
  }
  private finish(): void {
    if (this.done) return;
    this.done = true;
    this.released();
  }
}

/** The target's serial line: QEMU's chardev socket in the run folder; none elsewhere. */
export function serialConsoleFor(target: string, dataDir: string): SerialConsole {
  if (target === 'qemu') return new UnixSocketSerial(join(dataDir, 'run', 'serial.sock'));
  return new NoSerialConsole(
    'This device has no serial line to the remote computer (the testbed target has none).',
  );
}

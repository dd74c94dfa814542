import { connect, type Socket } from 'node:net';
import type { SerialConsole, TerminalBackend } from './types';

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
  kill(): Promise<void> {
    this.finish();
    if (this.sock.closed) return Promise.resolve();
    const closed = new Promise<void>((r) => this.sock.once('close', () => r()));
    this.sock.destroy();
    return closed;
  }
  private finish(): void {
    if (this.done) return;
    this.done = true;
    this.released();
  }
}

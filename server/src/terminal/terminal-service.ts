/**
 * The terminals of the device (issue 12 item 9): the device's shell and the remote computer's
 * serial console over ttyd's protocol. Bounds what clients can open: `perSession` per login
 * session (per address for header credentials) and `total` in all; every terminal ends with
 * its socket, and all of them when the app closes.
 */
import { hostname } from 'node:os';
import type { Logger } from '../log';
import { TooManyRequestsError } from '../errors';
import { CLOSE_POLICY, CLOSE_SLOW, type GuardedSocket } from '../ws/socket-guard';
import type { SerialConsole, TerminalBackend } from '../drivers/serial/types';
import { PtyShell, type ShellOptions } from './backends';
import {
  frame,
  OUT_OUTPUT,
  OUT_PREFERENCES,
  OUT_TITLE,
  parseClient,
  type TermSize,
} from './ttyd-protocol';

export type TerminalTarget = 'device' | 'serial';

export class TooManyTerminalsError extends TooManyRequestsError {}

export const MAX_TERMINALS_PER_SESSION = 4;
export const MAX_TERMINALS_TOTAL = 16;
/** The handshake must come this soon after the upgrade. */
export const HELLO_TIMEOUT_MS = 10_000;
/** Output held unsent over this pauses the shell; it resumes under `RESUME_BELOW`. */
export const PAUSE_ABOVE = 256 * 1024;
export const RESUME_BELOW = 64 * 1024;

/**
 * A shell that prints nothing this long after it was started (a login profile that hangs) is
 * ended with a message (issue 21 item 18; config `terminal.start_timeout_s`).
 */
export const START_TIMEOUT_MS = 30_000;
/**
 * Typing is a use of the login session (it slides its expiry as a request does); checked at
 * most this often per terminal. An idle terminal's session expires and ends it (4001).
 */
export const SESSION_USE_EVERY_MS = 10_000;
/** The close reason of such a shell: `start timeout <seconds>` (the console shows its text). */
export const START_TIMEOUT_REASON = 'start timeout';

const DEFAULT_SIZE: TermSize = { columns: 80, rows: 24 };

export interface TerminalServiceOptions {
  serial: SerialConsole;
  shell?: ShellOptions;
  log: Logger;
  perSession?: number;
  total?: number;
  /** See `START_TIMEOUT_MS`. */
  startTimeoutMs?: number;
}

interface Entry {
  key: string;
  backend: TerminalBackend | null;
  guard: GuardedSocket;
}

export class TerminalService {
  private readonly open = new Set<Entry>();
  /** Terminals being ended (a shell's session takes up to a few seconds): the app waits. */
  private readonly ending = new Set<Promise<void>>();
  private closed = false;

  constructor(private readonly opts: TerminalServiceOptions) {}

  get count(): number {
    return this.open.size;
  }

  /** Throws 429 when `key` (a session) or the device holds as many terminals as allowed. */
  admit(key: string): void {
    if (this.closed) throw new TooManyTerminalsError('The device server is stopping');
    let mine = 0;
    for (const e of this.open) if (e.key === key) mine += 1;
    if (mine >= (this.opts.perSession ?? MAX_TERMINALS_PER_SESSION))
      throw new TooManyTerminalsError('Too many terminals for this session');
    if (this.open.size >= (this.opts.total ?? MAX_TERMINALS_TOTAL))
      throw new TooManyTerminalsError('Too many terminals');
  }

  /**
   * Serves ttyd's protocol on an upgraded, guarded socket until either side ends. `use` marks
   * the socket's login session used (and closes the socket when it has ended).
   */
  attach(guard: GuardedSocket, key: string, target: TerminalTarget, use?: () => void): void {
    if (!guard.open) return;
    try {
      // two upgrades may have passed the check together
      this.admit(key);
    } catch (err) {
      guard.close(CLOSE_SLOW, (err as Error).message);
      return;
    }
    const entry: Entry = { key, backend: null, guard };
    this.open.add(entry);
    let clientPaused = false;
    let drainPaused = false;
    let starting = false;
    let usedAt = 0;
    const helloTimer = setTimeout(
      () => guard.close(CLOSE_POLICY, 'no handshake'),
      HELLO_TIMEOUT_MS,
    );
    helloTimer.unref();
    let startTimer: NodeJS.Timeout | null = null;
    guard.onClose(() => {
      clearTimeout(helloTimer);
      if (startTimer) clearTimeout(startTimer);
      this.open.delete(entry);
      if (entry.backend) this.end(entry.backend);
      entry.backend = null;
    });
    const flow = () => {
      const b = entry.backend;
      if (!b) return;
      if (clientPaused || drainPaused) b.pause();
      else b.resume();
    };
    const output = (data: Buffer) => {
      if (startTimer) {
        clearTimeout(startTimer);
        startTimer = null;
      }
      guard.send(frame(OUT_OUTPUT, data), {
        cb: () => {
          if (drainPaused && guard.bufferedAmount < RESUME_BELOW) {
            drainPaused = false;
            flow();
          }
        },
      });
      if (!drainPaused && guard.bufferedAmount > PAUSE_ABOVE) {
        drainPaused = true;
        flow();
      }
    };
    const start = async (size: TermSize) => {
      let backend: TerminalBackend | string;
      try {
        backend =
          target === 'device'
            ? new PtyShell(size, { log: this.opts.log, ...this.opts.shell })
            : await this.opts.serial.open();
      } catch (err) {
        this.opts.log.warn({ err: (err as Error).message, target }, 'terminal: cannot start');
        backend = `Cannot start the terminal: ${(err as Error).message}`;
      }
      if (typeof backend === 'string') {
        guard.send(frame(OUT_OUTPUT, `\r\n${backend}\r\n`), {
          cb: () => guard.close(1000, 'unavailable'),
        });
        return;
      }
      if (!guard.open) {
        this.end(backend);
        return;
      }
      entry.backend = backend;
      if (target === 'device') {
        // a serial line may well be silent until a key is pressed; a shell prompts
        const ms = this.opts.startTimeoutMs ?? START_TIMEOUT_MS;
        const secs = Math.round(ms / 1000);
        startTimer = setTimeout(() => {
          startTimer = null;
          this.opts.log.warn({ ms }, 'terminal: the shell printed nothing; ended');
          guard.send(
            frame(
              OUT_OUTPUT,
              `\r\n[The shell printed nothing for ${secs} s and was ended: check its login profile.]\r\n`,
            ),
            { cb: () => guard.close(1000, `${START_TIMEOUT_REASON} ${secs}`) },
          );
        }, ms);
        startTimer.unref();
      }
      backend.onData(output);
      backend.onExit((message) => {
        if (message && guard.open) guard.send(frame(OUT_OUTPUT, `\r\n[${message}]\r\n`));
        guard.close(1000, message ?? 'closed');
      });
      flow();
    };
    guard.onMessage((data) => {
      const msg = parseClient(data);
      if (msg.type === 'hello') {
        if (starting) return;
        starting = true;
        clearTimeout(helloTimer);
        const title = target === 'device' ? `Device shell (${hostname()})` : 'Serial console';
        guard.send(frame(OUT_TITLE, title));
        guard.send(frame(OUT_PREFERENCES, '{}'));
        return start(msg.size ?? DEFAULT_SIZE);
      }
      if (!starting) {
        guard.close(CLOSE_POLICY, 'handshake first');
        return;
      }
      switch (msg.type) {
        case 'input':
          if (use && Date.now() - usedAt >= SESSION_USE_EVERY_MS) {
            usedAt = Date.now();
            use();
            if (!guard.open) return;
          }
          entry.backend?.write(msg.data);
          return;
        case 'resize':
          entry.backend?.resize(msg.size);
          return;
        case 'pause':
          clientPaused = true;
          flow();
          return;
        case 'resume':
          clientPaused = false;
          flow();
          return;
        case 'invalid':
          // ttyd ignores what it does not know; so do we
          return;
      }
    });
  }

  private end(backend: TerminalBackend): void {
    const p = backend.kill().finally(() => this.ending.delete(p));
    this.ending.add(p);
  }

  /**
   * App close: every terminal's socket closes, and with it its shell; resolves once every shell's
   * session has ended (at most HANGUP_GRACE_MS + TERM_GRACE_MS and a little).
   */
  async dispose(): Promise<void> {
    this.closed = true;
    for (const e of this.open) {
      if (e.backend) this.end(e.backend);
      e.backend = null;
      e.guard.close(1001, 'server stopping');
    }
    await Promise.all([...this.ending]);
  }
}

/**
 * Our own small QMP client (QEMU Machine Protocol) over a unix socket. The wire: newline-
 * delimited JSON. The server greets (`{"QMP": {"version": ...}}`), the client leaves
 * negotiation mode with `qmp_capabilities`, then sends `{"execute", "arguments", "id"}` and
 * gets `{"return", "id"}` or `{"error": {"class", "desc"}, "id"}`; events
 * (`{"event", "data", "timestamp"}`) may arrive between them at any time.
 * QEMU serves one client per monitor socket: the machine holds the only connection.
 */
import { EventEmitter } from 'node:events';
import { createConnection, type Socket } from 'node:net';
import { openWithin } from './open-within';

/** QEMU's RunState (qapi/run-state.json), as query-status reports it. */
export type QmpRunState =
  | 'debug'
  | 'inmigrate'
  | 'internal-error'
  | 'io-error'
  | 'paused'
  | 'postmigrate'
  | 'prelaunch'
  | 'finish-migrate'
  | 'restore-vm'
  | 'running'
  | 'save-vm'
  | 'shutdown'
  | 'suspended'
  | 'watchdog'
  | 'guest-panicked'
  | 'colo';

export interface QmpVersion {
  qemu: { major: number; minor: number; micro: number };
  package: string;
}

export type QmpInputEvent =
  | {
      type: 'key';
      data: {
        down: boolean;
        key: { type: 'qcode'; data: string } | { type: 'number'; data: number };
      };
    }
  | { type: 'btn'; data: { down: boolean; button: string } }
  | { type: 'abs' | 'rel'; data: { axis: 'x' | 'y'; value: number } };

/** Arguments and results of the commands we use; any other command goes through as unknown. */
export interface QmpCommands {
  qmp_capabilities: { args: { enable?: string[] }; result: Record<string, never> };
  'query-status': {
    args: undefined;
    result: { status: QmpRunState; running: boolean; singlestep?: boolean };
  };
  'query-version': { args: undefined; result: QmpVersion };
  stop: { args: undefined; result: Record<string, never> };
  cont: { args: undefined; result: Record<string, never> };
  system_reset: { args: undefined; result: Record<string, never> };
  system_powerdown: { args: undefined; result: Record<string, never> };
  quit: { args: undefined; result: Record<string, never> };
  'input-send-event': {
    args: { device?: string; head?: number; events: QmpInputEvent[] };
    result: Record<string, never>;
  };
  'blockdev-change-medium': {
    args: {
      id?: string;
      device?: string;
      filename: string;
      format?: string;
      'read-only-mode'?: string;
      force?: boolean;
    };
    result: Record<string, never>;
  };
  eject: { args: { id?: string; device?: string; force?: boolean }; result: Record<string, never> };
  screendump: {
    args: { filename: string; device?: string; format?: 'ppm' | 'png' };
    result: Record<string, never>;
  };
  device_add: {
    args: { driver: string; id?: string; [prop: string]: unknown };
    result: Record<string, never>;
  };
  device_del: { args: { id: string }; result: Record<string, never> };
  'blockdev-add': { args: Record<string, unknown>; result: Record<string, never> };
  'blockdev-del': { args: { 'node-name': string }; result: Record<string, never> };
}

/** Data of the events we care about (qapi/run-state.json, qdev.json, block.json). */
export interface QmpEventData {
  STOP: Record<string, never>;
  RESUME: Record<string, never>;
  SHUTDOWN: { guest: boolean; reason: string };
  RESET: { guest: boolean; reason: string };
  POWERDOWN: Record<string, never>;
  SUSPEND: Record<string, never>;
  WAKEUP: Record<string, never>;
  GUEST_PANICKED: { action: string };
  DEVICE_DELETED: { device?: string; path: string };
  DEVICE_TRAY_MOVED: { device: string; id: string; 'tray-open': boolean };
}

export interface QmpEvent<D = Record<string, unknown>> {
  event: string;
  data: D;
  timestamp: { seconds: number; microseconds: number };
}

type Args<K extends keyof QmpCommands> = QmpCommands[K]['args'];

export type QmpClientEvents = {
  /** Every event, whatever its name. */
  event: [event: QmpEvent];
  /** The socket closed (QEMU exited, or close() was called); pending commands were rejected. */
  close: [error: Error | null];
} & { [K in keyof QmpEventData]: [data: QmpEventData[K], event: QmpEvent<QmpEventData[K]>] };

/** QEMU answered a command with an error: `qmpClass` is QMP's class (e.g. `DeviceNotFound`). */
export class QmpCommandError extends Error {
  constructor(
    readonly command: string,
    readonly qmpClass: string,
    readonly desc: string,
  ) {
    super(`${command}: ${qmpClass}: ${desc}`);
    this.name = 'QmpCommandError';
  }
}

export class QmpTimeoutError extends Error {
  constructor(
    readonly command: string,
    timeoutMs: number,
  ) {
    super(`${command}: no answer from QEMU in ${timeoutMs} ms`);
    this.name = 'QmpTimeoutError';
  }
}

export class QmpClosedError extends Error {
  constructor(detail = 'QMP connection closed') {
    super(detail);
    this.name = 'QmpClosedError';
  }
}

interface Pending {
  command: string;
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

export interface QmpConnectOptions {
  /** For the greeting and qmp_capabilities. */
  timeoutMs?: number;
  /** Default per command. */
  commandTimeoutMs?: number;
}

export class QmpClient extends EventEmitter<QmpClientEvents> {
  private nextId = 1;
  private readonly pending = new Map<string, Pending>();
  private buffer = '';
  private closed = false;
  private greeting: ((version: QmpVersion) => void) | null = null;
  private _version: QmpVersion | null = null;
  readonly commandTimeoutMs: number;

  private constructor(
    private readonly socket: Socket,
    opts: QmpConnectOptions,
  ) {
    super();
    this.commandTimeoutMs = opts.commandTimeoutMs ?? 10_000;
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => this.onData(chunk));
    socket.on('error', (err) => this.shutdown(err));
    socket.on('close', () => this.shutdown(null));
  }

  /** Connects, reads the greeting and leaves negotiation mode. */
  static async connect(path: string, opts: QmpConnectOptions = {}): Promise<QmpClient> {
    const timeoutMs = opts.timeoutMs ?? 5000;
    const socket = createConnection(path);
    const client = new QmpClient(socket, opts);
    const greeted = new Promise<void>((resolve, reject) => {
      client.greeting = (version) => {
        client._version = version;
        resolve();
      };
      client.once('close', (err) =>
        reject(err ?? new QmpClosedError('closed before the greeting')),
      );
    });
    return openWithin(client, greeted, {
      timeoutMs,
      timeoutError: () => new QmpTimeoutError('greeting', timeoutMs),
      then: async () => {
        await client.execute('qmp_capabilities', {}, { timeoutMs });
      },
    });
  }

  /** The QEMU version from the greeting. */
  get version(): QmpVersion {
    return this._version as QmpVersion;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  execute<K extends keyof QmpCommands>(
    command: K,
    ...rest: Args<K> extends undefined
      ? [args?: undefined, opts?: { timeoutMs?: number }]
      : [args: Args<K>, opts?: { timeoutMs?: number }]
  ): Promise<QmpCommands[K]['result']>;
  execute<T = unknown>(
    command: string,
    args?: Record<string, unknown>,
    opts?: { timeoutMs?: number },
  ): Promise<T>;
  execute(
    command: string,
    args?: Record<string, unknown>,
    opts: { timeoutMs?: number } = {},
  ): Promise<unknown> {
    if (this.closed) return Promise.reject(new QmpClosedError());
    const id = String(this.nextId++);
    const timeoutMs = opts.timeoutMs ?? this.commandTimeoutMs;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new QmpTimeoutError(command, timeoutMs));
      }, timeoutMs);
      this.pending.set(id, { command, resolve, reject, timer });
      const message: Record<string, unknown> = { execute: command, id };
      if (args !== undefined) message['arguments'] = args;
      this.socket.write(`${JSON.stringify(message)}\n`);
    });
  }

  /** Closes the socket; pending commands are rejected with QmpClosedError. */
  close(): void {
    this.socket.destroy();
    this.shutdown(null);
  }

  private onData(chunk: string): void {
    this.buffer += chunk;
    let nl: number;
    while ((nl = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, nl).trim();
      this.buffer = this.buffer.slice(nl + 1);
      if (line) this.onMessage(line);
    }
  }

  private onMessage(line: string): void {
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return; // not QMP: ignore rather than tear down the machine's only control channel
    }
    if ('QMP' in msg) {
      const info = msg['QMP'] as { version: QmpVersion };
      this.greeting?.(info.version);
      this.greeting = null;
      return;
    }
    if (typeof msg['event'] === 'string') {
      const event = {
        event: msg['event'],
        data: (msg['data'] ?? {}) as Record<string, unknown>,
        timestamp: msg['timestamp'] as QmpEvent['timestamp'],
      };
      this.emit('event', event);
      // Known names are typed in QmpClientEvents; any other name is emitted too, untyped.
      (this.emit as (name: string, ...args: unknown[]) => boolean)(event.event, event.data, event);
      return;
    }
    const id = msg['id'] === undefined ? undefined : String(msg['id']);
    const pending = id === undefined ? undefined : this.pending.get(id);
    if (!pending || id === undefined) return; // an answer after its timeout
    this.pending.delete(id);
    clearTimeout(pending.timer);
    if ('error' in msg) {
      const e = msg['error'] as { class?: string; desc?: string };
      pending.reject(new QmpCommandError(pending.command, e.class ?? 'GenericError', e.desc ?? ''));
    } else {
      pending.resolve(msg['return']);
    }
  }

  private shutdown(err: Error | null): void {
    if (this.closed) return;
    this.closed = true;
    for (const [, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new QmpClosedError(`${p.command}: QMP connection closed`));
    }
    this.pending.clear();
    this.emit('close', err);
  }
}

/** Connects to a socket QEMU may not have created yet (it appears 40-70 ms after spawn). */
export async function connectQmpWithRetry(
  path: string,
  timeoutMs: number,
  opts: QmpConnectOptions & { isAlive?: () => boolean } = {},
): Promise<QmpClient> {
  const deadline = performance.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      return await QmpClient.connect(path, {
        ...opts,
        timeoutMs: Math.max(500, Math.min(opts.timeoutMs ?? 5000, deadline - performance.now())),
      });
    } catch (err) {
      last = err;
    }
    if (performance.now() > deadline || opts.isAlive?.() === false) {
      throw new Error(`QMP at ${path}: ${(last as Error).message}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

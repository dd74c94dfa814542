/**
 * One device's agent socket on this replica (docs/cloud.md "The agent socket"): the `hello`/
 * `welcome` exchange, heartbeats, commands, the streams the tunnel opens, TURN renewal.
 *
 * Bounds: a frame over AGENT_MAX_FRAME closes with 1009 (ws's maxPayload does it before the
 * bytes are buffered); a malformed frame, a frame the device may not send, or a stream sending
 * past its window closes with 1008; at most AGENT_MAX_STREAMS streams, each holding at most one
 * window per direction; at most MAX_PENDING_COMMANDS commands waiting for their `res`.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { WebSocket } from 'ws';
import {
  AGENT_MAX_FRAME,
  AGENT_MAX_STREAMS,
  STREAM_HEADER_BYTES,
  decodeStreamFrame,
  encodeStreamFrame,
  parseAgentControl,
  type AgentCommand,
  type AgentControl,
  type DeviceIdentity,
  type FleetTurn,
  type StreamKind,
} from '@kvm/protocol';
import type { FleetDevice } from '../context';
import { turnRenewMs } from '../turn';
import {
  DeviceBusyError,
  DeviceCommandError,
  DeviceOfflineError,
  DeviceTimeoutError,
} from './errors';
import {
  ReceiveWindow,
  SendWindow,
  StreamClosedError,
  type OpenedStream,
  type StreamEvents,
  type StreamOpen,
} from './stream';

export const MAX_PENDING_COMMANDS = 32;
/** The largest stream payload one agent frame carries. */
export const MAX_STREAM_PAYLOAD = AGENT_MAX_FRAME - STREAM_HEADER_BYTES;

/** Close codes of the agent socket (4000-4999 are the application's). */
export const CLOSE = {
  normal: 1000,
  goingAway: 1001,
  policy: 1008,
  tooBig: 1009,
  replaced: 4000,
  dead: 4001,
  unbound: 4002,
} as const;

export interface AgentConnectionOptions {
  /** Silence after which the socket is dead (AGENT_DEAD_MS). */
  deadMs: number;
  /** The `hello` must come within this. */
  helloMs: number;
  maxStreams: number;
  /** The `welcome`'s fields, computed when the `hello` comes. */
  welcome(): { replica: string; endpoints: string[]; ping_ms: number };
  /** Fresh TURN credentials for this device (null: none configured). */
  turn(): FleetTurn | null;
}

export const DEFAULT_AGENT_OPTIONS: Omit<AgentConnectionOptions, 'welcome' | 'turn'> = {
  deadMs: 60_000,
  helloMs: 10_000,
  maxStreams: AGENT_MAX_STREAMS,
};

interface PendingCommand {
  resolve(v: unknown): void;
  reject(e: Error): void;
  timer: NodeJS.Timeout;
}

/** Frames a device may send, and those only after its `hello`. */
const FROM_DEVICE = new Set(['hello', 'ping', 'pong', 'res', 'head', 'ack', 'end', 'unbound']);

function isStringRecord(v: unknown): v is Record<string, string> {
  return (
    typeof v === 'object' &&
    v !== null &&
    !Array.isArray(v) &&
    Object.values(v).every((x) => typeof x === 'string')
  );
}

/** The fields of a device frame the relay relies on, checked beyond parseAgentControl. */
function wellFormed(f: AgentControl): boolean {
  switch (f.t) {
    case 'hello':
      return typeof f.version === 'string' && typeof f.identity === 'object' && f.identity !== null;
    case 'ping':
    case 'pong':
      return typeof f.ts === 'number';
    case 'res':
      return Number.isInteger(f.id) && typeof f.ok === 'boolean';
    case 'head':
      return (
        Number.isInteger(f.status) &&
        f.status >= 100 &&
        f.status <= 599 &&
        isStringRecord(f.headers) &&
        (f.protocol === undefined || typeof f.protocol === 'string')
      );
    case 'ack':
      return Number.isInteger(f.n) && f.n >= 0;
    case 'end':
      return (
        (f.code === undefined || Number.isInteger(f.code)) &&
        (f.reason === undefined || typeof f.reason === 'string')
      );
    default:
      return true;
  }
}

class LocalStream implements OpenedStream {
  readonly sendWin = new SendWindow();
  readonly recvWin = new ReceiveWindow();
  private localEnded = false;
  done = false;

  constructor(
    readonly sid: number,
    readonly kind: 'http' | 'ws',
    readonly events: StreamEvents,
    private readonly conn: AgentConnection,
  ) {}

  writable(n: number): Promise<void> {
    if (this.done || this.localEnded) return Promise.reject(new StreamClosedError('stream ended'));
    return this.sendWin.wait(n);
  }

  send(kind: StreamKind, payload: Uint8Array): void {
    if (this.done || this.localEnded) throw new StreamClosedError('stream ended');
    if (payload.byteLength > MAX_STREAM_PAYLOAD) {
      throw new StreamClosedError(`a frame carries at most ${MAX_STREAM_PAYLOAD} bytes`);
    }
    this.sendWin.take(payload.byteLength);
    this.conn.sendBinary(encodeStreamFrame(this.sid, kind, payload));
  }

  ack(n: number): void {
    if (this.done) return;
    const k = this.recvWin.ack(n);
    if (k > 0) this.conn.sendControl({ t: 'ack', sid: this.sid, n: k });
  }

  end(code?: number, reason?: string): void {
    if (this.done || this.localEnded) return;
    this.localEnded = true;
    this.conn.sendControl({
      t: 'end',
      sid: this.sid,
      ...(code !== undefined ? { code } : {}),
      ...(reason ? { reason } : {}),
    });
    // A socket is over once either side closes; an http stream waits for the response's end.
    if (this.kind === 'ws') this.conn.finish(this, null);
  }

  abort(reason: string): void {
    if (this.done) return;
    // http: an `end` with a code from the fleet means "drop it" (the browser left).
    if (!this.localEnded) this.conn.sendControl({ t: 'end', sid: this.sid, code: 1001, reason });
    this.localEnded = true;
    this.conn.finish(this, null);
  }
}

export class AgentConnection {
  /** Tells this connection apart from the device's next one (replacement across replicas). */
  readonly connId = randomBytes(8).toString('hex');
  readonly connectedAt = Date.now();
  state: 'hello' | 'ready' | 'closed' = 'hello';
  hello: { version: string; identity: DeviceIdentity } | null = null;
  /** Why it closed: `replaced` and `unbound` closes leave presence to whoever comes next. */
  closeCode: number | null = null;

  private lastSeen = Date.now();
  private nextSid = 1;
  private nextCmd = 1;
  private readonly streams = new Map<number, LocalStream>();
  private readonly pending = new Map<number, PendingCommand>();
  private readonly timers: NodeJS.Timeout[] = [];
  private turnTimer: NodeJS.Timeout | null = null;
  private readonly closedWaiters: Array<() => void> = [];

  /** Called once when the socket is gone (after streams and commands were failed). */
  onClose: (code: number, reason: string) => void = () => undefined;
  /** The device unbound itself (`unbound` frame). */
  onUnbound: () => void = () => undefined;
  /** The `hello` came and the `welcome` went. */
  onReady: () => void = () => undefined;

  constructor(
    private readonly ws: WebSocket,
    readonly device: FleetDevice,
    private readonly opts: AgentConnectionOptions,
    private readonly log: Logger,
  ) {
    ws.on('message', (data, isBinary) => this.onMessage(data as Buffer | Buffer[], isBinary));
    ws.on('close', (code, reason) => this.closed(code, reason.toString()));
    ws.on('error', (err) => this.log.debug({ err, device: device.id }, 'agent socket error'));
    // Any ws-level pong counts as life too.
    ws.on('pong', () => this.seen());
    const helloTimer = setTimeout(() => {
      if (this.state === 'hello') this.close(CLOSE.policy, 'hello expected');
    }, opts.helloMs);
    const tick = Math.max(250, Math.min(5000, Math.floor(opts.deadMs / 4)));
    const deadTimer = setInterval(() => {
      if (Date.now() - this.lastSeen > opts.deadMs) {
        this.log.info({ device: device.id }, 'agent socket silent: dead');
        this.closeCode = CLOSE.dead;
        // A dead peer does not answer a close handshake.
        ws.terminate();
      }
    }, tick);
    this.timers.push(helloTimer, deadTimer);
  }

  get deviceId(): string {
    return this.device.id;
  }

  get openStreams(): number {
    return this.streams.size;
  }

  /** Resolves once the socket is closed. */
  whenClosed(): Promise<void> {
    if (this.state === 'closed') return Promise.resolve();
    return new Promise((r) => this.closedWaiters.push(r));
  }

  // ---- what the fleet does with the device --------------------------------------------------

  /** Opens a stream (tunnelled request or socket); DeviceBusyError past the streams' limit. */
  open(spec: StreamOpen, events: StreamEvents): OpenedStream {
    if (this.state !== 'ready') throw new DeviceOfflineError();
    if (this.streams.size >= this.opts.maxStreams) throw new DeviceBusyError();
    const sid = this.nextSid;
    this.nextSid = this.nextSid >= 0xffffffff ? 1 : this.nextSid + 1;
    const s = new LocalStream(sid, spec.kind, events, this);
    this.streams.set(sid, s);
    this.sendControl({ t: 'open', sid, ...spec });
    return s;
  }

  /** Sends a command and waits for its `res` (DeviceTimeoutError after `timeoutMs`). */
  command(
    name: AgentCommand,
    args: Record<string, unknown> | undefined,
    timeoutMs: number,
  ): Promise<unknown> {
    if (this.state !== 'ready') return Promise.reject(new DeviceOfflineError());
    if (this.pending.size >= MAX_PENDING_COMMANDS) return Promise.reject(new DeviceBusyError());
    const id = this.nextCmd++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new DeviceTimeoutError(`The device did not answer ${name} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      this.sendControl({ t: 'cmd', id, name, ...(args ? { args } : {}) });
    });
  }

  /** The fleet removed the binding: tell the device, then close. */
  notifyUnbound(): void {
    if (this.state === 'closed') return;
    this.sendControl({ t: 'unbound', by: 'fleet' });
    this.close(CLOSE.unbound, 'unbound');
  }

  close(code: number, reason: string): void {
    if (this.state === 'closed') return;
    this.closeCode ??= code;
    this.ws.close(code, reason);
    // A peer that never answers the close handshake is cut after a second.
    const t = setTimeout(() => this.ws.terminate(), 1000);
    t.unref();
  }

  // ---- frames -------------------------------------------------------------------------------

  sendControl(frame: AgentControl): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    this.ws.send(JSON.stringify(frame));
  }

  sendBinary(frame: Uint8Array): void {
    if (this.ws.readyState !== this.ws.OPEN) throw new StreamClosedError('agent socket closed');
    this.ws.send(frame);
  }

  /** Forgets a stream; `end` given: tell its opener. */
  finish(s: LocalStream, end: { code?: number; reason?: string } | null): void {
    if (s.done) return;
    s.done = true;
    this.streams.delete(s.sid);
    s.sendWin.close();
    if (end) s.events.end(end.code, end.reason);
  }

  private seen(): void {
    this.lastSeen = Date.now();
  }

  private violation(reason: string): void {
    this.log.warn({ device: this.device.id, reason }, 'agent protocol violation: closing');
    this.close(CLOSE.policy, reason.slice(0, 120));
  }

  private onMessage(data: Buffer | Buffer[], isBinary: boolean): void {
    if (this.state === 'closed') return;
    this.seen();
    const buf = Array.isArray(data) ? Buffer.concat(data) : data;
    if (buf.byteLength > AGENT_MAX_FRAME) {
      this.close(CLOSE.tooBig, 'frame too large');
      return;
    }
    if (isBinary) this.onBinary(buf);
    else this.onControl(buf.toString('utf8'));
  }

  private onBinary(buf: Buffer): void {
    if (this.state !== 'ready') return this.violation('stream bytes before hello');
    const f = decodeStreamFrame(buf);
    if (!f) return this.violation('malformed stream frame');
    const s = this.streams.get(f.sid);
    // Bytes of a stream that just ended on this side: dropped.
    if (!s) return;
    if (!s.recvWin.receive(f.payload.byteLength)) return this.violation('stream window exceeded');
    s.events.data(f.kind, f.payload);
  }

  private onControl(text: string): void {
    const f = parseAgentControl(text);
    if (!f || !FROM_DEVICE.has(f.t) || !wellFormed(f)) return this.violation('malformed frame');
    if (this.state === 'hello') {
      if (f.t !== 'hello') return this.violation('hello expected');
      this.hello = { version: f.version, identity: f.identity };
      this.state = 'ready';
      const turn = this.opts.turn();
      this.sendControl({ t: 'welcome', ...this.opts.welcome(), turn });
      this.scheduleTurn(turn);
      this.onReady();
      return;
    }
    switch (f.t) {
      case 'hello':
        return this.violation('second hello');
      case 'ping':
        return this.sendControl({ t: 'pong', ts: f.ts });
      case 'pong':
        return;
      case 'res': {
        const p = this.pending.get(f.id);
        if (!p) return;
        this.pending.delete(f.id);
        clearTimeout(p.timer);
        if (f.ok) p.resolve(f.result);
        else p.reject(new DeviceCommandError(`${f.error}: ${f.message}`));
        return;
      }
      case 'head': {
        const s = this.streams.get(f.sid);
        if (!s) return;
        s.events.head({
          status: f.status,
          headers: f.headers,
          ...(f.protocol ? { protocol: f.protocol } : {}),
        });
        return;
      }
      case 'ack': {
        const s = this.streams.get(f.sid);
        if (!s) return;
        if (!s.sendWin.release(f.n)) return this.violation('ack of bytes never sent');
        s.events.acked?.(f.n);
        return;
      }
      case 'end': {
        const s = this.streams.get(f.sid);
        if (!s) return;
        this.finish(s, {
          ...(f.code !== undefined ? { code: f.code } : {}),
          ...(f.reason !== undefined ? { reason: f.reason } : {}),
        });
        return;
      }
      case 'unbound':
        this.onUnbound();
        this.close(CLOSE.normal, 'unbound');
        return;
      default:
        return this.violation('unexpected frame');
    }
  }

  private scheduleTurn(turn: FleetTurn | null): void {
    if (!turn || this.state !== 'ready') return;
    if (this.turnTimer) clearTimeout(this.turnTimer);
    this.turnTimer = setTimeout(() => {
      const next = this.opts.turn();
      this.sendControl({ t: 'turn', turn: next });
      this.scheduleTurn(next);
    }, turnRenewMs(turn));
  }

  private closed(code: number, reason: string): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.closeCode ??= code;
    for (const t of this.timers) clearTimeout(t);
    if (this.turnTimer) clearTimeout(this.turnTimer);
    for (const s of [...this.streams.values()]) {
      this.finish(s, { code: 1011, reason: 'device disconnected' });
    }
    for (const [, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new DeviceOfflineError('The device disconnected'));
    }
    this.pending.clear();
    this.onClose(this.closeCode, reason);
    for (const w of this.closedWaiters.splice(0)) w();
  }
}

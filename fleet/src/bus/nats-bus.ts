/**
 * The replicas' bus (docs/cloud.md "Replicas"): NATS joins the fleet's replicas so a device on
 * replica A is reachable from a browser on replica B.
 *
 * Subjects:
 * - `kvm.replica`: every replica's presence {replica, url, ts} each `presenceMs`, `gone: true`
 *   when it stops; a replica unheard for `presenceGoneMs` is gone (killed), and the streams
 *   through it end.
 * - `kvm.dev.<deviceId>.<verb>`: subscribed by the replica holding the device's socket only, so
 *   NATS's "no responders" says offline at once. Verbs: `open` and `cmd` (request/reply),
 *   `ping` (is it here?), `unbound` (tell the device), `replaced` (the device's newer socket is on
 *   another replica: drop this one).
 * - `kvm.stream.<key>.up` (opener → holder) and `.down` (holder → opener): one stream's frames.
 *   Byte 0 is 0 for a JSON control frame (`head`, `ack`, `end`), else the stream kind (1-3),
 *   with 0x80 set when the message continues in the next one (a WebSocket message over 64 KiB
 *   is cut, NATS carries at most 1 MB and the fleet keeps to STREAM_CHUNK).
 * The window is end to end: the holder passes bytes and `ack`s straight through, so neither
 * replica buffers more than a window of a stream (nor does NATS).
 */
import { randomBytes } from 'node:crypto';
import {
  ErrorCode,
  connect,
  type Msg,
  type NatsConnection,
  type NatsError,
  type Subscription,
} from 'nats';
import type { Logger } from 'pino';
import type { AgentCommand, StreamKind } from '@kvm/protocol';
import type { FleetConfig } from '../context';
import {
  DeviceBusyError,
  DeviceCommandError,
  DeviceOfflineError,
  DeviceTimeoutError,
} from '../agents/errors';
import type { Relay, RelayBus } from '../agents/relay';
import {
  ReceiveWindow,
  SendWindow,
  StreamClosedError,
  type OpenedStream,
  type StreamEvents,
  type StreamHead,
  type StreamOpen,
} from '../agents/stream';

export interface NatsBusOptions {
  /** How often a replica says it is alive. */
  presenceMs: number;
  /** Unheard this long: the replica is gone. */
  presenceGoneMs: number;
  /** How long a stream open or a ping may take between replicas. */
  requestTimeoutMs: number;
}

/** The largest payload of one stream message on NATS. */
export const STREAM_CHUNK = 64 * 1024;
const PRESENCE = 'kvm.replica';
const DEVICE_RE = /^[A-Za-z0-9_-]{1,64}$/;
const MORE = 0x80;

const enc = new TextEncoder();
const dec = new TextDecoder();

function json(v: unknown): Uint8Array {
  return enc.encode(JSON.stringify(v));
}

function parse(data: Uint8Array): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(dec.decode(data));
    return typeof v === 'object' && v !== null && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

type StreamControl =
  | { t: 'head'; head: StreamHead }
  | { t: 'ack'; n: number }
  | { t: 'end'; code?: number; reason?: string; abort?: boolean };

function control(c: StreamControl): Uint8Array {
  const body = json(c);
  const out = new Uint8Array(body.byteLength + 1);
  out.set(body, 1);
  return out;
}

/** Publishes `payload` as one or more stream messages (≤ STREAM_CHUNK each). */
function publishData(
  nc: NatsConnection,
  subject: string,
  kind: StreamKind,
  payload: Uint8Array,
): void {
  let off = 0;
  do {
    const part = payload.subarray(off, off + STREAM_CHUNK);
    off += part.byteLength;
    const more = off < payload.byteLength && kind !== 1;
    const msg = new Uint8Array(part.byteLength + 1);
    msg[0] = kind | (more ? MORE : 0);
    msg.set(part, 1);
    nc.publish(subject, msg);
  } while (off < payload.byteLength);
}

/** Joins cut WebSocket messages again; http data passes as it comes. */
class Reassembler {
  private parts: Uint8Array[] = [];

  constructor(private readonly onMessage: (kind: StreamKind, payload: Uint8Array) => void) {}

  push(head: number, payload: Uint8Array): void {
    const kind = (head & ~MORE) as StreamKind;
    if (head & MORE) {
      this.parts.push(payload);
      return;
    }
    if (this.parts.length === 0) return this.onMessage(kind, payload);
    this.parts.push(payload);
    const whole = Buffer.concat(this.parts);
    this.parts = [];
    this.onMessage(kind, whole);
  }
}

/** Opener's side of a stream held by another replica. */
class RemoteStream implements OpenedStream {
  readonly key = randomBytes(12).toString('hex');
  readonly sendWin = new SendWindow();
  readonly recvWin = new ReceiveWindow();
  holder = '';
  done = false;
  private localEnded = false;
  sub: Subscription | null = null;

  constructor(
    private readonly nc: NatsConnection,
    readonly kind: 'http' | 'ws',
    readonly events: StreamEvents,
    private readonly forget: (s: RemoteStream) => void,
  ) {}

  get up(): string {
    return `kvm.stream.${this.key}.up`;
  }

  get down(): string {
    return `kvm.stream.${this.key}.down`;
  }

  writable(n: number): Promise<void> {
    if (this.done || this.localEnded) return Promise.reject(new StreamClosedError('stream ended'));
    return this.sendWin.wait(n);
  }

  send(kind: StreamKind, payload: Uint8Array): void {
    if (this.done || this.localEnded) throw new StreamClosedError('stream ended');
    this.sendWin.take(payload.byteLength);
    publishData(this.nc, this.up, kind, payload);
  }

  ack(n: number): void {
    if (this.done) return;
    const k = this.recvWin.ack(n);
    if (k > 0) this.nc.publish(this.up, control({ t: 'ack', n: k }));
  }

  end(code?: number, reason?: string): void {
    if (this.done || this.localEnded) return;
    this.localEnded = true;
    this.nc.publish(
      this.up,
      control({ t: 'end', ...(code !== undefined ? { code } : {}), ...(reason ? { reason } : {}) }),
    );
    if (this.kind === 'ws') this.finish(null);
  }

  abort(reason: string): void {
    if (this.done) return;
    this.nc.publish(this.up, control({ t: 'end', code: 1001, reason, abort: true }));
    this.finish(null);
  }

  finish(end: { code?: number; reason?: string } | null): void {
    if (this.done) return;
    this.done = true;
    this.sendWin.close();
    this.sub?.unsubscribe();
    this.forget(this);
    if (end) this.events.end(end.code, end.reason);
  }

  readonly reassembler = new Reassembler((kind, payload) => this.events.data(kind, payload));

  onDown(data: Uint8Array): void {
    if (this.done || data.byteLength === 0) return;
    const head = data[0]!;
    if (head !== 0) {
      const payload = data.subarray(1);
      if (!this.recvWin.receive(payload.byteLength)) {
        this.abort('window exceeded');
        this.events.end(1011, 'window exceeded');
        return;
      }
      this.reassembler.push(head, payload);
      return;
    }
    const c = parse(data.subarray(1)) as StreamControl | null;
    if (!c) return;
    if (c.t === 'head') this.events.head(c.head);
    else if (c.t === 'ack' && typeof c.n === 'number') {
      if (this.sendWin.release(c.n)) this.events.acked?.(c.n);
    } else if (c.t === 'end') {
      this.finish({
        ...(c.code !== undefined ? { code: c.code } : {}),
        ...(c.reason !== undefined ? { reason: c.reason } : {}),
      });
    }
  }
}

/** Holder's side: a local stream carried to and from the opener's replica. */
interface Bridge {
  from: string;
  stream: OpenedStream;
  sub: Subscription;
  done: boolean;
}

export class NatsBus implements RelayBus {
  private readonly replicas = new Map<string, { url: string; seen: number }>();
  private readonly held = new Map<string, Subscription>();
  private readonly remotes = new Set<RemoteStream>();
  private readonly bridges = new Set<Bridge>();
  private timer: NodeJS.Timeout | null = null;
  private closing = false;
  /** Between a disconnect and the reconnect: other replicas' devices are offline at once. */
  private connected = true;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly config: FleetConfig,
    private readonly relay: Relay,
    private readonly log: Logger,
    private readonly opts: NatsBusOptions,
  ) {}

  static async connect(
    config: FleetConfig,
    relay: Relay,
    log: Logger,
    opts: NatsBusOptions,
  ): Promise<NatsBus> {
    const nc = await connect({
      servers: config.nats,
      name: config.replica,
      // NATS unreachable at start: the replica does not start (its unit restarts it). Lost
      // later: the replica serves its own devices, refuses others' and keeps trying.
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
    });
    const bus = new NatsBus(nc, config, relay, log.child({ part: 'bus' }), opts);
    bus.start();
    return bus;
  }

  get replica(): string {
    return this.config.replica;
  }

  private start(): void {
    this.nc.subscribe(PRESENCE, { callback: (_e, m) => this.onPresence(m) });
    this.announce();
    this.timer = setInterval(() => {
      this.announce();
      this.sweep();
    }, this.opts.presenceMs);
    void (async () => {
      for await (const s of this.nc.status()) {
        if (s.type === 'reconnect') {
          this.connected = true;
          this.log.info({ server: s.data }, 'NATS reconnected');
          this.announce();
        } else if (s.type === 'disconnect') {
          this.connected = false;
          this.log.warn({ server: s.data }, 'NATS disconnected');
        }
      }
    })().catch(() => undefined);
  }

  private announce(): void {
    if (this.nc.isClosed()) return;
    this.nc.publish(
      PRESENCE,
      json({ replica: this.replica, url: this.config.publicUrl, ts: Date.now() }),
    );
  }

  private onPresence(m: Msg): void {
    const p = parse(m.data);
    if (!p || typeof p.replica !== 'string' || p.replica === this.replica) return;
    if (p.gone === true) {
      if (this.replicas.delete(p.replica)) this.replicaGone(p.replica);
      return;
    }
    if (typeof p.url !== 'string') return;
    this.replicas.set(p.replica, { url: p.url, seen: Date.now() });
  }

  private sweep(): void {
    const limit = Date.now() - this.opts.presenceGoneMs;
    for (const [name, r] of this.replicas) {
      if (r.seen < limit) {
        this.replicas.delete(name);
        this.replicaGone(name);
      }
    }
  }

  /** A replica stopped or was killed: the streams through it end. */
  private replicaGone(name: string): void {
    this.log.info({ replica: name }, 'replica gone');
    for (const r of [...this.remotes])
      if (r.holder === name) r.finish({ code: 1011, reason: 'replica gone' });
    for (const b of [...this.bridges]) if (b.from === name) this.endBridge(b, 'replica gone');
  }

  /** Streams this replica carries for others, and others carry for it (tests, metrics). */
  get streamCounts(): { bridged: number; remote: number } {
    return { bridged: this.bridges.size, remote: this.remotes.size };
  }

  /** Live replicas (this one included): name → public URL. */
  liveReplicas(): Map<string, string> {
    const out = new Map<string, string>([[this.replica, this.config.publicUrl]]);
    for (const [name, r] of this.replicas) out.set(name, r.url);
    return out;
  }

  replicaUrls(): string[] {
    return [...this.liveReplicas().values()];
  }

  // ---- the devices this replica holds ------------------------------------------------------

  hold(deviceId: string, connId: string): void {
    if (!DEVICE_RE.test(deviceId)) return;
    if (!this.held.has(deviceId)) {
      const sub = this.nc.subscribe(`kvm.dev.${deviceId}.*`, {
        callback: (_e, m) => this.onDevice(deviceId, m),
      });
      this.held.set(deviceId, sub);
    }
    this.nc.publish(
      `kvm.dev.${deviceId}.replaced`,
      json({ replica: this.replica, connId, at: Date.now() }),
    );
  }

  release(deviceId: string): void {
    this.held.get(deviceId)?.unsubscribe();
    this.held.delete(deviceId);
  }

  private onDevice(deviceId: string, m: Msg): void {
    const verb = m.subject.slice(m.subject.lastIndexOf('.') + 1);
    const body = parse(m.data) ?? {};
    const conn = this.relay.localConnection(deviceId);
    switch (verb) {
      case 'replaced':
        if (body.replica !== this.replica && typeof body.connId === 'string') {
          this.relay.replacedElsewhere(
            deviceId,
            body.connId,
            typeof body.at === 'number' ? body.at : Date.now(),
          );
        }
        return;
      case 'unbound':
        conn?.notifyUnbound();
        return;
      case 'ping':
        if (conn?.state === 'ready') m.respond(json({ replica: this.replica }));
        return;
      case 'cmd':
        void this.onCommand(m, body);
        return;
      case 'open':
        this.onOpen(deviceId, m, body);
        return;
      default:
        return;
    }
  }

  private async onCommand(m: Msg, body: Record<string, unknown>): Promise<void> {
    const deviceId = m.subject.split('.')[2]!;
    try {
      const result = await this.relay.command(
        deviceId,
        body.name as AgentCommand,
        (body.args as Record<string, unknown> | undefined) ?? undefined,
        typeof body.timeoutMs === 'number' ? body.timeoutMs : 10_000,
      );
      m.respond(json({ ok: true, result }));
    } catch (err) {
      const e = err as Error & { wireName?: string };
      m.respond(json({ ok: false, error: e.wireName ?? e.name, message: e.message }));
    }
  }

  private onOpen(deviceId: string, m: Msg, body: Record<string, unknown>): void {
    const key = body.key;
    const from = body.from;
    const spec = body.open as StreamOpen | undefined;
    if (
      typeof key !== 'string' ||
      !/^[0-9a-f]{24}$/.test(key) ||
      typeof from !== 'string' ||
      !spec
    ) {
      m.respond(json({ ok: false, error: 'DeviceOfflineError', message: 'bad open request' }));
      return;
    }
    const conn = this.relay.localConnection(deviceId);
    if (!conn || conn.state !== 'ready') {
      m.respond(json({ ok: false, error: 'DeviceOfflineError', message: 'The device is offline' }));
      return;
    }
    const down = `kvm.stream.${key}.down`;
    const nc = this.nc;
    // eslint-disable-next-line prefer-const
    let bridge: Bridge;
    const events: StreamEvents = {
      head: (head) => nc.publish(down, control({ t: 'head', head })),
      data: (kind, payload) => publishData(nc, down, kind, payload),
      end: (code, reason) => {
        nc.publish(
          down,
          control({
            t: 'end',
            ...(code !== undefined ? { code } : {}),
            ...(reason !== undefined ? { reason } : {}),
          }),
        );
        if (bridge) this.dropBridge(bridge);
      },
      acked: (n) => nc.publish(down, control({ t: 'ack', n })),
    };
    let stream: OpenedStream;
    try {
      stream = conn.open(spec, events);
    } catch (err) {
      const e = err as Error & { wireName?: string };
      m.respond(json({ ok: false, error: e.wireName ?? 'DeviceOfflineError', message: e.message }));
      return;
    }
    const reassembler = new Reassembler((kind, payload) => {
      try {
        stream.send(kind, payload);
      } catch {
        this.endBridge(bridge, 'send failed');
      }
    });
    const sub = nc.subscribe(`kvm.stream.${key}.up`, {
      callback: (_e, msg) => {
        if (bridge.done || msg.data.byteLength === 0) return;
        const h = msg.data[0]!;
        if (h !== 0) return reassembler.push(h, msg.data.subarray(1));
        const c = parse(msg.data.subarray(1)) as StreamControl | null;
        if (!c) return;
        if (c.t === 'ack' && typeof c.n === 'number') stream.ack(c.n);
        else if (c.t === 'end') {
          if (c.abort) {
            stream.abort(c.reason ?? 'aborted');
            this.dropBridge(bridge);
          } else {
            stream.end(c.code, c.reason);
            // A socket is over once either side closes (an http stream waits for its response).
            if (spec.kind === 'ws') this.dropBridge(bridge);
          }
        }
      },
    });
    bridge = { from, stream, sub, done: false };
    this.bridges.add(bridge);
    m.respond(json({ ok: true, replica: this.replica }));
  }

  private dropBridge(b: Bridge): void {
    if (b.done) return;
    b.done = true;
    b.sub.unsubscribe();
    this.bridges.delete(b);
  }

  /** Ends a bridge from this side: the device's stream is dropped, the opener told. */
  private endBridge(b: Bridge, reason: string): void {
    if (b.done) return;
    b.stream.abort(reason);
    this.dropBridge(b);
  }

  // ---- reaching a device on another replica ------------------------------------------------

  /** Refuses at once while the bus is down (rather than after a request's timeout). */
  private ensureUp(deviceId: string): void {
    if (!DEVICE_RE.test(deviceId) || this.closing) throw new DeviceOfflineError();
    if (!this.connected) {
      throw new DeviceOfflineError("The device is not on this replica and the fleet's bus is down");
    }
  }

  private requestError(err: unknown): Error {
    const code = (err as NatsError).code;
    if (code === ErrorCode.NoResponders) return new DeviceOfflineError();
    if (code === ErrorCode.Timeout)
      return new DeviceTimeoutError('The replica holding the device did not answer');
    return new DeviceOfflineError(`The fleet's bus failed: ${(err as Error).message}`);
  }

  private static answerError(a: Record<string, unknown>): Error {
    const message = typeof a.message === 'string' ? a.message : 'failed';
    switch (a.error) {
      case 'DeviceBusyError':
        return new DeviceBusyError(message);
      case 'DeviceTimeoutError':
        return new DeviceTimeoutError(message);
      case 'DeviceOfflineError':
        return new DeviceOfflineError(message);
      default:
        return new DeviceCommandError(message);
    }
  }

  async openRemote(
    deviceId: string,
    spec: StreamOpen,
    events: StreamEvents,
  ): Promise<OpenedStream> {
    this.ensureUp(deviceId);
    const s = new RemoteStream(this.nc, spec.kind, events, (x) => this.remotes.delete(x));
    s.sub = this.nc.subscribe(s.down, { callback: (_e, m) => s.onDown(m.data) });
    // Counted before the request: a short answer (head, body, end) can come down and finish
    // the stream before the request's reply is taken, and a stream added after its finish
    // would stay in the set for ever.
    this.remotes.add(s);
    let answer: Record<string, unknown>;
    try {
      const msg = await this.nc.request(
        `kvm.dev.${deviceId}.open`,
        json({ key: s.key, from: this.replica, open: spec }),
        { timeout: this.opts.requestTimeoutMs },
      );
      answer = parse(msg.data) ?? {};
    } catch (err) {
      s.finish(null);
      throw this.requestError(err);
    }
    if (answer.ok !== true || typeof answer.replica !== 'string') {
      s.finish(null);
      throw NatsBus.answerError(answer);
    }
    s.holder = answer.replica;
    // Gone between its answer and now: end at once rather than wait for a head.
    if (!this.liveReplicas().has(s.holder)) s.finish({ code: 1011, reason: 'replica gone' });
    return s;
  }

  async command(
    deviceId: string,
    name: AgentCommand,
    args: Record<string, unknown> | undefined,
    timeoutMs: number,
  ): Promise<unknown> {
    this.ensureUp(deviceId);
    let answer: Record<string, unknown>;
    try {
      const msg = await this.nc.request(
        `kvm.dev.${deviceId}.cmd`,
        json({ name, args, timeoutMs }),
        { timeout: timeoutMs + 2000 },
      );
      answer = parse(msg.data) ?? {};
    } catch (err) {
      throw this.requestError(err);
    }
    if (answer.ok === true) return answer.result;
    throw NatsBus.answerError(answer);
  }

  async online(deviceId: string): Promise<boolean> {
    if (!DEVICE_RE.test(deviceId) || !this.connected || this.closing) return false;
    try {
      await this.nc.request(`kvm.dev.${deviceId}.ping`, json({}), {
        timeout: this.opts.requestTimeoutMs,
      });
      return true;
    } catch {
      return false;
    }
  }

  async notifyUnbound(deviceId: string): Promise<void> {
    if (!DEVICE_RE.test(deviceId)) return;
    this.nc.publish(`kvm.dev.${deviceId}.unbound`, json({ from: this.replica }));
    await this.nc.flush();
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    if (this.timer) clearInterval(this.timer);
    for (const r of [...this.remotes]) r.finish({ code: 1001, reason: 'replica stopping' });
    for (const b of [...this.bridges]) this.endBridge(b, 'replica stopping');
    try {
      this.nc.publish(PRESENCE, json({ replica: this.replica, gone: true }));
      await this.nc.flush();
    } catch {
      // the bus is gone already
    }
    await this.nc.close();
  }
}

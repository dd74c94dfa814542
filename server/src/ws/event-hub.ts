/**
 * The clients of `/api/ws`: the initial burst, broadcasts, pings, and the handlers later
 * subsystems add for client messages (HID ops 1-5 and JSON events, wire-protocol.md 2.8).
 */
import { EventEmitter } from 'node:events';
import type { WebSocket } from 'ws';
import { BINARY_PING, BINARY_PONG, KVMD_COMPAT_VERSION } from '@kvm/protocol';
import type { StateEvent, StateRegistry } from './state-registry';

export interface HubClient {
  readonly id: number;
  readonly socket: WebSocket;
  /** The session token and its SHA-256, null for header-authenticated clients. */
  readonly token: string | null;
  readonly sessionHash: string | null;
  readonly stream: boolean;
  readonly remote: string;
}

export type JsonHandler = (client: HubClient, event: Record<string, unknown>) => void;
/** Gets the whole frame, op byte included. */
export type BinaryHandler = (client: HubClient, frame: Buffer) => void;

interface Logger {
  debug(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

/** Close code for a session that ended (logout, expiry, password change). */
export const CLOSE_SESSION_ENDED = 4001;
const PROTOCOL_PING_MS = 15_000;

export class EventHub extends EventEmitter<{
  connect: [HubClient];
  disconnect: [HubClient];
  streamClients: [number];
}> {
  private readonly clients = new Map<number, HubClient & { alive: boolean }>();
  private readonly jsonHandlers = new Map<string, JsonHandler>();
  private readonly binaryHandlers = new Map<number, BinaryHandler>();
  private nextId = 1;
  private readonly pingTimer: NodeJS.Timeout;
  private readonly offRegistry: () => void;

  constructor(
    private readonly registry: StateRegistry,
    private readonly log: Logger,
    private readonly onPing: (client: HubClient) => void,
  ) {
    super();
    this.offRegistry = registry.onChange((event) => this.broadcast(event));
    this.pingTimer = setInterval(() => this.protocolPing(), PROTOCOL_PING_MS);
    this.pingTimer.unref();
  }

  /** Registers the handler of a client JSON event type (e.g. `key`, `mouse_move`). */
  onJson(eventType: string, handler: JsonHandler): void {
    this.jsonHandlers.set(eventType, handler);
  }

  /** Registers the handler of a binary op (1-5 for HID). */
  onBinary(op: number, handler: BinaryHandler): void {
    this.binaryHandlers.set(op, handler);
  }

  get streamClientCount(): number {
    let n = 0;
    for (const c of this.clients.values()) if (c.stream) n += 1;
    return n;
  }

  get size(): number {
    return this.clients.size;
  }

  async accept(
    socket: WebSocket,
    info: { token: string | null; sessionHash: string | null; stream: boolean; remote: string },
  ): Promise<void> {
    const client = { id: this.nextId++, socket, alive: true, ...info };
    // Messages that arrive during the burst are queued by ws until we attach; attach now so
    // a ping sent right after open is answered.
    socket.on('message', (data, isBinary) => this.receive(client, data as Buffer, isBinary));
    socket.on('pong', () => {
      client.alive = true;
    });
    socket.on('close', () => this.drop(client));
    socket.on('error', (err) => this.log.debug({ err, client: client.id }, 'ws error'));
    this.clients.set(client.id, client);
    this.send(client, { event_type: 'loop', event: { version: { ...KVMD_COMPAT_VERSION } } });
    const events = await this.registry.snapshot((name, err) =>
      this.log.warn({ err, provider: name }, 'state provider failed its snapshot'),
    );
    for (const event of events) this.send(client, event);
    this.emit('connect', client);
    if (client.stream) this.emit('streamClients', this.streamClientCount);
  }

  broadcast(event: StateEvent): void {
    const text = JSON.stringify(event);
    for (const c of this.clients.values()) {
      if (c.socket.readyState === c.socket.OPEN) c.socket.send(text);
    }
  }

  send(client: HubClient, event: StateEvent): void {
    if (client.socket.readyState === client.socket.OPEN) client.socket.send(JSON.stringify(event));
  }

  /** Closes the sockets of an ended session. */
  endSession(sessionHash: string, reason: string): void {
    for (const c of this.clients.values()) {
      if (c.sessionHash === sessionHash) c.socket.close(CLOSE_SESSION_ENDED, reason.slice(0, 100));
    }
  }

  private receive(client: HubClient, data: Buffer, isBinary: boolean): void {
    if (isBinary) {
      if (data.length === 0) return;
      const op = data[0]!;
      if (op === BINARY_PING) {
        client.socket.send(Buffer.from([BINARY_PONG]));
        return;
      }
      const handler = this.binaryHandlers.get(op);
      if (handler) this.safely(() => handler(client, data));
      return;
    }
    let frame: unknown;
    try {
      frame = JSON.parse(data.toString('utf8'));
    } catch {
      this.log.debug({ client: client.id }, 'ws: not JSON, ignored');
      return;
    }
    const { event_type: type, event } = (frame ?? {}) as { event_type?: unknown; event?: unknown };
    if (
      typeof type !== 'string' ||
      typeof event !== 'object' ||
      event === null ||
      Array.isArray(event)
    ) {
      this.log.debug({ client: client.id }, 'ws: malformed frame, ignored');
      return;
    }
    if (type === 'ping') {
      this.onPing(client);
      this.send(client, { event_type: 'pong', event: {} });
      return;
    }
    const handler = this.jsonHandlers.get(type);
    if (handler) this.safely(() => handler(client, event as Record<string, unknown>));
  }

  private safely(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.log.warn({ err }, 'ws handler failed');
    }
  }

  private drop(client: HubClient & { alive: boolean }): void {
    if (!this.clients.delete(client.id)) return;
    this.emit('disconnect', client);
    if (client.stream) this.emit('streamClients', this.streamClientCount);
  }

  private protocolPing(): void {
    for (const c of this.clients.values()) {
      if (!c.alive) {
        c.socket.terminate();
        this.drop(c);
        continue;
      }
      c.alive = false;
      try {
        c.socket.ping();
      } catch {
        // closed under us; the close event drops it
      }
    }
  }

  close(): void {
    clearInterval(this.pingTimer);
    this.offRegistry();
    for (const c of this.clients.values()) c.socket.terminate();
    this.clients.clear();
  }
}

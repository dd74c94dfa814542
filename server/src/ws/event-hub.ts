/**
 * The clients of `/api/ws`: the initial burst, broadcasts, pings, and the handlers later
 * subsystems add for client messages (HID ops 1-5 and JSON events, wire-protocol.md 2.8).
 * Every client sits behind a GuardedSocket (socket-guard.ts): its budgets, its send bound.
 */
import { EventEmitter } from 'node:events';
import type { WebSocket } from 'ws';
import { BINARY_PING, BINARY_PONG, KVMD_COMPAT_VERSION } from '@kvm/protocol';
import type { StateEvent, StateRegistry } from './state-registry';
import {
  EVENT_SOCKET_LIMITS,
  type GuardedSocket,
  type SocketOwner,
  type SocketRegistry,
} from './socket-guard';
import type { Logger } from '../log';

export interface HubClient {
  readonly id: number;
  readonly socket: WebSocket;
  readonly guard: GuardedSocket;
  /** The session token and its SHA-256, null for header-authenticated clients. */
  readonly token: string | null;
  readonly sessionHash: string | null;
  readonly stream: boolean;
  readonly remote: string;
}

export type JsonHandler = (client: HubClient, event: Record<string, unknown>) => void;
/** Gets the whole frame, op byte included. */
export type BinaryHandler = (client: HubClient, frame: Buffer) => void;

export { CLOSE_SESSION_ENDED } from './socket-guard';
const PROTOCOL_PING_MS = 15_000;
const PONG_TEXT = JSON.stringify({ event_type: 'pong', event: {} });

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
    private readonly sockets: SocketRegistry,
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

  async accept(socket: WebSocket, owner: SocketOwner & { stream: boolean }): Promise<void> {
    const guard = this.sockets.guard(socket, owner, EVENT_SOCKET_LIMITS);
    if (!guard.open) return;
    const client = {
      id: this.nextId++,
      socket,
      guard,
      alive: true,
      token: owner.token,
      sessionHash: owner.tokenHash,
      stream: owner.stream,
      remote: owner.remote,
    };
    // Messages that arrive during the burst are queued by ws until we attach; attach now so
    // a ping sent right after open is answered.
    guard.onMessage((data, isBinary) => this.receive(client, data, isBinary));
    socket.on('pong', () => {
      client.alive = true;
    });
    guard.onClose(() => this.drop(client));
    this.clients.set(client.id, client);
    this.send(client, { event_type: 'loop', event: { version: { ...KVMD_COMPAT_VERSION } } });
    const events = await this.registry.snapshot((name, err) =>
      this.log.warn({ err, provider: name }, 'state provider failed its snapshot'),
    );
    // The client may have gone (or been closed as too slow) while the snapshot was taken.
    if (!this.clients.has(client.id)) return;
    for (const event of events) this.send(client, event);
    this.emit('connect', client);
    if (client.stream) this.emit('streamClients', this.streamClientCount);
    this.broadcastClients();
  }

  /**
   * kvmd 4.2xx's `clients` event, `{"count": <clients of /api/ws with stream=1>}`: broadcast
   * after each new client's burst (so it gets it too) and when a client leaves.
   */
  private broadcastClients(): void {
    this.broadcast({ event_type: 'clients', event: { count: this.streamClientCount } });
  }

  /** State events are essential: a client whose buffer is full is closed, not left stale. */
  broadcast(event: StateEvent): void {
    const text = JSON.stringify(event);
    for (const c of this.clients.values()) c.guard.send(text, { essential: true });
  }

  send(client: HubClient, event: StateEvent): void {
    client.guard.send(JSON.stringify(event), { essential: true });
  }

  private receive(client: HubClient, data: Buffer, isBinary: boolean): void {
    if (isBinary) {
      if (data.length === 0) return;
      const op = data[0]!;
      if (op === BINARY_PING) {
        client.guard.replyWith(Buffer.from([BINARY_PONG]));
        return;
      }
      const handler = this.binaryHandlers.get(op);
      // A throw closes this client (socket-guard.ts), never the process.
      handler?.(client, data);
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
      // The session check slides the session: answered pings only, so a flood costs nothing.
      if (client.guard.replyWith(PONG_TEXT)) this.onPing(client);
      return;
    }
    const handler = this.jsonHandlers.get(type);
    handler?.(client, event as Record<string, unknown>);
  }

  private drop(client: HubClient & { alive: boolean }): void {
    if (!this.clients.delete(client.id)) return;
    this.emit('disconnect', client);
    if (client.stream) this.emit('streamClients', this.streamClientCount);
    this.broadcastClients();
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

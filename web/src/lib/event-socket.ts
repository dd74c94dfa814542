/**
 * Client of the event socket `/api/ws` (docs/events.md). A plain class with an explicit state
 * machine; React only subscribes.
 *
 *   idle ──connect()──▶ connecting ──open──▶ open
 *     ▲                     │                 │
 *     │                     └──── close ──────┴──▶ closed ──connect()──▶ connecting
 *     └─────────────── (never returns to idle)
 *
 * connect() on a live socket drops it and opens a fresh one (the heartbeat re-creates sockets
 * after a lost connection, SPEC 4). close() is deliberate and final until the next connect().
 * Subscribers are kept across re-creation, so stores subscribe once. Every move is checked
 * against EVENT_SOCKET_TRANSITIONS (an illegal one throws in tests).
 */
import type { EventFrame, InfoEvent, LoopEvent } from '@kvm/protocol/events';
import { checkTransition, type TransitionMap } from '@kvm/protocol/transitions';
import { socketUrl } from './base';

/**
 * Payload type per event_type. Later subsystems augment it:
 * `declare module '.../lib/event-socket' { interface EventPayloads { hid: HidState } }`.
 */
export interface EventPayloads {
  loop: LoopEvent;
  pong: Record<string, never>;
  info: InfoEvent;
}

export type EventSocketState = 'idle' | 'connecting' | 'open' | 'closed';

/**
 * connect() leads to connecting from every state (on connecting it only replaces the socket);
 * close() and the socket's own close lead to closed. Nothing returns to idle.
 */
export const EVENT_SOCKET_TRANSITIONS: TransitionMap<EventSocketState> = {
  idle: ['connecting', 'closed'],
  connecting: ['open', 'closed'],
  open: ['connecting', 'closed'],
  closed: ['connecting'],
};

/** The parts of a browser WebSocket used here (tests pass a fake). */
export interface WebSocketLike {
  binaryType: BinaryType;
  send(data: string | ArrayBuffer | ArrayBufferView): void;
  close(code?: number, reason?: string): void;
  onopen: ((event: Event) => void) | null;
  onclose: ((event: CloseEvent) => void) | null;
  onmessage: ((event: MessageEvent) => void) | null;
  onerror: ((event: Event) => void) | null;
}

export type WebSocketFactory = (url: string) => WebSocketLike;

/** Close code the server uses when the session ends (logout, expiry, password change). */
export const SESSION_ENDED_CLOSE_CODE = 4001;

/**
 * ws:// or wss:// after the page's protocol. The cookie authenticates by itself; the token from
 * local storage goes along as `?auth_token=` for hosts where the cookie does not (webviews).
 */
export function eventSocketUrl(
  location: { protocol: string; host: string },
  token: string | null,
  stream?: boolean,
): string {
  const params = new URLSearchParams();
  if (stream !== undefined) params.set('stream', stream ? '1' : '0');
  if (token) params.set('auth_token', token);
  const search = params.toString();
  return socketUrl(location, `/api/ws${search ? `?${search}` : ''}`);
}

type Handler = (event: unknown) => void;

export interface EventSocketOptions {
  /** Evaluated on every connect, so a new token is picked up. */
  url: () => string;
  createSocket?: WebSocketFactory;
}

export class EventSocket {
  private readonly options: EventSocketOptions;
  private socket: WebSocketLike | null = null;
  private state: EventSocketState = 'idle';
  private readonly handlers = new Map<string, Set<Handler>>();
  private readonly anyHandlers = new Set<(frame: EventFrame) => void>();
  private readonly binaryHandlers = new Set<(data: ArrayBuffer) => void>();
  private readonly closeHandlers = new Set<(code: number) => void>();
  private readonly stateListeners = new Set<() => void>();

  constructor(options: EventSocketOptions) {
    this.options = options;
  }

  getState = (): EventSocketState => this.state;

  subscribeState = (listener: () => void): (() => void) => {
    this.stateListeners.add(listener);
    return () => this.stateListeners.delete(listener);
  };

  /** Opens the socket, replacing a live one. */
  connect(): void {
    this.detach();
    const create =
      this.options.createSocket ?? ((url: string) => new WebSocket(url) as WebSocketLike);
    const socket = create(this.options.url());
    socket.binaryType = 'arraybuffer';
    socket.onopen = () => {
      if (this.socket === socket) this.setState('open');
    };
    socket.onclose = (event) => {
      if (this.socket !== socket) return;
      this.socket = null;
      this.setState('closed');
      for (const handler of this.closeHandlers) handler(event.code);
    };
    // An error is always followed by close; nothing to do here.
    socket.onerror = () => undefined;
    socket.onmessage = (event) => {
      if (this.socket === socket) this.receive(event.data);
    };
    this.socket = socket;
    this.setState('connecting');
  }

  /** Deliberate close: no close handlers run. */
  close(): void {
    this.detach();
    this.setState('closed');
  }

  /** Sends a JSON frame; false when the socket is not open. */
  send(frame: EventFrame): boolean {
    if (this.state !== 'open' || !this.socket) return false;
    this.socket.send(JSON.stringify(frame));
    return true;
  }

  /** Sends a binary frame `[op:u8][payload]`; false when the socket is not open. */
  sendBinary(data: ArrayBuffer | ArrayBufferView): boolean {
    if (this.state !== 'open' || !this.socket) return false;
    this.socket.send(data);
    return true;
  }

  /** Subscribes to one event_type; returns the unsubscribe function. */
  on<K extends keyof EventPayloads>(
    type: K,
    handler: (event: EventPayloads[K]) => void,
  ): () => void;
  on(type: string, handler: (event: unknown) => void): () => void;
  on(type: string, handler: Handler): () => void {
    let set = this.handlers.get(type);
    if (!set) {
      set = new Set();
      this.handlers.set(type, set);
    }
    set.add(handler);
    return () => set.delete(handler);
  }

  /** Every JSON frame, whatever its type. */
  onAny(handler: (frame: EventFrame) => void): () => void {
    this.anyHandlers.add(handler);
    return () => this.anyHandlers.delete(handler);
  }

  onBinary(handler: (data: ArrayBuffer) => void): () => void {
    this.binaryHandlers.add(handler);
    return () => this.binaryHandlers.delete(handler);
  }

  /** Runs when the server or the network closes the socket (not on close()). */
  onClose(handler: (code: number) => void): () => void {
    this.closeHandlers.add(handler);
    return () => this.closeHandlers.delete(handler);
  }

  private receive(data: unknown): void {
    if (data instanceof ArrayBuffer) {
      for (const handler of this.binaryHandlers) handler(data);
      return;
    }
    if (typeof data !== 'string') return;
    let frame: unknown;
    try {
      frame = JSON.parse(data);
    } catch {
      return; // Not JSON: ignored, as the server ignores what it does not understand.
    }
    if (typeof frame !== 'object' || frame === null) return;
    const { event_type: type, event } = frame as Partial<EventFrame>;
    if (typeof type !== 'string') return;
    const typed: EventFrame = { event_type: type, event };
    for (const handler of this.handlers.get(type) ?? []) handler(event);
    for (const handler of this.anyHandlers) handler(typed);
  }

  /** Drops the current socket without running close handlers; true if there was one. */
  private detach(): boolean {
    const socket = this.socket;
    if (!socket) return false;
    this.socket = null;
    socket.onopen = null;
    socket.onclose = null;
    socket.onmessage = null;
    socket.onerror = null;
    try {
      socket.close();
    } catch {
      // Closing a socket that never opened may throw in some engines.
    }
    return true;
  }

  private setState(state: EventSocketState): void {
    if (!checkTransition('EventSocket', EVENT_SOCKET_TRANSITIONS, this.state, state)) return;
    this.state = state;
    for (const listener of this.stateListeners) listener();
  }
}

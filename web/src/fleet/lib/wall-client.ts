/**
 * The screen wall's socket (protocol/src/fleet.ts WALL_PATH): a plain class, React only renders
 * what it holds. It sends `watch` with the ids on screen (at most WALL_MAX_WATCH), `pause` while
 * the tab is hidden and `resume` when it shows again; it keeps each device's latest state and
 * picture (an object URL, the previous one revoked) and reconnects with full-jitter backoff.
 *
 * States: idle → connecting → open → (closed → connecting ...); stop() from any → stopped;
 * start() from idle or stopped.
 */
import { WALL_MAX_WATCH, WALL_PATH, type WallServerFrame } from '@kvm/protocol/fleet';

export type WallState = 'idle' | 'connecting' | 'open' | 'closed' | 'stopped';

export interface WallTile {
  online: boolean;
  signal: boolean;
  /** When the picture was taken (ms), or null. */
  at: number | null;
  /** An object URL of the latest JPEG, or null. */
  url: string | null;
}

export interface WallSocketLike {
  binaryType: BinaryType;
  onopen: ((ev: Event) => void) | null;
  onclose: ((ev: CloseEvent) => void) | null;
  onmessage: ((ev: MessageEvent) => void) | null;
  onerror: ((ev: Event) => void) | null;
  send(data: string): void;
  close(): void;
}

export interface WallClientDeps {
  socket: (url: string) => WallSocketLike;
  createUrl: (blob: Blob) => string;
  revokeUrl: (url: string) => void;
  random: () => number;
  setTimer: (fn: () => void, ms: number) => unknown;
  clearTimer: (t: unknown) => void;
  /** The socket's URL (ws(s)://<this host>/cloud-basic/v1/wall/ws). */
  url: string;
}

const ALLOWED: Record<WallState, WallState[]> = {
  idle: ['connecting', 'stopped'],
  connecting: ['open', 'closed', 'stopped'],
  open: ['closed', 'stopped'],
  closed: ['connecting', 'stopped'],
  // a page shown again (React's StrictMode mounts twice) starts it again
  stopped: ['connecting'],
};

/** The binary frame: u8 length of the id, the id (ASCII), then the JPEG. Null when malformed. */
export function parseWallPicture(
  buf: ArrayBuffer,
): { id: string; jpeg: Uint8Array<ArrayBuffer> } | null {
  const bytes = new Uint8Array(buf);
  const n = bytes[0];
  if (n === undefined || n === 0 || bytes.length < 1 + n) return null;
  let id = '';
  for (let i = 1; i <= n; i += 1) id += String.fromCharCode(bytes[i] ?? 0);
  return { id, jpeg: bytes.subarray(1 + n) };
}

function defaultDeps(): WallClientDeps {
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return {
    socket: (url) => new WebSocket(url),
    createUrl: (blob) => URL.createObjectURL(blob),
    revokeUrl: (url) => URL.revokeObjectURL(url),
    random: Math.random,
    setTimer: (fn, ms) => setTimeout(fn, ms),
    clearTimer: (t) => clearTimeout(t as ReturnType<typeof setTimeout>),
    url: `${proto}//${location.host}${WALL_PATH}`,
  };
}

export class WallClient {
  private state: WallState = 'idle';
  private ws: WallSocketLike | null = null;
  private watched: string[] = [];
  private paused = false;
  private attempt = 0;
  private timer: unknown = null;
  private readonly tiles = new Map<string, WallTile>();
  private readonly listeners = new Set<() => void>();
  private version = 0;
  private readonly deps: WallClientDeps;

  constructor(deps: Partial<WallClientDeps> = {}) {
    this.deps = { ...defaultDeps(), ...deps };
  }

  getState(): WallState {
    return this.state;
  }

  /** Changes with every update (for useSyncExternalStore). */
  getVersion = (): number => this.version;

  tile(id: string): WallTile | undefined {
    return this.tiles.get(id);
  }

  subscribe = (fn: () => void): (() => void) => {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  };

  start(): void {
    if (this.state === 'idle' || this.state === 'stopped') {
      this.attempt = 0;
      this.connect();
    }
  }

  /** The ids on screen now (replaces the last list). */
  watch(ids: string[]): void {
    this.watched = [...new Set(ids)].slice(0, WALL_MAX_WATCH);
    this.send({ t: 'watch', ids: this.watched });
  }

  /** document.visibilityState: hidden pauses the fleet's snapshots for this socket. */
  setVisible(visible: boolean): void {
    if (this.paused === !visible) return;
    this.paused = !visible;
    this.send({ t: visible ? 'resume' : 'pause' });
  }

  stop(): void {
    if (this.state === 'stopped') return;
    this.setState('stopped');
    if (this.timer !== null) this.deps.clearTimer(this.timer);
    this.timer = null;
    const ws = this.ws;
    this.ws = null;
    if (ws) {
      ws.onclose = null;
      ws.onmessage = null;
      ws.close();
    }
    for (const tile of this.tiles.values()) if (tile.url) this.deps.revokeUrl(tile.url);
    this.tiles.clear();
    this.changed();
  }

  private setState(next: WallState): void {
    if (!ALLOWED[this.state].includes(next)) {
      throw new Error(`WallClient: ${this.state} -> ${next} is not allowed`);
    }
    this.state = next;
    this.changed();
  }

  private changed(): void {
    this.version += 1;
    for (const fn of this.listeners) fn();
  }

  private send(frame: { t: string; ids?: string[] }): void {
    if (this.state === 'open') this.ws?.send(JSON.stringify(frame));
  }

  private connect(): void {
    this.setState('connecting');
    const ws = this.deps.socket(this.deps.url);
    this.ws = ws;
    ws.binaryType = 'arraybuffer';
    ws.onopen = () => {
      if (this.ws !== ws) return;
      this.attempt = 0;
      this.setState('open');
      // a new socket knows nothing: the list and the pause again
      this.send({ t: 'watch', ids: this.watched });
      if (this.paused) this.send({ t: 'pause' });
    };
    ws.onmessage = (ev) => this.onMessage(ev.data);
    ws.onerror = () => undefined;
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.setState('closed');
      // full jitter: random() · min(30 s, 0.5 s · 2^n)
      const ms = this.deps.random() * Math.min(30_000, 500 * 2 ** this.attempt);
      this.attempt += 1;
      this.timer = this.deps.setTimer(() => {
        this.timer = null;
        if (this.state === 'closed') this.connect();
      }, ms);
    };
  }

  private onMessage(data: unknown): void {
    if (typeof data === 'string') {
      let frame: WallServerFrame;
      try {
        frame = JSON.parse(data) as WallServerFrame;
      } catch {
        return;
      }
      if (frame.t !== 'state' || typeof frame.id !== 'string') return;
      const old = this.tiles.get(frame.id);
      this.tiles.set(frame.id, {
        online: frame.online,
        signal: frame.signal,
        at: frame.at,
        url: old?.url ?? null,
      });
      this.changed();
      return;
    }
    if (!(data instanceof ArrayBuffer)) return;
    const pic = parseWallPicture(data);
    if (!pic) return;
    const old = this.tiles.get(pic.id);
    const url = this.deps.createUrl(new Blob([pic.jpeg], { type: 'image/jpeg' }));
    if (old?.url) this.deps.revokeUrl(old.url);
    this.tiles.set(pic.id, {
      online: old?.online ?? true,
      signal: true,
      // pictures come only when they changed: this one is new now
      at: Date.now(),
      url,
    });
    this.changed();
  }
}

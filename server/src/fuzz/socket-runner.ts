/**
 * Sends generated frames over `/api/ws`, `/api/media/ws` and `/janus/ws` of a listening server
 * and checks after every few frames that each socket still answers a ping. A socket the
 * server closes is reopened (closing a misbehaving client is allowed; the code is counted); a
 * close with 1011, or a fresh socket that does not answer, is a finding.
 */
import WebSocket from 'ws';
import { SOCKET_PATHS, type FuzzFrame, type JanusIds, type SocketKind } from './generator';
import type { Findings } from './oracle';
import { snippet } from './oracle';

export class ServerGone extends Error {}

/**
 * The first probe of a socket waits this long; a silent socket is then replaced and the fresh
 * one gets `probeTimeoutMs`. (Observed: /janus/ws now and then leaves one ping unanswered
 * while answering the next; counted in `probesDropped`, reported, not a finding on its own.)
 */
const FIRST_PROBE_MS = 2000;

interface Conn {
  ws: WebSocket;
  open: Promise<void>;
  answers: number;
  closed: boolean;
  /** janus: transaction -> verb (and session) of requests in flight. */
  pending: Map<string, { verb: string; session: unknown }>;
  /** The last frame sent on this socket, for a finding's example. */
  last: string;
}

export interface SocketStats {
  frames: number;
  opened: number;
  closes: Record<string, number>;
  refused: Record<string, number>;
  probesDropped: number;
}

export interface SocketFuzzerOptions {
  /** `ws://127.0.0.1:<port>` */
  base: string;
  /** The run's session token (read at each connect: a re-login changes it). */
  token: () => string;
  findings: Findings;
  localAddress?: string;
  probeEvery?: number;
  probeTimeoutMs?: number;
  /** Before a frame goes out (the long run keeps the last few). */
  onSend?: (frame: FuzzFrame) => void;
}

function describeFrame(frame: FuzzFrame): string {
  const data =
    typeof frame.data === 'string'
      ? JSON.stringify(snippet(frame.data, 300))
      : `hex ${frame.data.subarray(0, 64).toString('hex')}${frame.data.length > 64 ? `… (${frame.data.length} B)` : ''}`;
  return `${SOCKET_PATHS[frame.socket]} ${frame.binary ? 'binary' : 'text'} ${data}`;
}

export { describeFrame };

export class SocketFuzzer {
  readonly stats: SocketStats = {
    frames: 0,
    opened: 0,
    closes: {},
    refused: {},
    probesDropped: 0,
  };
  readonly janusIds: JanusIds = { sessions: [], handles: [] };
  private readonly conns = new Map<SocketKind, Conn>();
  private readonly sinceProbe = new Map<SocketKind, number>();
  /** Per-socket pause between frames, ms: doubled after each close for a rate (1008). */
  private readonly pace = new Map<SocketKind, number>();
  private probeSeq = 0;

  constructor(private readonly opts: SocketFuzzerOptions) {}

  async send(frame: FuzzFrame): Promise<void> {
    const conn = await this.conn(frame.socket);
    this.opts.onSend?.(frame);
    if (frame.socket === 'janus' && typeof frame.data === 'string') this.track(conn, frame.data);
    conn.last = describeFrame(frame);
    conn.ws.send(frame.data, { binary: frame.binary });
    this.stats.frames += 1;
    const pause = this.pace.get(frame.socket) ?? 0;
    if (pause > 0) await new Promise((r) => setTimeout(r, pause));
    // Our own send buffer: wait rather than grow it without bound.
    while (conn.ws.bufferedAmount > 4 * 1024 * 1024 && !conn.closed) {
      await new Promise((r) => setTimeout(r, 5));
    }
    const n = (this.sinceProbe.get(frame.socket) ?? 0) + 1;
    this.sinceProbe.set(frame.socket, n);
    if (n >= (this.opts.probeEvery ?? 25)) {
      this.sinceProbe.set(frame.socket, 0);
      await this.check(frame.socket, describeFrame(frame));
    }
  }

  /** Probes every socket kind (opening it if needed). */
  async checkAll(): Promise<void> {
    for (const kind of Object.keys(SOCKET_PATHS) as SocketKind[]) await this.check(kind, 'final');
  }

  close(): void {
    for (const c of this.conns.values()) c.ws.terminate();
    this.conns.clear();
  }

  /** The socket answers a probe; a silent one is retried on a fresh socket, then a finding. */
  private async check(kind: SocketKind, after: string): Promise<void> {
    const conn = await this.conn(kind);
    if (await this.probe(conn, kind, FIRST_PROBE_MS)) return;
    if (conn.closed) return; // closed meanwhile: counted in closes, reopened next time
    this.stats.probesDropped += 1;
    conn.ws.terminate();
    this.conns.delete(kind);
    const fresh = await this.conn(kind);
    if (!(await this.probe(fresh, kind, this.opts.probeTimeoutMs ?? 5000))) {
      this.opts.findings.add(
        'socket-unresponsive',
        SOCKET_PATHS[kind],
        'a fresh socket does not answer a ping',
        `after ${after}`,
      );
    }
  }

  private probe(conn: Conn, kind: SocketKind, timeoutMs: number): Promise<boolean> {
    const before = conn.answers;
    if (conn.closed) return Promise.resolve(false);
    if (kind === 'ws') conn.ws.send(JSON.stringify({ event_type: 'ping', event: {} }));
    else if (kind === 'media') conn.ws.send(Buffer.from([0x00]), { binary: true });
    else conn.ws.send(JSON.stringify({ janus: 'ping', transaction: `probe-${++this.probeSeq}` }));
    const deadline = performance.now() + timeoutMs;
    return new Promise((resolve) => {
      const tick = (): void => {
        if (conn.answers > before) resolve(true);
        else if (conn.closed || performance.now() > deadline) resolve(false);
        else setTimeout(tick, 5);
      };
      tick();
    });
  }

  private track(conn: Conn, text: string): void {
    try {
      const req = JSON.parse(text) as Record<string, unknown>;
      if (req && typeof req['transaction'] === 'string' && typeof req['janus'] === 'string') {
        conn.pending.set(req['transaction'], { verb: req['janus'], session: req['session_id'] });
        if (conn.pending.size > 1000) conn.pending.delete(conn.pending.keys().next().value!);
      }
    } catch {
      // not JSON: nothing to track
    }
  }

  private onJanus(conn: Conn, text: string): void {
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return;
    }
    if (msg['janus'] === 'pong') conn.answers += 1;
    const tx = typeof msg['transaction'] === 'string' ? msg['transaction'] : null;
    const sent = tx ? conn.pending.get(tx) : undefined;
    if (!sent || !tx) return;
    conn.pending.delete(tx);
    const id = (msg['data'] as { id?: unknown } | undefined)?.id;
    if (msg['janus'] !== 'success' || typeof id !== 'number') return;
    const ids = this.janusIds;
    if (sent.verb === 'create') ids.sessions.push(id);
    if (sent.verb === 'attach' && typeof sent.session === 'number')
      ids.handles.push({ session: sent.session, handle: id });
    if (ids.sessions.length > 16) ids.sessions.shift();
    if (ids.handles.length > 32) ids.handles.shift();
  }

  private async conn(kind: SocketKind): Promise<Conn> {
    const existing = this.conns.get(kind);
    if (existing && !existing.closed) {
      await existing.open;
      return existing;
    }
    for (let attempt = 0; ; attempt += 1) {
      const conn = this.connect(kind);
      this.conns.set(kind, conn);
      try {
        await conn.open;
        this.stats.opened += 1;
        return conn;
      } catch (err) {
        this.conns.delete(kind);
        // A refused upgrade (429: connect rate) is the server's right: back off and retry.
        if (err instanceof ServerGone || attempt >= 20) throw err;
        await new Promise((r) => setTimeout(r, Math.min(2000, 100 * 2 ** attempt)));
      }
    }
  }

  private connect(kind: SocketKind): Conn {
    const url = `${this.opts.base}${SOCKET_PATHS[kind]}`;
    const ws = new WebSocket(url, kind === 'janus' ? 'janus-protocol' : [], {
      headers: { cookie: `auth_token=${this.opts.token()}` },
      ...(this.opts.localAddress ? { localAddress: this.opts.localAddress } : {}),
      handshakeTimeout: 10_000,
    });
    const conn: Conn = {
      ws,
      open: Promise.resolve(),
      answers: 0,
      closed: false,
      pending: new Map(),
      last: 'none',
    };
    conn.open = new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('unexpected-response', (_req, res) => {
        const status = String(res.statusCode ?? 0);
        this.stats.refused[status] = (this.stats.refused[status] ?? 0) + 1;
        conn.closed = true;
        reject(new Error(`upgrade refused: ${status}`));
      });
      ws.once('error', (err: NodeJS.ErrnoException) => {
        conn.closed = true;
        reject(err.code === 'ECONNREFUSED' ? new ServerGone(err.message) : err);
      });
    });
    conn.open.catch(() => undefined);
    ws.on('error', () => undefined);
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (kind === 'janus') this.onJanus(conn, data.toString('utf8'));
      else if (kind === 'media') {
        if (isBinary && data.length === 1 && data[0] === 0xff) conn.answers += 1;
      } else if (isBinary ? data.length === 1 && data[0] === 0xff : data.includes('"pong"')) {
        conn.answers += 1;
      }
    });
    ws.on('close', (code) => {
      conn.closed = true;
      this.stats.closes[code] = (this.stats.closes[code] ?? 0) + 1;
      if (code === 1008)
        this.pace.set(kind, Math.min(40, Math.max(1, (this.pace.get(kind) ?? 0) * 2)));
      if (kind === 'janus') {
        this.janusIds.sessions.length = 0;
        this.janusIds.handles.length = 0;
      }
      if (code === 1011) {
        this.opts.findings.add(
          'socket-internal-error',
          SOCKET_PATHS[kind],
          'closed with 1011',
          `last frame: ${conn.last}`,
        );
      }
    });
    return conn;
  }
}

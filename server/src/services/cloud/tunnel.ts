/**
 * Streams from the fleet into the device's own server (docs/cloud.md "The console through the
 * fleet"): an `open` frame becomes an HTTP request or a WebSocket to the server on loopback, as
 * the console would make it, under a console session of `cloud:<fleet user>` (cloud-sessions.ts).
 * Bytes go both ways in binary stream frames with per-stream flow control: a sender keeps at
 * most AGENT_STREAM_WINDOW bytes unacknowledged, the receiver sends `ack` as it drains. At most
 * AGENT_MAX_STREAMS at once; a stream past that, or whose sender overruns the window, ends.
 *
 * The local server's certificate is ours: it is trusted by its fingerprint for these loopback
 * connections only, nothing is switched off globally.
 */
import { X509Certificate } from 'node:crypto';
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { PeerCertificate } from 'node:tls';
import WebSocket, { type RawData } from 'ws';
import {
  AGENT_MAX_FRAME,
  AGENT_MAX_STREAMS,
  AGENT_STREAM_WINDOW,
  CLOUD_USERNAME_RE,
  STREAM_HEADER_BYTES,
  STREAM_KIND,
  encodeStreamFrame,
  type AgentControl,
  type StreamKind,
} from '@kvm/protocol';
import type { Logger } from '../../log';

/** The device's own server as the tunnel reaches it. */
export interface LocalTarget {
  /** `https://127.0.0.1:<port>` (or http:// when the server runs without TLS). */
  origin: string;
  /** Its certificate (PEM) when https: trusted by fingerprint. */
  cert: string | Buffer | null;
}

/** Where the tunnel gets the session token of a fleet user (cloud-sessions.ts). */
export interface TunnelSessions {
  tokenFor(user: string): Promise<string>;
}

export interface TunnelLink {
  control(frame: AgentControl): void;
  binary(frame: Uint8Array): void;
}

type OpenFrame = Extract<AgentControl, { t: 'open' }>;

/** Bytes of a stream frame's payload: leaves room for the header under the frame limit. */
const CHUNK = 64 * 1024;
/** Hop-by-hop headers (RFC 9110 7.6.1) and what the tunnel sets itself. */
const DROP_REQUEST = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'host',
  'cookie',
  'authorization',
  'origin',
  'sec-fetch-site',
  'sec-fetch-mode',
  'sec-fetch-dest',
  'sec-fetch-user',
  'sec-websocket-key',
  'sec-websocket-version',
  'sec-websocket-extensions',
  'sec-websocket-protocol',
  'x-kvmd-user',
  'x-kvmd-passwd',
  'token',
  'x-forwarded-for',
  'x-real-ip',
  'x-forwarded-host',
  'x-forwarded-proto',
]);
const DROP_RESPONSE = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'set-cookie',
  'trailer',
  'upgrade',
]);

function requestHeaders(headers: Record<string, string>, token: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers ?? {})) {
    const key = k.toLowerCase();
    if (DROP_REQUEST.has(key) || typeof v !== 'string' || /[\r\n]/.test(v)) continue;
    if (!/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(key)) continue;
    out[key] = v;
  }
  // the fleet strips the browser's cookies; the device's own session of that user goes instead
  out['cookie'] = `auth_token=${token}`;
  return out;
}

function responseHeaders(res: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headers)) {
    if (v === undefined || DROP_RESPONSE.has(k)) continue;
    out[k] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

/** A valid close code to pass on to a WebSocket (RFC 6455 7.4). */
function closeCode(code: number | undefined): number {
  if (code === undefined) return 1000;
  if (
    code === 1000 ||
    (code >= 3000 && code <= 4999) ||
    (code >= 1001 && code <= 1014 && ![1004, 1005, 1006].includes(code))
  )
    return code;
  return 1000;
}

interface Stream {
  sid: number;
  /** Bytes this side may still send before an ack. */
  sendWindow: number;
  /** Bytes received and not yet acknowledged. */
  recvPending: number;
  /** Bytes toward the fleet the window does not allow yet (the source is paused meanwhile). */
  outbox: Array<{ kind: StreamKind; payload: Buffer }>;
  /** The end to send once the outbox is empty. */
  ending: { code?: number; reason?: string } | null;
  data(kind: StreamKind, payload: Buffer): void;
  /** The fleet ended it (end of the request body, or the browser left / closed). */
  end(code?: number, reason?: string): void;
  /** Everything queued went out: the source may go on. */
  resume(): void;
  /** Cut without a word (the agent socket is gone). */
  destroy(): void;
}

export class Tunnel {
  private readonly streams = new Map<number, Stream>();
  private link: TunnelLink | null = null;

  constructor(
    private readonly deps: {
      local: () => LocalTarget | null;
      sessions: TunnelSessions;
      log: Logger;
    },
  ) {}

  attach(link: TunnelLink | null): void {
    this.link = link;
  }

  get size(): number {
    return this.streams.size;
  }

  closeAll(): void {
    for (const s of [...this.streams.values()]) s.destroy();
    this.streams.clear();
  }

  open(frame: OpenFrame): void {
    const sid = frame.sid;
    if (this.streams.has(sid)) {
      this.refuse(sid, frame.kind, 409, 'stream id in use');
      return;
    }
    if (this.streams.size >= AGENT_MAX_STREAMS) {
      this.refuse(sid, frame.kind, 503, 'too many streams');
      return;
    }
    const name = frame.user && typeof frame.user.name === 'string' ? frame.user.name : '';
    if (!CLOUD_USERNAME_RE.test(name)) {
      this.refuse(sid, frame.kind, 403, 'no valid fleet user');
      return;
    }
    if (
      typeof frame.path !== 'string' ||
      !frame.path.startsWith('/') ||
      frame.path.startsWith('//')
    ) {
      this.refuse(sid, frame.kind, 400, 'the path must be absolute on the device');
      return;
    }
    const local = this.deps.local();
    if (!local) {
      this.refuse(sid, frame.kind, 503, 'the device server is not listening yet');
      return;
    }
    // reserve the id at once; the session arrives asynchronously
    const pending = new PendingStream(sid);
    this.streams.set(sid, pending);
    this.deps.sessions
      .tokenFor(name)
      .then((token) => {
        if (this.streams.get(sid) !== pending) return;
        const stream =
          frame.kind === 'ws'
            ? this.openWs(frame, local, token, pending)
            : this.openHttp(frame, local, token, pending);
        this.streams.set(sid, stream);
        pending.replay(stream);
      })
      .catch((err: unknown) => {
        if (this.streams.get(sid) !== pending) return;
        this.streams.delete(sid);
        this.deps.log.warn({ err }, 'cloud: no session for a tunnelled request');
        this.refuse(sid, frame.kind, 503, 'no session');
      });
  }

  data(sid: number, kind: StreamKind, payload: Buffer): void {
    const s = this.streams.get(sid);
    if (!s) return;
    s.recvPending += payload.length;
    if (s.recvPending > AGENT_STREAM_WINDOW) {
      this.deps.log.warn({ sid }, 'cloud: the fleet overran a stream window; stream ended');
      this.fail(s, 1008, 'window overrun');
      return;
    }
    s.data(kind, payload);
  }

  ack(sid: number, n: number): void {
    const s = this.streams.get(sid);
    if (!s || typeof n !== 'number' || !Number.isFinite(n) || n <= 0) return;
    s.sendWindow = Math.min(AGENT_STREAM_WINDOW, s.sendWindow + n);
    this.flush(s);
    if (s.outbox.length === 0 && this.streams.get(sid) === s) s.resume();
  }

  end(sid: number, code?: number, reason?: string): void {
    this.streams.get(sid)?.end(code, reason);
  }

  private refuse(sid: number, kind: 'http' | 'ws', status: number, why: string): void {
    const body = Buffer.from(
      JSON.stringify({ ok: false, result: { error: 'CloudTunnelError', error_msg: why } }),
    );
    this.control({ t: 'head', sid, status, headers: { 'content-type': 'application/json' } });
    if (kind === 'http') this.sendData(sid, STREAM_KIND.data, body);
    this.control({ t: 'end', sid, ...(kind === 'ws' ? { code: 1011, reason: why } : {}) });
  }

  private control(frame: AgentControl): void {
    this.link?.control(frame);
  }

  private sendData(sid: number, kind: StreamKind, payload: Uint8Array): void {
    this.link?.binary(encodeStreamFrame(sid, kind, payload));
  }

  /**
   * Queues bytes toward the fleet and sends what the window allows: http data in pieces of at
   * most CHUNK, a WebSocket message whole (it waits for room). True when nothing is left
   * queued; false tells the caller to pause its source until `resume()`.
   */
  private push(s: Stream, kind: StreamKind, payload: Buffer): boolean {
    s.outbox.push({ kind, payload });
    this.flush(s);
    return s.outbox.length === 0;
  }

  private flush(s: Stream): void {
    while (s.outbox.length > 0) {
      const head = s.outbox[0]!;
      const n =
        head.kind === STREAM_KIND.data
          ? Math.min(head.payload.length, s.sendWindow, CHUNK)
          : head.payload.length;
      if (n > s.sendWindow || (n === 0 && head.payload.length > 0)) break;
      s.sendWindow -= n;
      this.sendData(s.sid, head.kind, head.payload.subarray(0, n));
      if (n >= head.payload.length) s.outbox.shift();
      else head.payload = head.payload.subarray(n);
    }
    if (s.outbox.length === 0 && s.ending) {
      const e = s.ending;
      s.ending = null;
      this.finishNow(s, e.code, e.reason);
    }
  }

  private acknowledge(s: Stream, n: number): void {
    if (!this.streams.has(s.sid) || n <= 0) return;
    s.recvPending = Math.max(0, s.recvPending - n);
    this.control({ t: 'ack', sid: s.sid, n });
  }

  /** The stream is over on this side: `end` once what is queued went out. */
  private finish(s: Stream, code?: number, reason?: string): void {
    if (this.streams.get(s.sid) !== s || s.ending) return;
    s.ending = { code, reason };
    this.flush(s);
  }

  /** The stream failed: `end` at once, whatever is queued is dropped. */
  private fail(s: Stream, code: number, reason: string): void {
    s.outbox.length = 0;
    this.finishNow(s, code, reason);
  }

  private finishNow(s: Stream, code?: number, reason?: string): void {
    if (this.streams.get(s.sid) !== s) return;
    this.streams.delete(s.sid);
    s.destroy();
    this.control({
      t: 'end',
      sid: s.sid,
      ...(code !== undefined ? { code } : {}),
      ...(reason ? { reason } : {}),
    });
  }

  private tlsOptions(local: LocalTarget): Record<string, unknown> {
    if (!local.origin.startsWith('https:') || !local.cert) return {};
    const fingerprint = new X509Certificate(local.cert).fingerprint256;
    return {
      ca: [local.cert],
      checkServerIdentity: (_host: string, cert: PeerCertificate) =>
        cert.fingerprint256 === fingerprint ? undefined : new Error('not the device certificate'),
    };
  }

  private openHttp(
    frame: OpenFrame,
    local: LocalTarget,
    token: string,
    pending: PendingStream,
  ): Stream {
    const headers = requestHeaders(frame.headers, token);
    const length =
      headers['content-length'] !== undefined ? Number(headers['content-length']) : null;
    const chunked =
      (frame.headers?.['transfer-encoding'] ?? frame.headers?.['Transfer-Encoding']) !== undefined;
    // HTTP/1.1: a request with neither Content-Length nor chunked coding has no body
    let bodyLeft =
      length !== null && Number.isFinite(length) && length >= 0 ? length : chunked ? Infinity : 0;
    const url = new URL(frame.path, local.origin);
    const req: ClientRequest = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, {
      method: typeof frame.method === 'string' ? frame.method.toUpperCase().slice(0, 16) : 'GET',
      headers,
      agent: false,
      ...this.tlsOptions(local),
    });
    let res: IncomingMessage | null = null;
    const stream: Stream = {
      sid: frame.sid,
      sendWindow: AGENT_STREAM_WINDOW,
      recvPending: pending.recvPending,
      outbox: [],
      ending: null,
      data: (_kind, payload) => {
        if (bodyLeft <= 0 || req.writableEnded) return;
        const part = payload.length > bodyLeft ? payload.subarray(0, bodyLeft) : payload;
        bodyLeft -= part.length;
        req.write(part, () => this.acknowledge(stream, payload.length));
        if (bodyLeft <= 0) req.end();
      },
      end: (code) => {
        if (code === undefined || code === 1000) {
          // the request body is complete
          if (!req.writableEnded) req.end();
          return;
        }
        // the browser went away: the request is cut, nothing more is sent
        this.streams.delete(frame.sid);
        req.destroy();
      },
      resume: () => {
        res?.resume();
      },
      destroy: () => {
        req.destroy();
      },
    };
    if (bodyLeft === 0) req.end();
    req.on('response', (r) => {
      res = r;
      this.control({
        t: 'head',
        sid: frame.sid,
        status: r.statusCode ?? 502,
        headers: responseHeaders(r),
      });
      r.on('data', (chunk: Buffer) => {
        if (!this.push(stream, STREAM_KIND.data, chunk)) r.pause();
      });
      r.on('end', () => this.finish(stream));
      r.on('error', () => this.fail(stream, 1011, 'response failed'));
    });
    req.on('error', (err) => {
      if (this.streams.get(frame.sid) !== stream) return;
      if (res === null) {
        this.streams.delete(frame.sid);
        this.deps.log.warn({ err: err.message }, 'cloud: tunnelled request failed');
        this.refuse(frame.sid, 'http', 502, 'the device server did not answer');
      } else {
        this.fail(stream, 1011, 'response failed');
      }
    });
    return stream;
  }

  private openWs(
    frame: OpenFrame,
    local: LocalTarget,
    token: string,
    pending: PendingStream,
  ): Stream {
    const url = new URL(frame.path, local.origin.replace(/^http/, 'ws'));
    const protocols = Array.isArray(frame.protocols)
      ? frame.protocols
          .filter((p) => typeof p === 'string' && /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/.test(p))
          .slice(0, 8)
      : [];
    const headers = requestHeaders(frame.headers, token);
    delete headers['content-length'];
    const ws = new WebSocket(url, protocols, {
      headers,
      perMessageDeflate: false,
      // a message larger than a stream frame cannot be carried: the device's side closes 1009
      maxPayload: AGENT_MAX_FRAME - STREAM_HEADER_BYTES,
      handshakeTimeout: 30_000,
      ...this.tlsOptions(local),
    });
    let opened = false;
    const queued: Array<{ kind: StreamKind; payload: Buffer }> = [];
    let paused = false;
    const stream: Stream = {
      sid: frame.sid,
      sendWindow: AGENT_STREAM_WINDOW,
      recvPending: pending.recvPending,
      outbox: [],
      ending: null,
      data: (kind, payload) => {
        if (!opened) {
          queued.push({ kind, payload });
          return;
        }
        const n = payload.length;
        ws.send(kind === STREAM_KIND.text ? payload.toString('utf8') : payload, (err) => {
          if (!err) this.acknowledge(stream, n);
        });
      },
      end: (code, reason) => {
        this.streams.delete(frame.sid);
        if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
        else ws.close(closeCode(code), (reason ?? '').slice(0, 120));
      },
      resume: () => {
        if (paused) {
          paused = false;
          ws.resume();
        }
      },
      destroy: () => {
        ws.removeAllListeners('close');
        ws.on('error', () => undefined);
        ws.terminate();
      },
    };
    ws.on('open', () => {
      opened = true;
      this.control({ t: 'head', sid: frame.sid, status: 101, headers: {}, protocol: ws.protocol });
      for (const q of queued.splice(0)) stream.data(q.kind, q.payload);
    });
    ws.on('unexpected-response', (_req, res) => {
      this.control({
        t: 'head',
        sid: frame.sid,
        status: res.statusCode ?? 502,
        headers: responseHeaders(res),
      });
      res.resume();
      ws.removeAllListeners('close');
      ws.on('error', () => undefined);
      ws.terminate();
      if (this.streams.get(frame.sid) === stream) {
        this.streams.delete(frame.sid);
        this.control({
          t: 'end',
          sid: frame.sid,
          code: 1011,
          reason: `HTTP ${res.statusCode ?? 0}`,
        });
      }
    });
    ws.on('message', (data: RawData, isBinary: boolean) => {
      const buf = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
      const sent = this.push(stream, isBinary ? STREAM_KIND.binary : STREAM_KIND.text, buf);
      if (!sent && !paused) {
        paused = true;
        ws.pause();
      }
    });
    ws.on('error', (err) => {
      if (!opened && this.streams.get(frame.sid) === stream) {
        this.streams.delete(frame.sid);
        ws.removeAllListeners('close');
        this.deps.log.warn({ err: err.message }, 'cloud: tunnelled socket failed');
        this.refuse(frame.sid, 'ws', 502, 'the device server did not accept the socket');
      }
    });
    ws.on('close', (code: number, reason: Buffer) => {
      this.finish(
        stream,
        code === 1005 || code === 1006 ? 1001 : code,
        reason.toString().slice(0, 120),
      );
    });
    return stream;
  }
}

/** A stream whose session is being made: what arrives meanwhile is kept (within the window). */
class PendingStream implements Stream {
  sendWindow = AGENT_STREAM_WINDOW;
  recvPending = 0;
  outbox: Array<{ kind: StreamKind; payload: Buffer }> = [];
  ending: { code?: number; reason?: string } | null = null;
  private readonly held: Array<{ kind: StreamKind; payload: Buffer }> = [];
  private ended: { code?: number; reason?: string } | null = null;
  private gone = false;

  constructor(readonly sid: number) {}

  data(kind: StreamKind, payload: Buffer): void {
    this.held.push({ kind, payload });
  }

  end(code?: number, reason?: string): void {
    this.ended = { code, reason };
  }

  resume(): void {}

  destroy(): void {
    this.gone = true;
  }

  replay(to: Stream): void {
    if (this.gone) {
      to.destroy();
      return;
    }
    to.sendWindow = this.sendWindow;
    for (const h of this.held.splice(0)) to.data(h.kind, h.payload);
    if (this.ended) to.end(this.ended.code, this.ended.reason);
  }
}

/**
 * For the relay's tests: an in-memory DeviceDirectory (a fake of the core's PostgreSQL one), a
 * replica on loopback (Fastify + @fastify/websocket + registerRelay), and a FAKE device agent
 * speaking the agent socket's frames with a tiny device server of its own inside.
 */
import { createHash } from 'node:crypto';
import { createServer } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterEach } from 'vitest';
import WebSocket from 'ws';
import {
  AGENT_PATH,
  AGENT_STREAM_WINDOW,
  STREAM_KIND,
  decodeStreamFrame,
  encodeStreamFrame,
  parseAgentControl,
  type AgentControl,
  type DeviceIdentity,
  type StreamKind,
} from '@kvm/protocol';
import type {
  DeviceDirectory,
  FleetConfig,
  FleetContext,
  FleetDevice,
  FleetUser,
} from '../context';
import { registerRelay, type RelayOptions } from './index';
import type { Relay } from './relay';

export const IDENTITY: DeviceIdentity = {
  mac: '02:00:00:00:00:01',
  serial: 'SN-1',
  name: 'kvm-1',
  model: 'test',
  version: '1.0',
};

export interface FakeDeviceRow extends FleetDevice {
  secret: string;
}

export class FakeDirectory implements DeviceDirectory {
  readonly devices = new Map<string, FakeDeviceRow>();
  readonly events: Array<{
    kind: string;
    deviceId?: string;
    accountId?: string;
    detail?: Record<string, unknown>;
  }> = [];
  readonly presence = new Map<string, string | null>();
  readonly unbound: string[] = [];

  add(id: string, accountId: string, secret = `secret-${id}`, identity = IDENTITY): FakeDeviceRow {
    const row = { id, accountId, name: id, identity, revoked: false, secret };
    this.devices.set(id, row);
    return row;
  }

  async authenticate(deviceId: string, secret: string, fp: { mac: string; serial: string }) {
    const d = this.devices.get(deviceId);
    if (!d || d.secret !== secret) return { ok: false as const, reason: 'unknown' as const };
    if (d.revoked) return { ok: false as const, reason: 'revoked' as const };
    if (d.identity.mac !== fp.mac || d.identity.serial !== fp.serial) {
      return { ok: false as const, reason: 'fingerprint' as const };
    }
    return { ok: true as const, device: d };
  }

  async forUser(user: FleetUser, deviceId: string): Promise<FleetDevice | null> {
    const d = this.devices.get(deviceId);
    return d && d.accountId === user.accountId && !d.revoked ? d : null;
  }

  async setPresence(deviceId: string, replica: string | null): Promise<void> {
    this.presence.set(deviceId, replica);
  }

  async event(
    kind: string,
    fields: { deviceId?: string; accountId?: string; detail?: Record<string, unknown> },
  ) {
    this.events.push({ kind, ...fields });
  }

  async unboundByDevice(deviceId: string): Promise<void> {
    this.unbound.push(deviceId);
  }
}

export interface TestReplica {
  app: FastifyInstance;
  relay: Relay;
  ctx: FleetContext;
  port: number;
  url: string;
  close(): Promise<void>;
}

/** A replica on 127.0.0.1 (plain HTTP: TLS is the core's). Users sign in with `x-test-user`. */
export async function startReplica(
  dir: FakeDirectory,
  name: string,
  opts: Partial<RelayOptions> & { nats?: string[]; turn?: FleetConfig['turn'] } = {},
): Promise<TestReplica> {
  // As the core's app (fleet/src/app.ts) routes.
  const app = Fastify({
    logger: false,
    forceCloseConnections: true,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 256 },
  });
  const port = await new Promise<number>((resolve) => {
    // The port first: publicUrl is part of the config the relay reads.
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
  const config: FleetConfig = {
    replica: name,
    publicUrl: `http://127.0.0.1:${port}`,
    host: '127.0.0.1',
    port,
    tls: { cert: '', key: '' },
    database: 'postgres://unused',
    nats: opts.nats ?? [],
    turn: opts.turn ?? null,
    smtp: { host: '127.0.0.1', port: 25, secure: false, from: 'x@y' },
    data: '/nonexistent',
  };
  const ctx: FleetContext = {
    config,
    log: pino({ level: process.env.FLEET_TEST_LOG ?? 'silent' }),
    devices: dir,
    relay: null,
    async userOf(req) {
      const u = req.headers['x-test-user'];
      return typeof u === 'string' ? { accountId: u, username: `user-${u}`, role: 'user' } : null;
    },
  };
  const relay = await registerRelay(app, ctx, opts);
  await app.listen({ host: '127.0.0.1', port });
  return { app, relay, ctx, port, url: config.publicUrl, close: () => app.close() };
}

// ---- the fake agent --------------------------------------------------------------------------

type Open = Extract<AgentControl, { t: 'open' }>;

/** What the fake device's server does with a tunnelled request. */
export interface FakeRequest {
  open: Open;
  body: Buffer;
}

interface DeviceStream {
  open: Open;
  body: Buffer[];
  bodyBytes: number;
  /** Bytes the fleet sent us we have not acknowledged (checked against the window). */
  unacked: number;
  maxUnacked: number;
  /** Our bytes in flight toward the fleet. */
  inFlight: number;
  waiters: Array<() => void>;
  ended: boolean;
}

export interface FakeAgentOptions {
  id: string;
  secret?: string;
  mac?: string;
  serial?: string;
  /** Do not answer `hello`-less; skip the hello entirely. */
  noHello?: boolean;
  /** Ping every this (0: never). */
  pingMs?: number;
  /** Answer commands (default: info → {ok}). */
  onCommand?(name: string, args: unknown): unknown;
  /** Never answer the head of these paths. */
  silentPaths?: string[];
  /** The `hello`'s version (default 1.0). */
  version?: string;
  /**
   * A device server of the test's own: answers an http request (after its body), or undefined
   * for the built-in paths. With `discardBodies` the body is only counted (`bodyBytes`).
   */
  serve?(req: {
    method: string;
    path: string;
    headers: Record<string, string>;
    body: Buffer;
    bodyBytes: number;
  }):
    | Promise<{ status: number; body: unknown } | undefined>
    | { status: number; body: unknown }
    | undefined;
  discardBodies?: boolean;
}

/** A device agent speaking the frames, with its device server inside (echo, big, html, ws). */
export class FakeAgent {
  readonly frames: AgentControl[] = [];
  readonly opens: Open[] = [];
  readonly streams = new Map<number, DeviceStream>();
  welcome: Extract<AgentControl, { t: 'welcome' }> | null = null;
  closed: { code: number; reason: string } | null = null;
  refused: { status: number; headers: Record<string, string | string[] | undefined> } | null = null;
  /** The largest number of unacknowledged fleet bytes any stream held (must stay ≤ window). */
  maxUnacked = 0;
  private pinger: NodeJS.Timeout | null = null;

  private constructor(
    readonly ws: WebSocket,
    readonly opts: FakeAgentOptions,
  ) {}

  static connect(url: string, opts: FakeAgentOptions): Promise<FakeAgent> {
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}${AGENT_PATH}`, {
      headers: {
        authorization: `Device ${opts.id}:${opts.secret ?? `secret-${opts.id}`}`,
        'x-kvm-device-mac': opts.mac ?? IDENTITY.mac,
        'x-kvm-device-serial': opts.serial ?? IDENTITY.serial,
      },
      maxPayload: 2 << 20,
    });
    const agent = new FakeAgent(ws, opts);
    return new Promise((resolve, reject) => {
      ws.on('unexpected-response', (_req, res) => {
        agent.refused = { status: res.statusCode ?? 0, headers: res.headers };
        resolve(agent);
      });
      ws.on('error', (e) => {
        if (!agent.refused) reject(e);
      });
      ws.on('close', (code, reason) => {
        agent.closed = { code, reason: reason.toString() };
        if (agent.pinger) clearInterval(agent.pinger);
      });
      ws.on('message', (data, isBinary) => agent.onMessage(data as Buffer, isBinary));
      ws.on('open', () => {
        if (!opts.noHello) {
          agent.send({ t: 'hello', version: opts.version ?? '1.0', identity: IDENTITY });
        }
        if (opts.pingMs) {
          agent.pinger = setInterval(() => agent.send({ t: 'ping', ts: Date.now() }), opts.pingMs);
        }
        resolve(agent);
      });
    });
  }

  send(f: AgentControl): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(f));
  }

  close(): void {
    if (this.pinger) clearInterval(this.pinger);
    this.ws.close();
  }

  /** Resolves when the welcome came. */
  async ready(timeoutMs = 10_000): Promise<this> {
    await waitFor(() => this.welcome !== null || this.closed !== null, timeoutMs, 'welcome');
    if (!this.welcome) throw new Error(`agent closed: ${JSON.stringify(this.closed)}`);
    return this;
  }

  whenClosed(timeoutMs = 10_000): Promise<{ code: number; reason: string }> {
    return waitFor(() => this.closed, timeoutMs, 'agent socket closed');
  }

  private onMessage(data: Buffer, isBinary: boolean): void {
    if (isBinary) {
      const f = decodeStreamFrame(data);
      if (!f) throw new Error('fleet sent a malformed stream frame');
      const s = this.streams.get(f.sid);
      if (!s) return;
      s.unacked += f.payload.byteLength;
      s.maxUnacked = Math.max(s.maxUnacked, s.unacked);
      this.maxUnacked = Math.max(this.maxUnacked, s.unacked);
      if (s.open.kind === 'ws') {
        // Echo each message back, of its kind, then acknowledge it.
        void this.write(s, f.kind, Buffer.from(f.payload)).then(() =>
          this.ack(s, f.payload.byteLength),
        );
      } else {
        if (!this.opts.discardBodies) s.body.push(Buffer.from(f.payload));
        s.bodyBytes += f.payload.byteLength;
        // Acknowledged a little later, as a device draining into its server would.
        setImmediate(() => this.ack(s, f.payload.byteLength));
      }
      return;
    }
    const f = parseAgentControl(data.toString());
    if (!f) throw new Error('fleet sent a malformed control frame');
    this.frames.push(f);
    switch (f.t) {
      case 'welcome':
        this.welcome = f;
        return;
      case 'ping':
        return this.send({ t: 'pong', ts: f.ts });
      case 'cmd': {
        try {
          const result = this.opts.onCommand ? this.opts.onCommand(f.name, f.args) : { ok: true };
          if (result === undefined) return; // never answers
          this.send({ t: 'res', id: f.id, ok: true, result });
        } catch (e) {
          this.send({
            t: 'res',
            id: f.id,
            ok: false,
            error: 'Failed',
            message: (e as Error).message,
          });
        }
        return;
      }
      case 'open': {
        this.opens.push(f);
        const s: DeviceStream = {
          open: f,
          body: [],
          bodyBytes: 0,
          unacked: 0,
          maxUnacked: 0,
          inFlight: 0,
          waiters: [],
          ended: false,
        };
        this.streams.set(f.sid, s);
        if (this.opts.silentPaths?.some((p) => f.path.startsWith(p))) return;
        if (f.kind === 'ws' && f.path.startsWith('/ws-refused')) {
          this.send({ t: 'head', sid: f.sid, status: 403, headers: {} });
          this.send({ t: 'end', sid: f.sid, code: 1011, reason: 'no session' });
        } else if (f.kind === 'ws' && f.path.startsWith('/ws-late')) {
          setTimeout(() => this.send({ t: 'head', sid: f.sid, status: 101, headers: {} }), 500);
        } else if (f.kind === 'ws') {
          this.send({
            t: 'head',
            sid: f.sid,
            status: 101,
            headers: {},
            ...(f.protocols?.length ? { protocol: f.protocols.at(-1)! } : {}),
          });
        } else if (f.method === 'GET' || f.method === 'HEAD') {
          void this.answer(s);
        }
        return;
      }
      case 'ack': {
        const s = this.streams.get(f.sid);
        if (!s) return;
        s.inFlight -= f.n;
        for (const w of s.waiters.splice(0)) w();
        return;
      }
      case 'end': {
        const s = this.streams.get(f.sid);
        if (!s) return;
        if (s.open.kind === 'ws' || f.code !== undefined) {
          this.streams.delete(f.sid);
          if (s.open.kind === 'ws')
            this.send({ t: 'end', sid: f.sid, ...(f.code !== undefined ? { code: f.code } : {}) });
          return;
        }
        void this.answer(s);
        return;
      }
      default:
        return;
    }
  }

  private ack(s: DeviceStream, n: number): void {
    s.unacked -= n;
    this.send({ t: 'ack', sid: s.open.sid, n });
  }

  /** Sends bytes within the window (waits for acks), in frames of at most 256 KiB. */
  private async write(s: DeviceStream, kind: StreamKind, data: Buffer): Promise<void> {
    const step = kind === STREAM_KIND.data ? 256 * 1024 : data.byteLength;
    for (let off = 0; off < data.byteLength || (off === 0 && data.byteLength === 0); off += step) {
      const part = data.subarray(off, off + step);
      while (s.inFlight + part.byteLength > AGENT_STREAM_WINDOW) {
        await new Promise<void>((r) => s.waiters.push(r));
      }
      s.inFlight += part.byteLength;
      this.ws.send(encodeStreamFrame(s.open.sid, kind, part));
      if (data.byteLength === 0) break;
    }
  }

  /** The fake device server: a few paths. */
  private async answer(s: DeviceStream): Promise<void> {
    const o = s.open;
    const sid = o.sid;
    const url = new URL(o.path, 'http://device');
    const head = (status: number, headers: Record<string, string>) =>
      this.send({ t: 'head', sid, status, headers });
    const end = () => {
      this.streams.delete(sid);
      this.send({ t: 'end', sid });
    };
    const served = await this.opts.serve?.({
      method: o.method,
      path: o.path,
      headers: o.headers,
      body: Buffer.concat(s.body),
      bodyBytes: s.bodyBytes,
    });
    if (served) {
      head(served.status, { 'content-type': 'application/json' });
      await this.write(s, STREAM_KIND.data, Buffer.from(JSON.stringify(served.body)));
      return end();
    }
    if (url.pathname === '/' || url.pathname === '/index.html') {
      head(200, { 'content-type': 'text/html; charset=utf-8', 'set-cookie': 'auth_token=x' });
      await this.write(
        s,
        STREAM_KIND.data,
        Buffer.from(
          '<!doctype html><html><head><script type="module" src="/assets/app.js"></script><link rel="icon" href="/favicon.ico"><link href="//cdn.example/x.css"></head><body><a href="https://x.example/">x</a></body></html>',
        ),
      );
      return end();
    }
    if (url.pathname === '/huge.html') {
      head(200, { 'content-type': 'text/html' });
      await this.write(s, STREAM_KIND.data, Buffer.alloc(3 << 20, 0x41));
      return end();
    }
    if (url.pathname === '/api/echo-headers') {
      head(200, { 'content-type': 'application/json', 'set-cookie': 'auth_token=secret; Path=/' });
      await this.write(
        s,
        STREAM_KIND.data,
        Buffer.from(
          JSON.stringify({ path: o.path, method: o.method, headers: o.headers, user: o.user }),
        ),
      );
      return end();
    }
    if (url.pathname === '/login-redirect') {
      head(302, { location: '/login' });
      return end();
    }
    if (url.pathname === '/big') {
      const n = Number(url.searchParams.get('n') ?? '0');
      const data = Buffer.alloc(n);
      for (let i = 0; i < n; i += 1) data[i] = (i * 7 + 3) & 0xff;
      head(200, { 'content-type': 'application/octet-stream', 'content-length': String(n) });
      await this.write(s, STREAM_KIND.data, data);
      return end();
    }
    if (url.pathname === '/upload') {
      const body = Buffer.concat(s.body);
      head(200, { 'content-type': 'application/json' });
      await this.write(
        s,
        STREAM_KIND.data,
        Buffer.from(
          JSON.stringify({
            bytes: body.byteLength,
            sha256: createHash('sha256').update(body).digest('hex'),
            maxUnacked: s.maxUnacked,
          }),
        ),
      );
      return end();
    }
    head(404, { 'content-type': 'application/json' });
    await this.write(s, STREAM_KIND.data, Buffer.from('{"ok":false}'));
    end();
  }
}

/** Polls `check` until it returns something truthy (CI is loaded: never sleep-and-assume). */
export async function waitFor<T>(
  check: () => T | null | undefined | false | Promise<T | null | undefined | false>,
  timeoutMs: number,
  what: string,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The bytes /big?n= sends. */
export function bigBody(n: number): Buffer {
  const data = Buffer.alloc(n);
  for (let i = 0; i < n; i += 1) data[i] = (i * 7 + 3) & 0xff;
  return data;
}

/** The replicas and agents a test file starts, closed after each test (agents first). */
export function closedAfterEach(): { replicas: TestReplica[]; agents: FakeAgent[] } {
  const held = { replicas: [] as TestReplica[], agents: [] as FakeAgent[] };
  afterEach(async () => {
    for (const a of held.agents.splice(0)) a.close();
    await Promise.all(held.replicas.splice(0).map((r) => r.close()));
  });
  return held;
}

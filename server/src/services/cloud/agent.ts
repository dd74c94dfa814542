/**
 * The device agent (docs/cloud.md "The agent socket"): one outbound WebSocket over verified TLS
 * to a fleet replica, `Authorization: Device <id>:<secret>` plus the hardware fingerprint,
 * `hello` → `welcome`; a ping every AGENT_PING_MS, the socket dead after AGENT_DEAD_MS without
 * a frame; reconnect with full-jitter backoff (0 .. min(max, base·2^n)) rotating through the
 * endpoints, so a fleet restart meets no storm. Over it: commands (`cmd`/`res`), streams into
 * the device's own server (tunnel.ts) and TURN credentials. Whatever the fleet does, nothing
 * escapes: every fault ends in a state (`offline` with its error) and a later attempt.
 *
 * States: idle → connecting → online → offline → connecting ...; `stop()` from any to idle.
 */
import WebSocket, { type RawData } from 'ws';
import {
  AGENT_AUTH_SCHEME,
  AGENT_BACKOFF_BASE_MS,
  AGENT_BACKOFF_MAX_MS,
  AGENT_DEAD_MS,
  AGENT_MAX_FRAME,
  AGENT_PING_MS,
  decodeStreamFrame,
  parseAgentControl,
  type AgentCommand,
  type AgentControl,
  type DeviceIdentity,
  type FleetTurn,
} from '@kvm/protocol';
import type { Logger } from '../../log';
import { fleetConnectError, fleetTlsOptions, type FleetTrust } from './fleet-tls';
import type { Tunnel } from './tunnel';

/** Full jitter (AWS's "exponential backoff and jitter"): uniform in 0 .. min(max, base·2^n). */
export function backoffDelay(
  attempt: number,
  random: () => number,
  baseMs = AGENT_BACKOFF_BASE_MS,
  maxMs = AGENT_BACKOFF_MAX_MS,
): number {
  const cap = Math.min(maxMs, baseMs * 2 ** Math.min(attempt, 30));
  return Math.floor(random() * cap);
}

export interface AgentClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const REAL_CLOCK: AgentClock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref();
    return t;
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

export type AgentLinkState = 'idle' | 'connecting' | 'online' | 'offline';

export interface AgentCredentials {
  deviceId: string;
  secret: string;
  endpoints: string[];
}

export interface AgentDeps {
  credentials(): AgentCredentials | null;
  trust(): FleetTrust;
  identity(): Promise<DeviceIdentity>;
  version: string;
  log: Logger;
  tunnel: Tunnel;
  /** The fleet ended the binding (401 revoked, `unbound`, the `unbind` command). */
  onRevoked(by: string): void;
  onTurn(turn: FleetTurn | null): void;
  onState(state: AgentLinkState, info: { replica: string | null; error: string | null }): void;
  /** The welcome's endpoints, to keep for the next start. */
  onEndpoints(endpoints: string[]): void;
  command(name: AgentCommand, args: Record<string, unknown>): Promise<unknown>;
  clock?: AgentClock;
  random?: () => number;
  timing?: Partial<{
    pingMs: number;
    deadMs: number;
    baseMs: number;
    maxMs: number;
    helloMs: number;
  }>;
}

/** A command's failure as the `res` frame carries it. */
export class AgentCommandError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const COMMANDS: readonly string[] = ['info', 'snapshot', 'unbind'];

export class CloudAgent {
  private ws: WebSocket | null = null;
  private running = false;
  private attempt = 0;
  private endpointIndex = 0;
  private retryTimer: unknown = null;
  private pingTimer: unknown = null;
  private helloTimer: unknown = null;
  private lastSeen = 0;
  private pingMs: number;
  private state: AgentLinkState = 'idle';
  private readonly clock: AgentClock;
  private readonly random: () => number;
  private readonly timing: {
    pingMs: number;
    deadMs: number;
    baseMs: number;
    maxMs: number;
    helloMs: number;
  };

  constructor(private readonly deps: AgentDeps) {
    this.clock = deps.clock ?? REAL_CLOCK;
    this.random = deps.random ?? Math.random;
    this.timing = {
      pingMs: AGENT_PING_MS,
      deadMs: AGENT_DEAD_MS,
      baseMs: AGENT_BACKOFF_BASE_MS,
      maxMs: AGENT_BACKOFF_MAX_MS,
      helloMs: 30_000,
      ...deps.timing,
    };
    this.pingMs = this.timing.pingMs;
  }

  get linkState(): AgentLinkState {
    return this.state;
  }

  /** The delay before the next attempt (tests read it). */
  lastDelayMs = 0;

  start(): void {
    if (this.running) return;
    this.running = true;
    this.attempt = 0;
    this.connect();
  }

  stop(): void {
    this.running = false;
    this.clearTimers();
    this.clock.clearTimeout(this.retryTimer);
    this.retryTimer = null;
    const ws = this.ws;
    this.ws = null;
    if (ws) {
      ws.removeAllListeners();
      ws.on('error', () => undefined);
      ws.terminate();
    }
    this.deps.tunnel.closeAll();
    this.setState('idle', null, null);
  }

  /** Sends a control frame when online; false otherwise. */
  send(frame: AgentControl): boolean {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN || this.state !== 'online') return false;
    ws.send(JSON.stringify(frame));
    return true;
  }

  /** Sends a frame (control text or stream bytes) when online; dropped otherwise. */
  sendRaw(data: string | Uint8Array): void {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN || this.state !== 'online') return;
    ws.send(data);
  }

  /** Tells the fleet the admin unbound on the device; true when it went out. */
  async sayUnbound(): Promise<boolean> {
    const ws = this.ws;
    if (!ws || this.state !== 'online') return false;
    return new Promise((resolve) => {
      ws.send(JSON.stringify({ t: 'unbound', by: 'device' } satisfies AgentControl), (err) =>
        resolve(!err),
      );
    });
  }

  private setState(state: AgentLinkState, replica: string | null, error: string | null): void {
    this.state = state;
    this.deps.onState(state, { replica, error });
  }

  private clearTimers(): void {
    this.clock.clearTimeout(this.pingTimer);
    this.clock.clearTimeout(this.helloTimer);
    this.pingTimer = null;
    this.helloTimer = null;
  }

  private connect(): void {
    if (!this.running) return;
    const creds = this.deps.credentials();
    if (!creds || creds.endpoints.length === 0) {
      this.setState('offline', null, 'No fleet endpoint to connect to');
      this.retry();
      return;
    }
    const url = creds.endpoints[this.endpointIndex % creds.endpoints.length]!;
    this.endpointIndex += 1;
    this.setState('connecting', null, null);
    this.deps
      .identity()
      .then((identity) => this.open(url, creds, identity))
      .catch((err: unknown) => this.lost(`identity: ${(err as Error).message}`));
  }

  private open(url: string, creds: AgentCredentials, identity: DeviceIdentity): void {
    if (!this.running) return;
    const trust = this.deps.trust();
    let ws: WebSocket;
    try {
      ws = new WebSocket(url, {
        headers: {
          authorization: `${AGENT_AUTH_SCHEME} ${creds.deviceId}:${creds.secret}`,
          'x-kvm-device-mac': identity.mac,
          'x-kvm-device-serial': identity.serial,
        },
        maxPayload: AGENT_MAX_FRAME,
        perMessageDeflate: false,
        handshakeTimeout: this.timing.helloMs,
        followRedirects: false,
        ...fleetTlsOptions(trust),
      });
    } catch (err) {
      this.lost(`bad endpoint ${url}: ${(err as Error).message}`);
      return;
    }
    this.ws = ws;
    let failure: string | null = null;
    ws.on('unexpected-response', (_req, res) => {
      const status = res.statusCode ?? 0;
      const binding = String(res.headers['x-kvm-binding'] ?? '');
      res.resume();
      if (status === 401 && binding === 'revoked') {
        this.deps.log.warn({ url }, 'cloud: the fleet revoked this device; binding forgotten');
        this.drop(ws);
        this.deps.onRevoked('fleet (401 revoked)');
        return;
      }
      failure =
        status === 403
          ? 'The fleet refused this hardware (403: the binding belongs to another MAC/serial)'
          : status === 401
            ? 'The fleet does not know this binding (401)'
            : `The fleet refused the agent socket (HTTP ${status})`;
      ws.terminate();
    });
    ws.on('error', (err) => {
      failure ??= fleetConnectError(err, trust).message;
    });
    ws.on('open', () => {
      this.lastSeen = this.clock.now();
      ws.send(
        JSON.stringify({ t: 'hello', version: this.deps.version, identity } satisfies AgentControl),
      );
      this.helloTimer = this.clock.setTimeout(() => {
        failure = 'The fleet sent no welcome';
        ws.terminate();
      }, this.timing.helloMs);
    });
    ws.on('message', (data: RawData, isBinary: boolean) => {
      this.lastSeen = this.clock.now();
      try {
        this.receive(ws, data, isBinary);
      } catch (err) {
        this.deps.log.warn({ err }, 'cloud: a frame from the fleet failed');
        ws.close(1011, 'device error');
      }
    });
    ws.on('close', (code: number, reason: Buffer) => {
      if (this.ws !== ws) return;
      const why =
        failure ?? `closed (${code}${reason.length ? ` ${reason.toString().slice(0, 100)}` : ''})`;
      this.lost(why);
    });
  }

  /** A socket given up on purpose (revoked): its close is not a loss. */
  private drop(ws: WebSocket): void {
    if (this.ws === ws) this.ws = null;
    ws.removeAllListeners();
    ws.on('error', () => undefined);
    ws.terminate();
  }

  private receive(ws: WebSocket, data: RawData, isBinary: boolean): void {
    const buf = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
    if (isBinary) {
      const frame = this.state === 'online' ? decodeStreamFrame(buf) : null;
      if (!frame) {
        ws.close(1008, 'malformed stream frame');
        return;
      }
      this.deps.tunnel.data(frame.sid, frame.kind, Buffer.from(frame.payload));
      return;
    }
    const msg = parseAgentControl(buf.toString('utf8'));
    if (!msg) {
      ws.close(1008, 'malformed control frame');
      return;
    }
    if (this.state !== 'online') {
      if (msg.t !== 'welcome') {
        ws.close(1008, 'expected welcome');
        return;
      }
      this.welcome(ws, msg);
      return;
    }
    switch (msg.t) {
      case 'ping':
        ws.send(JSON.stringify({ t: 'pong', ts: msg.ts } satisfies AgentControl));
        return;
      case 'pong':
        return;
      case 'cmd':
        void this.runCommand(ws, msg);
        return;
      case 'open':
        this.deps.tunnel.open(msg);
        return;
      case 'ack':
        this.deps.tunnel.ack(msg.sid, msg.n);
        return;
      case 'end':
        this.deps.tunnel.end(msg.sid, msg.code, msg.reason);
        return;
      case 'turn':
        this.deps.onTurn(validTurn(msg.turn));
        return;
      case 'unbound':
        this.deps.log.warn({}, 'cloud: the fleet removed this device; binding forgotten');
        this.drop(ws);
        this.deps.onRevoked('fleet (unbound)');
        return;
      default:
        // a frame only the other direction sends: ignored
        return;
    }
  }

  private welcome(ws: WebSocket, msg: Extract<AgentControl, { t: 'welcome' }>): void {
    this.clock.clearTimeout(this.helloTimer);
    this.helloTimer = null;
    this.attempt = 0;
    this.endpointIndex = 0;
    const ping =
      typeof msg.ping_ms === 'number' && msg.ping_ms >= 1000 ? msg.ping_ms : this.timing.pingMs;
    this.pingMs = Math.min(ping, this.timing.pingMs);
    const replica = typeof msg.replica === 'string' ? msg.replica.slice(0, 200) : null;
    const endpoints = Array.isArray(msg.endpoints)
      ? msg.endpoints
          .filter((e): e is string => typeof e === 'string' && /^wss:\/\//.test(e))
          .slice(0, 16)
      : [];
    if (endpoints.length > 0) this.deps.onEndpoints(endpoints);
    this.setState('online', replica, null);
    this.deps.onTurn(validTurn(msg.turn));
    this.schedulePing(ws);
  }

  private schedulePing(ws: WebSocket): void {
    this.pingTimer = this.clock.setTimeout(
      () => {
        if (this.ws !== ws) return;
        // SPEC: dead after AGENT_DEAD_MS without any frame from the fleet
        if (this.clock.now() - this.lastSeen >= this.timing.deadMs) {
          ws.terminate();
          return;
        }
        ws.send(JSON.stringify({ t: 'ping', ts: this.clock.now() } satisfies AgentControl));
        this.schedulePing(ws);
      },
      Math.min(this.pingMs, this.timing.deadMs),
    );
  }

  private async runCommand(ws: WebSocket, msg: Extract<AgentControl, { t: 'cmd' }>): Promise<void> {
    const id = msg.id;
    let frame: AgentControl;
    if (!COMMANDS.includes(msg.name)) {
      frame = { t: 'res', id, ok: false, error: 'unknown_command', message: 'Unknown command' };
    } else {
      try {
        const args = msg.args && typeof msg.args === 'object' ? msg.args : {};
        frame = { t: 'res', id, ok: true, result: await this.deps.command(msg.name, args) };
      } catch (err) {
        const code = err instanceof AgentCommandError ? err.code : 'failed';
        frame = { t: 'res', id, ok: false, error: code, message: (err as Error).message };
      }
    }
    if (ws.readyState !== WebSocket.OPEN) return;
    const text = JSON.stringify(frame);
    ws.send(
      text.length > AGENT_MAX_FRAME
        ? JSON.stringify({
            t: 'res',
            id,
            ok: false,
            error: 'too_large',
            message: 'The result is over the frame limit',
          })
        : text,
    );
    if (msg.name === 'unbind' && frame.ok) {
      this.drop(ws);
      this.deps.onRevoked('fleet (unbind command)');
    }
  }

  private lost(why: string): void {
    this.clearTimers();
    this.ws = null;
    this.deps.tunnel.closeAll();
    this.deps.onTurn(null);
    if (!this.running) return;
    this.deps.log.info({ why }, 'cloud: agent offline');
    this.setState('offline', null, why);
    this.retry();
  }

  private retry(): void {
    if (!this.running) return;
    const delay = backoffDelay(this.attempt, this.random, this.timing.baseMs, this.timing.maxMs);
    this.attempt += 1;
    this.lastDelayMs = delay;
    this.retryTimer = this.clock.setTimeout(() => {
      this.retryTimer = null;
      this.connect();
    }, delay);
  }
}

/** TURN credentials from the fleet, or null when they are not usable. */
function validTurn(turn: unknown): FleetTurn | null {
  if (!turn || typeof turn !== 'object') return null;
  const t = turn as Partial<FleetTurn>;
  if (!Array.isArray(t.uris) || typeof t.username !== 'string' || typeof t.password !== 'string') {
    return null;
  }
  const uris = t.uris.filter(
    (u): u is string => typeof u === 'string' && /^(stuns?|turns?):/.test(u),
  );
  if (uris.length === 0) return null;
  return {
    uris: uris.slice(0, 16),
    username: t.username.slice(0, 512),
    password: t.password.slice(0, 512),
    ttl: typeof t.ttl === 'number' ? t.ttl : 86_400,
  };
}

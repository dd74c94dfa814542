/**
 * The screen wall's WebSocket (WALL_PATH, docs/cloud.md "The screen wall"). Before the upgrade:
 * a fleet session (401), the fleet's own Origin (403 `CrossOriginError`: another site's page
 * would carry the cookie), at most WALL_SOCKETS_PER_ACCOUNT sockets per account on this replica
 * (429). Then JSON frames from the browser (WallClientFrame; anything else closes 1008): `watch`
 * replaces the list (at most WALL_MAX_WATCH ids; ids the user does not see are ignored, never
 * confirmed), `pause` / `resume`. To the browser: state frames (JSON) and pictures (binary: u8
 * id length, the id, the JPEG) from the replica's WallHub. A socket whose send buffer is over
 * WALL_SOCKET_BUFFER gets no new picture until it drains; then the newest one it missed.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import {
  parseJsonObject,
  WALL_DEFAULT_INTERVAL_MS,
  WALL_MAX_WATCH,
  WALL_PATH,
} from '@kvm/protocol';
import { toHttp, TooManyRequestsError, ValidatorError } from '../../../server/src/errors';
import { DeviceOfflineError } from '../agents/errors';
import type { Relay } from '../agents/relay';
import type { FleetContext, FleetUser } from '../context';
import { CrossOriginError, NotSignedInError } from '../errors';
import { sameOrigin } from '../http';
import { WallHub, type WallState, type WallWatcher } from './hub';

/** Wall sockets one account may hold on one replica. */
export const WALL_SOCKETS_PER_ACCOUNT = 4;
/** Over this many bytes waiting in a socket's send buffer, pictures wait (newest wins). */
export const WALL_SOCKET_BUFFER = 1024 * 1024;
/** How often a backed-up socket is looked at again. */
const DRAIN_CHECK_MS = 100;
const DEVICE_ID_RE = /^[A-Za-z0-9_-]{1,64}$/;

/** 429: this account holds WALL_SOCKETS_PER_ACCOUNT wall sockets on this replica already. */
export class WallSocketsError extends TooManyRequestsError {
  static override readonly defaultMessage: string =
    'Too many screen walls open for this account; close one';
}

/** The wall's JSON frame from the browser, or null when it is not one. */
export function parseWallClientFrame(
  text: string,
): { t: 'watch'; ids: string[] } | { t: 'pause' } | { t: 'resume' } | null {
  const f = parseJsonObject(text);
  if (f === null) return null;
  if (f['t'] === 'pause' || f['t'] === 'resume') return { t: f['t'] };
  if (f['t'] !== 'watch' || !Array.isArray(f['ids'])) return null;
  const ids = f['ids'] as unknown[];
  if (ids.length > WALL_MAX_WATCH) return null;
  if (!ids.every((id): id is string => typeof id === 'string' && DEVICE_ID_RE.test(id))) {
    return null;
  }
  return { t: 'watch', ids: [...new Set(ids)] };
}

/** A binary picture message: u8 id length, the id (ASCII), the JPEG. */
export function pictureFrame(id: string, jpeg: Buffer): Buffer {
  const head = Buffer.from(id, 'ascii');
  return Buffer.concat([Buffer.from([head.length]), head, jpeg]);
}

export class WallSocket implements WallWatcher {
  paused = false;
  readonly watched = new Set<string>();
  /** Pictures held back while the socket is backed up (the newest per device). */
  private readonly held = new Map<string, Buffer>();
  private drainTimer: NodeJS.Timeout | null = null;
  /** A `watch` is being checked: the latest one that came meanwhile waits (older ones drop). */
  private checking = false;
  private nextWatch: string[] | null = null;

  constructor(
    private readonly ws: WebSocket,
    private readonly user: FleetUser,
    private readonly hub: WallHub,
    private readonly visible: (user: FleetUser, ids: string[]) => Promise<Set<string>>,
  ) {}

  state(frame: WallState): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    this.ws.send(JSON.stringify(frame));
  }

  picture(id: string, jpeg: Buffer): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    if (this.ws.bufferedAmount > WALL_SOCKET_BUFFER || this.held.size > 0) {
      this.held.set(id, jpeg);
      this.drainLater();
      return;
    }
    this.ws.send(pictureFrame(id, jpeg));
  }

  private drainLater(): void {
    if (this.drainTimer) return;
    this.drainTimer = setTimeout(() => {
      this.drainTimer = null;
      if (this.ws.readyState !== this.ws.OPEN) return;
      for (const [id, jpeg] of this.held) {
        if (this.ws.bufferedAmount > WALL_SOCKET_BUFFER) break;
        this.held.delete(id);
        if (this.watched.has(id)) this.ws.send(pictureFrame(id, jpeg));
      }
      if (this.held.size > 0) this.drainLater();
    }, DRAIN_CHECK_MS);
    this.drainTimer.unref();
  }

  onMessage(data: Buffer, isBinary: boolean): void {
    const f = isBinary ? null : parseWallClientFrame(data.toString('utf8'));
    if (!f) {
      this.ws.close(1008, 'malformed wall frame');
      return;
    }
    if (f.t === 'pause' || f.t === 'resume') {
      this.paused = f.t === 'pause';
      this.hub.wake(this.watched);
      return;
    }
    this.nextWatch = f.ids;
    if (!this.checking) void this.drainWatches();
  }

  private async drainWatches(): Promise<void> {
    this.checking = true;
    try {
      while (this.nextWatch) {
        const ids = this.nextWatch;
        this.nextWatch = null;
        await this.watch(ids);
      }
    } catch {
      this.ws.close(1011, 'wall failed');
    } finally {
      this.checking = false;
    }
  }

  private async watch(ids: string[]): Promise<void> {
    const seen = ids.length > 0 ? await this.visible(this.user, ids) : new Set<string>();
    if (this.ws.readyState !== this.ws.OPEN) return;
    for (const id of [...this.watched]) {
      if (!seen.has(id)) {
        this.watched.delete(id);
        this.held.delete(id);
        this.hub.unwatch(this, id);
      }
    }
    for (const id of ids) {
      if (!seen.has(id) || this.watched.has(id)) continue;
      this.watched.add(id);
      this.hub.watch(this, id);
    }
  }

  close(): void {
    if (this.drainTimer) clearTimeout(this.drainTimer);
    this.held.clear();
    for (const id of this.watched) this.hub.unwatch(this, id);
    this.watched.clear();
  }
}

export interface WallRouteOptions {
  /** The snapshot interval (config `wall.interval_ms`). */
  intervalMs?: number;
  dropAfterMs?: number;
}

/** The devices of `ids` that `user` sees (the one visibility rule, through the directory). */
async function visibleIds(ctx: FleetContext, user: FleetUser, ids: string[]): Promise<Set<string>> {
  const found = await Promise.all(ids.map((id) => ctx.devices.forUser(user, id)));
  return new Set(found.filter((d) => d !== null).map((d) => d!.id));
}

export function registerWallRoutes(
  app: FastifyInstance,
  ctx: FleetContext,
  opts: WallRouteOptions = {},
): WallHub {
  const hub = new WallHub({
    intervalMs: opts.intervalMs ?? ctx.config.wall?.interval_ms ?? WALL_DEFAULT_INTERVAL_MS,
    ...(opts.dropAfterMs !== undefined ? { dropAfterMs: opts.dropAfterMs } : {}),
    snapshot: (id, args, timeoutMs) => {
      // the relay (agents/relay.ts) sends it to the device's replica, here or over NATS
      const relay = ctx.relay as Partial<Pick<Relay, 'command'>> | null;
      if (!relay?.command) return Promise.reject(new DeviceOfflineError('No relay here'));
      return relay.command(id, 'snapshot', args, timeoutMs);
    },
    onError: (id, err) => ctx.log.debug({ device: id, err }, 'wall: snapshot failed'),
  });
  const perAccount = new Map<string, number>();
  const admitted = new WeakMap<FastifyRequest, FleetUser>();

  async function refuse(reply: FastifyReply, err: unknown): Promise<void> {
    const { status, body } = toHttp(err);
    await reply.code(status).header('cache-control', 'no-store').send(body);
  }

  app.route({
    method: 'GET',
    url: WALL_PATH,
    preValidation: async (req, reply) => {
      const origin = req.headers.origin;
      if (origin === undefined || !sameOrigin(origin, req.headers.host)) {
        await refuse(reply, new CrossOriginError());
        return;
      }
      const user = await ctx.userOf(req);
      if (!user) {
        await refuse(reply, new NotSignedInError());
        return;
      }
      if ((perAccount.get(user.accountId) ?? 0) >= WALL_SOCKETS_PER_ACCOUNT) {
        await refuse(reply, new WallSocketsError());
        return;
      }
      admitted.set(req, user);
    },
    handler: async (_req, reply) => refuse(reply, new ValidatorError('The wall is a WebSocket')),
    wsHandler: (socket: WebSocket, req: FastifyRequest) => {
      const user = admitted.get(req);
      if (!user) {
        socket.close(1008, 'not admitted');
        return;
      }
      perAccount.set(user.accountId, (perAccount.get(user.accountId) ?? 0) + 1);
      const wall = new WallSocket(socket, user, hub, (u, ids) => visibleIds(ctx, u, ids));
      socket.on('message', (data: Buffer, isBinary: boolean) => wall.onMessage(data, isBinary));
      socket.on('error', () => undefined);
      socket.on('close', () => {
        wall.close();
        const n = (perAccount.get(user.accountId) ?? 1) - 1;
        if (n <= 0) perAccount.delete(user.accountId);
        else perAccount.set(user.accountId, n);
      });
    },
  });
  app.addHook('onClose', async () => hub.close());
  return hub;
}

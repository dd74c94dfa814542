/**
 * The fleet's relay half (docs/cloud.md): the agent socket at AGENT_PATH, the bus to the other
 * replicas (NATS), the tunnel by path, TURN credentials. The core calls `registerRelay` on its
 * Fastify app (with @fastify/websocket registered) and gets `ctx.relay` set.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import websocket from '@fastify/websocket';
import type { WebSocket, WebSocketServer } from 'ws';
import {
  AGENT_AUTH_SCHEME,
  AGENT_DEAD_MS,
  AGENT_MAX_FRAME,
  AGENT_MAX_STREAMS,
  AGENT_PATH,
  AGENT_PING_MS,
} from '@kvm/protocol';
import {
  ForbiddenError,
  UnauthorizedError,
  ValidatorError,
  toHttp,
} from '../../../server/src/errors';
import type { FleetContext, FleetDevice } from '../context';
import { NatsBus, type NatsBusOptions } from '../bus/nats-bus';
import { handleProtocols, registerTunnel, type TunnelOptions } from '../tunnel';
import { AgentConnection, CLOSE } from './connection';
import { Relay } from './relay';

export { Relay } from './relay';

export interface RelayOptions extends TunnelOptions, NatsBusOptions {
  /** Silence after which an agent socket is dead (AGENT_DEAD_MS). */
  deadMs: number;
  helloMs: number;
  maxStreams: number;
}

export const DEFAULT_RELAY_OPTIONS: RelayOptions = {
  deadMs: AGENT_DEAD_MS,
  helloMs: 10_000,
  maxStreams: AGENT_MAX_STREAMS,
  headTimeoutMs: 30_000,
  presenceMs: 1000,
  presenceGoneMs: 3500,
  requestTimeoutMs: 5000,
};

/** `Authorization: Device <id>:<secret>`. */
const AUTH_RE = new RegExp(`^${AGENT_AUTH_SCHEME} ([A-Za-z0-9_-]{1,64}):([A-Za-z0-9_-]{1,128})$`);

function send(reply: FastifyReply, err: unknown): FastifyReply {
  const { status, body } = toHttp(err);
  return reply.code(status).send(body);
}

/**
 * ws's options for every fleet socket: the agent socket's frame limit (ws refuses a longer
 * message with 1009 before buffering it) and the tunnel's subprotocol choice. @fastify/websocket
 * reads them at each handshake; set here so the relay's limits live with the relay.
 */
function tuneWebsocketServer(app: FastifyInstance): void {
  const wss = (app as unknown as { websocketServer: WebSocketServer }).websocketServer;
  const o = wss.options as { maxPayload?: number; handleProtocols?: unknown };
  if (!o.maxPayload || o.maxPayload > AGENT_MAX_FRAME) o.maxPayload = AGENT_MAX_FRAME;
  o.handleProtocols = handleProtocols;
}

export async function registerRelay(
  app: FastifyInstance,
  ctx: FleetContext,
  options: Partial<RelayOptions> = {},
): Promise<Relay> {
  const opts: RelayOptions = { ...DEFAULT_RELAY_OPTIONS, ...options };
  const log = ctx.log.child({ part: 'relay' });
  if (!app.hasDecorator('websocketServer')) {
    await app.register(websocket, { options: { maxPayload: AGENT_MAX_FRAME, handleProtocols } });
  }
  tuneWebsocketServer(app);

  const relay = new Relay(ctx, log);
  if (ctx.config.nats.length > 0) {
    relay.bus = await NatsBus.connect(ctx.config, relay, log, opts);
  }
  ctx.relay = relay;

  const admitted = new WeakMap<FastifyRequest, FleetDevice>();

  async function authenticate(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const m = AUTH_RE.exec(String(req.headers.authorization ?? ''));
    if (!m) {
      await send(reply, new UnauthorizedError('Device credentials required'));
      return;
    }
    const deviceId = m[1]!;
    const mac = String(req.headers['x-kvm-device-mac'] ?? '');
    const serial = String(req.headers['x-kvm-device-serial'] ?? '');
    const r = await ctx.devices.authenticate(deviceId, m[2]!, { mac, serial });
    if (r.ok) {
      if (!req.ws) {
        await send(reply, new ValidatorError('The agent endpoint is a WebSocket'));
        return;
      }
      admitted.set(req, r.device);
      return;
    }
    if (r.reason === 'fingerprint') {
      log.warn({ device: deviceId, ip: req.ip }, 'agent refused: secret used on other hardware');
      await ctx.devices
        .event('agent_refused', {
          deviceId,
          detail: { reason: 'fingerprint', ip: req.ip, mac, serial },
        })
        .catch((err: unknown) => log.warn({ err }, 'agent_refused event not recorded'));
      await send(reply, new ForbiddenError('These credentials belong to other hardware'));
      return;
    }
    if (r.reason === 'revoked') reply.header('X-Kvm-Binding', 'revoked');
    await send(
      reply,
      new UnauthorizedError(r.reason === 'revoked' ? 'The binding was removed' : 'Unknown device'),
    );
  }

  function onAgent(socket: WebSocket, req: FastifyRequest): void {
    const device = admitted.get(req);
    if (!device) {
      socket.close(CLOSE.policy, 'not authenticated');
      return;
    }
    const conn = new AgentConnection(
      socket,
      device,
      {
        deadMs: opts.deadMs,
        helloMs: opts.helloMs,
        maxStreams: opts.maxStreams,
        welcome: () => ({
          replica: ctx.config.replica,
          endpoints: relay.endpoints(),
          ping_ms: AGENT_PING_MS,
        }),
        turn: () => relay.turnFor(device.id),
      },
      log,
    );
    const ip = req.ip;
    const note = (kind: string, detail: Record<string, unknown>): void => {
      ctx.devices
        .event(kind, { deviceId: device.id, accountId: device.accountId, detail })
        .catch((err: unknown) => log.warn({ err, kind }, 'event not recorded'));
    };
    relay.attach(conn);
    ctx.devices
      .setPresence(device.id, ctx.config.replica)
      .catch((err: unknown) => log.warn({ err }, 'presence not recorded'));
    conn.onReady = () => {
      note('agent_connected', { replica: ctx.config.replica, ip, version: conn.hello?.version });
      for (const l of relay.helloListeners) l(device.id, conn.hello?.version ?? '');
    };
    conn.onUnbound = () => {
      ctx.devices
        .unboundByDevice(device.id)
        .catch((err: unknown) =>
          log.warn({ err, device: device.id }, 'unbound by device not recorded'),
        );
    };
    conn.onClose = (code, reason) => {
      const last = relay.detach(conn);
      // Replaced: the newer socket (here or on another replica) holds the presence now.
      if (last && code !== CLOSE.replaced) {
        ctx.devices
          .setPresence(device.id, null)
          .catch((err: unknown) => log.warn({ err }, 'presence not recorded'));
      }
      note('agent_disconnected', { replica: ctx.config.replica, code, reason });
    };
  }

  app.route({
    method: 'GET',
    url: AGENT_PATH,
    preValidation: authenticate,
    handler: async (_req, reply) =>
      send(reply, new ValidatorError('The agent endpoint is a WebSocket')),
    wsHandler: onAgent,
  });
  await registerTunnel(app, ctx, relay, opts);
  app.addHook('preClose', async () => {
    await relay.close();
  });
  return relay;
}

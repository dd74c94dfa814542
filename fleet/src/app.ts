/**
 * The fleet replica's Fastify app (docs/cloud.md): the device server's HTTP edge (timeouts,
 * malformed requests answered in the kvmd envelope), @fastify/cookie and @fastify/websocket,
 * errors mapped in one place (`toHttp`), JSON bodies only (bounded), an Origin check on every
 * state-changing request, then the core's routes (accounts, devices, pages) and the relay's
 * (`registerRelay`, fleet/src/agents/).
 */
import type { FastifyInstance } from 'fastify';
import fastifyCookie from '@fastify/cookie';
import fastifyWebsocket from '@fastify/websocket';
import { AGENT_MAX_FRAME } from '@kvm/protocol';
import {
  closeIfBodyUnread,
  edgeFastify,
  edgeLimits,
  guardServer,
  requireHost,
} from '../../server/src/http/edge';
import { LogBudget } from '../../server/src/http/log-budget';
import type { Accounts } from './accounts/accounts';
import { registerAccessRoutes } from './access/routes';
import { registerAccountRoutes } from './accounts/routes';
import type { FleetContext } from './context';
import type { Devices } from './devices/devices';
import { registerDeviceRoutes } from './devices/routes';
import { registerJobRoutes } from './jobs/routes';
import type { Alerts } from './alerts/alerts';
import { registerAlertRoutes } from './alerts/routes';
import { dbUnavailable, type Db } from './db/pool';
import { registerEventRoutes } from './events/routes';
import { CrossOriginError, DatabaseUnavailableError, NotFoundError, toHttp } from './errors';
import { sameOrigin } from './http';
import { registerPages } from './ui/routes';
import { registerWallRoutes } from './wall/routes';

/** The largest request body of the fleet's own API (the tunnel sets its own per route). */
export const FLEET_BODY_LIMIT = 16 * 1024;

export interface FleetCore {
  accounts: Accounts;
  devices: Devices;
  /** The replica's pool (events, alerts, jobs read and write through it). */
  db: Db;
  alerts: Alerts;
}

export interface FleetAppOptions {
  https?: { cert: Buffer; key: Buffer };
  /** Register the relay half (agents, bus, tunnel); tests of the core alone leave it out. */
  relay?: boolean;
  /** The built fleet console (default: fleet/dist/www, ui/routes.ts). */
  www?: string;
}

export async function buildFleetApp(
  ctx: FleetContext,
  core: FleetCore,
  opts: FleetAppOptions = {},
): Promise<FastifyInstance> {
  const edge = edgeLimits({
    headers_timeout_s: 10,
    idle_timeout_s: 120,
    keep_alive_timeout_s: 5,
    // one address may be a NAT with many devices (or the bench's thousand agents)
    max_connections_per_address: 10_000,
  });
  const app = edgeFastify(edge, {
    bodyLimit: FLEET_BODY_LIMIT,
    trustProxy: ctx.config.trustProxy === true,
    loggerInstance: ctx.log,
    ...(opts.https ? { https: opts.https } : {}),
  });
  guardServer(app.server, edge, ctx.log, new LogBudget());

  await app.register(fastifyCookie);
  await app.register(fastifyWebsocket, { options: { maxPayload: AGENT_MAX_FRAME } });
  // Only JSON: a text/plain body is what a cross-site <form> can send without a preflight.
  app.removeContentTypeParser('text/plain');

  app.addHook('onRequest', requireHost);
  app.addHook('onRequest', async (req) => {
    if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS') return;
    const origin = req.headers.origin;
    // Devices send no Origin; a browser always does on a POST or DELETE by fetch.
    if (origin !== undefined && !sameOrigin(origin, req.headers.host)) {
      throw new CrossOriginError();
    }
  });

  app.setErrorHandler((err, req, reply) => {
    const answer = toHttp(dbUnavailable(err) ? new DatabaseUnavailableError() : err);
    if (answer.status >= 500) req.log.error({ err, url: req.url }, 'request failed');
    else req.log.debug({ err: (err as Error).message, url: req.url }, 'request refused');
    closeIfBodyUnread(req, reply);
    void reply.code(answer.status).send(answer.body);
  });
  app.setNotFoundHandler((req, reply) => {
    const answer = toHttp(new NotFoundError(`No route ${req.method} ${req.url.split('?')[0]}`));
    void reply.code(answer.status).send(answer.body);
  });

  registerAccountRoutes(app, ctx, core.accounts);
  registerAccessRoutes(app, ctx, core);
  registerDeviceRoutes(app, ctx, core);
  registerJobRoutes(app, ctx, core);
  registerEventRoutes(app, ctx, core);
  registerAlertRoutes(app, ctx, core);
  registerPages(app, opts.www);
  registerWallRoutes(app, ctx);
  if (opts.relay !== false) {
    const { registerRelay } = await import('./agents/index');
    await registerRelay(app, ctx);
  }
  return app;
}

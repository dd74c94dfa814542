/**
 * The Fastify instance every route plugin is registered on: the HTTP edge's limits, the hooks
 * that run for every request (closing, Host, edge checks, frame-ancestors, session), the one
 * error handler and the kvmd envelope, the route table, and the shared plugins (cookies,
 * multipart, WebSocket) with the socket registry. Nothing here knows a subsystem.
 */
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import fastifyCookie from '@fastify/cookie';
import fastifyMultipart from '@fastify/multipart';
import fastifyWebsocket from '@fastify/websocket';
import type { AppConfig } from '../config';
import { ServiceUnavailableError, toHttp } from '../errors';
import type { AuthService } from '../services/auth/auth-service';
import { SESSION_SWEEP_MS } from '../services/auth/sessions';
import { MAX_WS_PAYLOAD, SocketRegistry, wsErrorHandler } from '../ws/socket-guard';
import { registerAuthHook } from './auth';
import { registerBodyParsers } from './bodies';
import {
  closeIfBodyUnread,
  edgeFastify,
  edgeLimits,
  edgeRequestChecks,
  guardServer,
  requireHost,
} from './edge';
import { registerFormParser } from './forms';
import { frameAncestorsHook } from './frame-ancestors';
import { LogBudget } from './log-budget';

export interface RouteEntry {
  method: string;
  url: string;
  public: boolean;
  websocket: boolean;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route registered, for the auth matrix test and docs. */
    routeTable: RouteEntry[];
    /** Every open WebSocket, their budgets and counts (ws/socket-guard.ts). */
    sockets: SocketRegistry;
    /** One budget for every log line an anonymous request causes (http/log-budget.ts). */
    anonLog: LogBudget;
  }
}

export interface ServerOptions {
  logger?: FastifyServerOptions['loggerInstance'] | false;
  https?: { key: Buffer; cert: Buffer } | null;
}

/** Whether a line at `level` would be written (Fastify's no-op logger has no isLevelEnabled). */
function logsAt(log: object, level: string): boolean {
  const enabled = (log as { isLevelEnabled?: (level: string) => boolean }).isLevelEnabled;
  return typeof enabled === 'function' && enabled.call(log, level);
}

export async function createServer(
  config: AppConfig,
  auth: AuthService,
  opts: ServerOptions = {},
): Promise<FastifyInstance> {
  // The HTTP edge's timeouts and caps (http/edge.ts); some only the constructor takes.
  const edge = edgeLimits(config.server);
  const app = edgeFastify(edge, {
    bodyLimit: config.server.body_limit,
    trustProxy: false,
    // Fastify's own 503 while closing is not the kvmd envelope: the onRequest hook below answers.
    ...(opts.logger ? { loggerInstance: opts.logger } : { logger: false }),
    ...(opts.https ? { https: opts.https } : {}),
  });
  const anonLog = new LogBudget();
  guardServer(app.server, edge, app.log, anonLog);
  // During a restart in place (virtual media on/off) or a stop, requests still arriving on open
  // keep-alive connections are turned away before any service, some of them closing, is reached.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', async (_request, reply) => {
    if (!closing) return;
    reply.header('connection', 'close');
    throw new ServiceUnavailableError(
      'The device server is restarting or stopping: try again in a few seconds',
    );
  });
  app.addHook('onRequest', requireHost);
  app.addHook('onRequest', edgeRequestChecks);
  app.addHook('onRequest', frameAncestorsHook(config.server.frame_ancestors));

  app.decorate('routeTable', [] as RouteEntry[]);
  app.decorate('anonLog', anonLog);
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      if (method === 'HEAD') continue;
      app.routeTable.push({
        method,
        url: route.url,
        public: Boolean(route.config?.public),
        websocket: Boolean(
          (route as { websocket?: boolean }).websocket ??
          (route as { wsHandler?: unknown }).wsHandler,
        ),
      });
    }
  });

  app.setErrorHandler((err, request, reply) => {
    const answer = toHttp(err);
    const level = answer.status >= 500 ? 'error' : 'debug';
    // A request without a session may write to the log only within the shared budget, so
    // strangers cannot rotate the real history away (issue 9, item 16).
    const budget = request.auth == null && logsAt(request.log, level) ? app.anonLog.take() : null;
    if (budget === null || budget.ok) {
      const suppressed =
        budget?.ok && budget.suppressed > 0 ? { suppressed: budget.suppressed } : {};
      if (level === 'error')
        request.log.error({ err, url: request.url, ...suppressed }, 'request failed');
      else
        request.log.debug(
          { err: (err as Error).message, url: request.url, status: answer.status, ...suppressed },
          'request refused',
        );
    }
    closeIfBodyUnread(request, reply);
    reply.code(answer.status).send(answer.body);
  });
  // Every JSON answer in the kvmd envelope; non-object payloads (files, text) pass through.
  app.addHook('preSerialization', async (_request, reply, payload) => {
    if (
      reply.statusCode === 200 &&
      payload !== null &&
      typeof payload === 'object' &&
      !('ok' in payload)
    ) {
      return { ok: true, result: payload };
    }
    return payload;
  });

  await app.register(fastifyCookie);
  await app.register(fastifyMultipart, { limits: { fileSize: 0, files: 0, fields: 32 } });
  // Each socket's own budgets and smaller size limit are in ws/socket-guard.ts.
  await app.register(fastifyWebsocket, {
    options: { maxPayload: MAX_WS_PAYLOAD },
    errorHandler: wsErrorHandler(app.log),
  });
  const sockets = new SocketRegistry(app.log);
  sockets.sessionCheck = (token) => auth.session(token) !== null;
  app.decorate('sockets', sockets);
  auth.sessions.on('ended', (hash, reason) => sockets.endSession(hash, reason));
  // An expired session's sockets close although their client never uses its token (a terminal).
  const sessionSweep = setInterval(() => auth.sessions.expireDue(), SESSION_SWEEP_MS);
  sessionSweep.unref();
  app.addHook('onClose', async () => clearInterval(sessionSweep));
  // Header-credential sockets have no session: any change of the credentials ends them.
  auth.on('credentialsChanged', () => sockets.endHeaderAuthenticated('credentials changed'));
  registerBodyParsers(app);
  registerFormParser(app);
  registerAuthHook(app, auth, config.server.trust_proxy);
  return app;
}

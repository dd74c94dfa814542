/**
 * buildApp: the Fastify instance with every route, hook and socket. It never listens; main.ts
 * (and the tests, through inject or an ephemeral port) decide where it is served. The services
 * come from createContext (context.ts); the subsystems' routes are the list in routes/index.ts.
 */
import type { FastifyInstance } from 'fastify';
import type { AppContext } from './context';
import { createServer, type ServerOptions } from './http/server';
import { registerStatic } from './http/static';
import { RequestCounter } from './routes/metrics';
import { implicitConfirmHook } from './routes/network';
import { ROUTE_PLUGINS } from './routes/index';
import { localTargetOf } from './services/cloud/cloud-service';
import { GpioService } from './services/gpio/gpio-service';
import { attachHidInput } from './services/hid/hid-wiring';
import { attachClock } from './ws/clock';
import { EventHub } from './ws/event-hub';

export { createContext } from './context';
export type { RouteEntry } from './http/server';
export type BuildOptions = ServerOptions;

declare module 'fastify' {
  interface FastifyInstance {
    /** The event hub: state events to every /api/ws client (ws/event-hub.ts). */
    events: EventHub;
    ctx: AppContext;
  }
}

export async function buildApp(ctx: AppContext, opts: BuildOptions = {}): Promise<FastifyInstance> {
  const app = await createServer(ctx.config, ctx.auth, opts);
  app.decorate('ctx', ctx);
  const events = new EventHub(
    ctx.registry,
    app.log,
    (client) => app.sockets.checkSession(client.guard),
    app.sockets,
  );
  app.decorate('events', events);
  // Registration order is the order of a new client's snapshot.
  for (const service of [
    ctx.info,
    ctx.streamer,
    ctx.turn,
    ctx.hid,
    ctx.keymaps,
    ctx.atx,
    ctx.fingerbot,
    ctx.msd,
    ctx.ocr,
    ctx.audio,
    ctx.cloud,
  ]) {
    ctx.registry.register(service.provider());
  }
  // kvmd's GPIO: a view over the power services as they are now (a test may have replaced one).
  const gpio = new GpioService({
    atx: ctx.atx,
    wol: ctx.wol,
    fingerbot: ctx.fingerbot,
    log: app.log,
  });
  ctx.lifecycle.onStop('gpio', () => gpio.dispose());
  ctx.registry.register(gpio.provider());
  attachHidInput(events, ctx.hid);
  attachClock(events);
  // the cloud's tunnel reaches this server on loopback, trusting its own certificate
  ctx.cloud.attachLocal(() => localTargetOf(app.server, opts.https?.cert ?? null));
  events.on('streamClients', (count) => ctx.video.setWarmers(count));
  ctx.auth.sessions.on('ended', (hash) => ctx.hid.sessionEnded(hash));

  // Hooks that see every request of the app, so they live at the root, before the plugins.
  const requests = new RequestCounter();
  app.addHook('onResponse', requests.onResponse);
  app.addHook('preHandler', implicitConfirmHook(ctx.network));
  for (const plugin of ROUTE_PLUGINS) {
    await app.register(async (scope) => plugin.register(scope, { ctx, gpio, requests }));
  }
  registerStatic(app, ctx.config.server.web_dir, ctx.auth, ctx.config.server.trust_proxy);

  // The one shutdown path: the sockets' events first, then every part, last made first.
  app.addHook('onClose', async () => {
    events.close();
    await ctx.lifecycle.stop();
  });
  return app;
}

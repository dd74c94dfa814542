/**
 * `/janus/ws` as the server runs it: the Janus core (core.ts) with the ustreamer plugin
 * (ustreamer-plugin.ts), werift loaded with the first socket (webrtc.ts). Audio joins as a
 * second plugin or inside this one; the core does not change for it.
 */
import type { FastifyInstance } from 'fastify';
import type { SocketRegistry } from '../ws/socket-guard';
import { JanusGateway, mountJanus, type JanusAuthOptions } from './core';
import { UstreamerPlugin, type UstreamerPluginDeps } from './ustreamer-plugin';
import { prewarmWebrtc } from './webrtc';

export { JanusGateway, type JanusAuthOptions } from './core';
export { janusFeatures } from './ustreamer-plugin';

export interface JanusDeps extends UstreamerPluginDeps {
  /** Janus session timeout (SPEC 7: 60 s); shortened by tests. */
  sessionTimeoutMs?: number;
  /** The server's socket registry (app.ts); a gateway on its own keeps one of its own. */
  sockets?: SocketRegistry;
  /** Janus `apisecret` / `token` checks (config `webrtc.janus_api_secret`, `janus_token_auth`). */
  auth?: JanusAuthOptions;
}

/** `GET /api/janus/auth`: what the console hands janus.js (docs/api.md). */
export interface JanusAuthAnswer {
  apisecret: string | null;
  token_auth: boolean;
}

export function registerJanus(app: FastifyInstance, deps: JanusDeps): JanusGateway {
  const { sessionTimeoutMs, sockets, auth, ...pluginDeps } = deps;
  const gateway = new JanusGateway({
    plugins: [new UstreamerPlugin(pluginDeps)],
    log: deps.log,
    ...(sessionTimeoutMs !== undefined ? { sessionTimeoutMs } : {}),
    ...(sockets ? { sockets } : {}),
    ...(auth ? { auth } : {}),
    onSocket: () => prewarmWebrtc(deps.log),
  });
  // Session required (the global auth hook): the console's own janus.js needs what a
  // configured gateway asks for; a logged-in user may know it.
  app.get('/api/janus/auth', async () => {
    const answer: JanusAuthAnswer = {
      apisecret: auth?.apiSecret ?? null,
      token_auth: auth?.tokenAuth ?? false,
    };
    return answer;
  });
  return mountJanus(app, gateway);
}

/**
 * `/janus/ws` as the server runs it: the Janus core (core.ts) with the ustreamer plugin
 * (ustreamer-plugin.ts), werift loaded with the first socket (webrtc.ts). Audio joins as a
 * second plugin or inside this one; the core does not change for it.
 */
import type { FastifyInstance } from 'fastify';
import type { SocketRegistry } from '../ws/socket-guard';
import { JanusGateway, mountJanus } from './core';
import { UstreamerPlugin, type UstreamerPluginDeps } from './ustreamer-plugin';
import { prewarmWebrtc } from './webrtc';

export { JanusGateway } from './core';
export { janusFeatures } from './ustreamer-plugin';

export interface JanusDeps extends UstreamerPluginDeps {
  /** Janus session timeout (SPEC 7: 60 s); shortened by tests. */
  sessionTimeoutMs?: number;
  /** The server's socket registry (app.ts); a gateway on its own keeps one of its own. */
  sockets?: SocketRegistry;
}

export function registerJanus(app: FastifyInstance, deps: JanusDeps): JanusGateway {
  const { sessionTimeoutMs, sockets, ...pluginDeps } = deps;
  const gateway = new JanusGateway({
    plugins: [new UstreamerPlugin(pluginDeps)],
    log: deps.log,
    ...(sessionTimeoutMs !== undefined ? { sessionTimeoutMs } : {}),
    ...(sockets ? { sockets } : {}),
    onSocket: () => prewarmWebrtc(deps.log),
  });
  return mountJanus(app, gateway);
}

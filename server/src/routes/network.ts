/**
 * Ethernet settings, the host name and the confirm/revert of safe changes (GL §5.4 and §5.13;
 * ours: `confirm_network_config`, `revert_network_config`; docs/api.md "Network").
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parseHostname, parseNetworkQuery } from '../services/system/network-input';
import type { NetworkService } from '../services/system/network-service';
import { str } from '../validators';

/** GL's query carries a few addresses; nothing longer is needed. */
const NETWORK_BODY_LIMIT = 4096;

type Query = Record<string, unknown>;

function origin(request: FastifyRequest) {
  return {
    protocol: request.protocol,
    port: request.socket.localPort ?? 0,
    localAddress: request.socket.localAddress,
  };
}

/**
 * Implicit confirm: an authenticated request (any route) that reached the device on the pending
 * change's new address means the console came back there (a real device; docs/system.md). It
 * sees every request, so app.ts adds it at the root.
 */
export function implicitConfirmHook(network: NetworkService) {
  return async (request: FastifyRequest): Promise<void> => {
    if (request.auth && network.safe.pending()) {
      network.safe.noteLocalAddress(request.socket.localAddress);
    }
  };
}

export function networkRoutes(app: FastifyInstance, network: NetworkService): void {
  app.get('/api/system/get_network_config', async () => network.config());

  app.post('/api/system/set_network_config', { bodyLimit: NETWORK_BODY_LIMIT }, async (request) =>
    network.set(parseNetworkQuery(request.query as Query), origin(request)),
  );

  app.post('/api/system/confirm_network_config', async (request) => {
    await network.safe.confirm(str('id', (request.query as Query)['id']));
    return { success: true };
  });

  app.post('/api/system/revert_network_config', async (request) => {
    await network.safe.revert(str('id', (request.query as Query)['id']));
    return { success: true };
  });

  app.get('/api/system/get_hostname', async () => network.hostname());

  app.post('/api/system/set_hostname', { bodyLimit: NETWORK_BODY_LIMIT }, async (request) =>
    network.setHostname(parseHostname(request.query as Query)),
  );
}

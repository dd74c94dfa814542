/**
 * `/api/repeater/*`: the Wi-Fi client (GL §5.8 and §5.13; docs/api.md "Wi-Fi"). `connect` and
 * `remove_saved_ap` take a JSON object body; every answer is 200 with GL's shapes.
 */
import type { FastifyInstance } from 'fastify';
import { parseWifiForget, parseWifiJoin } from '../services/system/wifi-input';
import type { WifiService } from '../services/system/wifi-service';

/** A join's body is an SSID, a key and a few flags. */
export const REPEATER_BODY_LIMIT = 4096;

export function repeaterRoutes(app: FastifyInstance, wifi: WifiService): void {
  app.get('/api/repeater/scan', async () => ({ ap_list: await wifi.scan() }));

  app.get('/api/repeater/get_saved_ap_list', async () => ({ ap_list: await wifi.saved() }));

  app.get('/api/repeater/get_status', async () => wifi.status());

  app.post('/api/repeater/connect', { bodyLimit: REPEATER_BODY_LIMIT }, async (request) =>
    wifi.connect(parseWifiJoin(request.body), request.socket.localAddress),
  );

  app.post('/api/repeater/disconnect', { bodyLimit: REPEATER_BODY_LIMIT }, async () => {
    await wifi.disconnect();
    return {};
  });

  app.post('/api/repeater/enable', { bodyLimit: REPEATER_BODY_LIMIT }, async (request) => {
    // GL: only exactly `true` enables.
    await wifi.setEnabled((request.query as Record<string, unknown>)['enable'] === 'true');
    return {};
  });

  app.post(
    '/api/repeater/remove_saved_ap',
    { bodyLimit: REPEATER_BODY_LIMIT },
    async (request) => ({
      removed: await wifi.forget(
        parseWifiForget(request.body, request.query as Record<string, unknown>),
      ),
    }),
  );
}

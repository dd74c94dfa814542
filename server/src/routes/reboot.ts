/**
 * `GET /api/upgrade/reboot` (GL §5.6: `{"status":"Reboot started"}`): the device restarts. On the
 * developer targets that is the server in place with its VM and its network namespaces (the
 * same restart as virtual media on/off); the answer goes out first. An unconfirmed network
 * change is reverted by the restart, as a router does.
 */
import type { FastifyInstance } from 'fastify';
import type { Logger } from '../log';

export function rebootRoutes(
  app: FastifyInstance,
  opts: { requestRestart: () => void; log: Logger },
): void {
  app.get('/api/upgrade/reboot', async () => {
    opts.log.warn({}, 'reboot requested');
    opts.requestRestart();
    return { status: 'Reboot started' };
  });
}

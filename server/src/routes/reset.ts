/**
 * `GET /api/upgrade/reset_default` (GL §5.6: `{"status":"Reset to factory default started"}`):
 * settings, password, sessions, 2FA, images, network and system settings are wiped and the
 * device restarts into first-run setup. Crash-safe: only a marker is written here; the wipe
 * runs at the next start (services/support/reset.ts).
 */
import type { FastifyInstance } from 'fastify';
import type { Logger } from '../log';
import { requestReset } from '../services/support/reset';

export function resetRoutes(
  app: FastifyInstance,
  opts: { dataDir: string; requestRestart: () => void; log: Logger },
): void {
  app.get('/api/upgrade/reset_default', async () => {
    await requestReset(opts.dataDir);
    opts.log.warn({}, 'reset to defaults requested');
    opts.requestRestart();
    return { status: 'Reset to factory default started' };
  });
}

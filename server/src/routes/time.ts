/**
 * `/api/system/time` (GET/POST), `/api/system/timezone/list`, `/api/system/timezone` (GL §5.5,
 * 5.13). Rules and sign conventions: services/system/time-service.ts.
 */
import type { FastifyInstance } from 'fastify';
import type { TimeService } from '../services/system/time-service';

export function timeRoutes(app: FastifyInstance, time: TimeService): void {
  const q = (request: { query: unknown }) => (request.query ?? {}) as Record<string, unknown>;

  app.get('/api/system/time', async () => time.get());

  app.post('/api/system/time', async (request) => time.set(q(request)));

  app.get('/api/system/timezone/list', async (request) => time.listZones(q(request)['region']));

  app.post('/api/system/timezone', async (request) => time.setCityZone(q(request)['timezone']));
}

/**
 * `/api/system/time` (GET/POST), `/api/system/timezone/list`, `/api/system/timezone` (GL §5.5,
 * 5.13). Rules and sign conventions: services/system/time-service.ts.
 */
import type { FastifyInstance } from 'fastify';
import { parseRegion, parseTimeQuery, parseZoneName } from '../services/system/time-input';
import type { TimeService } from '../services/system/time-service';
import { queryOf } from '../validators';

export function timeRoutes(app: FastifyInstance, time: TimeService): void {
  app.get('/api/system/time', async () => time.get());

  app.post('/api/system/time', async (request) =>
    time.set(parseTimeQuery(queryOf(request), (zone) => time.hasZone(zone))),
  );

  app.get('/api/system/timezone/list', async (request) =>
    time.listZones(parseRegion(queryOf(request)['region'])),
  );

  app.post('/api/system/timezone', async (request) =>
    time.setCityZone(parseZoneName(queryOf(request)['timezone'])),
  );
}

/** `GET events?device=&kind=&before=&limit=` (protocol/src/fleet.ts FleetEventPage). */
import type { FastifyInstance } from 'fastify';
import { FLEET_API } from '@kvm/protocol';
import type { FleetContext } from '../context';
import type { Db } from '../db/pool';
import { ok, userOrThrow } from '../http';
import { listEvents, type EventQuery } from './events';

export function registerEventRoutes(
  app: FastifyInstance,
  ctx: FleetContext,
  core: { db: Db },
): void {
  app.get<{ Querystring: EventQuery }>(`${FLEET_API}/events`, async (req) => {
    const user = await userOrThrow(req, ctx);
    const { device, kind, before, limit } = req.query;
    return ok(await listEvents(core.db, user, { device, kind, before, limit }));
  });
}

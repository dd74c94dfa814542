/** `GET events?device=&kind=&before=&limit=` (protocol/src/fleet.ts FleetEventPage). */
import type { FastifyInstance } from 'fastify';
import { FLEET_API } from '@kvm/protocol';
import type { FleetContext } from '../context';
import type { Db } from '../db/pool';
import { ok, queryOf, userOrThrow } from '../http';
import { EVENT_QUERY, listEvents } from './events';

export function registerEventRoutes(
  app: FastifyInstance,
  ctx: FleetContext,
  core: { db: Db },
): void {
  app.get(`${FLEET_API}/events`, async (req) => {
    const user = await userOrThrow(req, ctx);
    return ok(await listEvents(core.db, user, queryOf(req, EVENT_QUERY)));
  });
}

/**
 * The alerts' admin API (protocol/src/fleet.ts): `GET/POST alerts/targets`,
 * `DELETE alerts/targets/:id`, `POST alerts/targets/:id/test`, `GET alerts/deliveries?limit=`.
 */
import type { FastifyInstance } from 'fastify';
import { FLEET_API } from '@kvm/protocol';
import type { FleetContext } from '../context';
import { pageLimit } from '../events/events';
import { adminOrThrow, bodyOf, ok, queryOf } from '../http';
import type { Alerts } from './alerts';

export function registerAlertRoutes(
  app: FastifyInstance,
  ctx: FleetContext,
  core: { alerts: Alerts },
): void {
  const { alerts } = core;

  app.get(`${FLEET_API}/alerts/targets`, async (req) => {
    await adminOrThrow(req, ctx);
    return ok(await alerts.targets());
  });

  app.post(`${FLEET_API}/alerts/targets`, async (req) => {
    const user = await adminOrThrow(req, ctx);
    return ok(await alerts.addTarget(user, bodyOf(req)));
  });

  app.delete<{ Params: { id: string } }>(`${FLEET_API}/alerts/targets/:id`, async (req) => {
    const user = await adminOrThrow(req, ctx);
    await alerts.removeTarget(user, req.params.id);
    return ok({});
  });

  app.post<{ Params: { id: string } }>(`${FLEET_API}/alerts/targets/:id/test`, async (req) => {
    const user = await adminOrThrow(req, ctx);
    return ok(await alerts.test(user, req.params.id));
  });

  app.get(`${FLEET_API}/alerts/deliveries`, async (req) => {
    await adminOrThrow(req, ctx);
    return ok(await alerts.deliveries(pageLimit(queryOf(req, ['limit']).limit)));
  });
}

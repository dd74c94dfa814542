/**
 * `/api/system/get_param`, `set_param`, `otg_functions`, `reinit_udc` (GL §5.3, 5.13) and ours,
 * `set_identity_preset` (docs/api.md). Validation: services/system/identity-input.ts; storage:
 * services/system/identity-service.ts.
 */
import type { FastifyInstance } from 'fastify';
import {
  parseIdentityPreset,
  parseOtgFunctions,
  parseParamsQuery,
} from '../services/system/identity-input';
import type { IdentityService } from '../services/system/identity-service';
import { queryOf } from '../validators';

export function systemParamsRoutes(app: FastifyInstance, identity: IdentityService): void {
  app.get('/api/system/get_param', async () => identity.get());

  app.post('/api/system/set_param', async (request) =>
    identity.set(parseParamsQuery(queryOf(request), identity.mouseOutputs())),
  );

  app.post('/api/system/set_identity_preset', async (request) =>
    identity.setIdentityPreset(parseIdentityPreset(queryOf(request)['preset'])),
  );

  app.get('/api/system/otg_functions', async () => identity.otgFunctions());

  app.post('/api/system/otg_functions', async (request) =>
    identity.setOtgFunctions(parseOtgFunctions(queryOf(request))),
  );

  app.post('/api/system/reinit_udc', async () => {
    await identity.reinit();
    return {};
  });
}

/**
 * `/api/system/get_param`, `set_param`, `otg_functions`, `reinit_udc` (GL §5.3, 5.13) and ours,
 * `set_identity_preset` (docs/api.md). Validation and storage: services/system/identity-service.
 */
import type { FastifyInstance } from 'fastify';
import type { IdentityService } from '../services/system/identity-service';

export function systemParamsRoutes(app: FastifyInstance, identity: IdentityService): void {
  const q = (request: { query: unknown }) => (request.query ?? {}) as Record<string, unknown>;

  app.get('/api/system/get_param', async () => identity.get());

  app.post('/api/system/set_param', async (request) => identity.set(q(request)));

  app.post('/api/system/set_identity_preset', async (request) =>
    identity.setIdentityPreset(q(request)['preset']),
  );

  app.get('/api/system/otg_functions', async () => identity.otgFunctions());

  app.post('/api/system/otg_functions', async (request) => identity.setOtgFunctions(q(request)));

  app.post('/api/system/reinit_udc', async () => {
    await identity.reinit();
    return {};
  });
}

/** `/api/atx*` (wire-protocol.md 1.5). */
import type { FastifyInstance } from 'fastify';
import { ATX_BUTTONS, ATX_POWER_ACTIONS } from '@kvm/protocol';
import type { AtxService } from '../services/atx/atx-service';
import { bool, oneOf } from '../validators';

export function atxRoutes(app: FastifyInstance, atx: AtxService): void {
  app.get('/api/atx', async () => atx.getState());

  app.post('/api/atx/click', async (request) => {
    const q = request.query as Record<string, unknown>;
    const button = oneOf('button', q['button'], ATX_BUTTONS);
    await atx.click(button, bool('wait', q['wait'], false));
    return {};
  });

  app.post('/api/atx/power', async (request) => {
    const q = request.query as Record<string, unknown>;
    const action = oneOf('action', q['action'], ATX_POWER_ACTIONS);
    await atx.power(action, bool('wait', q['wait'], false));
    return {};
  });
}

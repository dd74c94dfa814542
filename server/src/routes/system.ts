/** `/api/system/get_config` and `set_config`: the console's settings blob (SPEC 3). */
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context';
import { ValidatorError } from '../errors';

export const SET_CONFIG_BODY_LIMIT = 256 * 1024;

export function systemRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get('/api/system/get_config', async () => ({ success: true, config: ctx.settings.get() }));

  app.post('/api/system/set_config', { bodyLimit: SET_CONFIG_BODY_LIMIT }, async (request) => {
    const type = request.headers['content-type'] ?? '';
    if (!type.startsWith('application/json')) {
      throw new ValidatorError('Configuration data must be in JSON object format');
    }
    const config = await ctx.settings.set(request.body);
    return { success: true, config };
  });
}

/** `/api/init/*`: first-run password and password change (wire-protocol.md 5.10). */
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context';
import { askerOf } from '../http/auth';
import { clientIp } from '../http/client-ip';
import { str } from '../validators';

export function initRoutes(app: FastifyInstance, ctx: AppContext): void {
  const { auth } = ctx;
  const trustProxy = ctx.config.server.trust_proxy;

  app.get('/api/init/is_inited', { config: { public: true } }, async () => ({
    is_inited: auth.isInited(),
    country_code: ctx.config.device.country_code,
  }));

  // Public, but only while the device is not initialised: afterwards 403 and nothing changes.
  // Exactly one of concurrent calls wins (auth-service.ts), the others get 403.
  app.get('/api/init/init', { config: { public: true, sameOrigin: true } }, async (request) => {
    const q = request.query as Record<string, unknown>;
    const password = str('password', q['password'], { hidden: true });
    await auth.init(password, clientIp(request, trustProxy));
    request.log.info('device initialised');
    return {};
  });

  app.post('/api/init/change_password', async (request) => {
    const q = request.query as Record<string, unknown>;
    const user = str('user', q['user'] ?? request.auth?.user ?? '');
    const oldPassword = str('old_password', q['old_password'], { hidden: true });
    const newPassword = str('new_password', q['new_password'], { hidden: true });
    // The old password is guessed like a login: same limiter, same hash gate.
    await auth.changePassword(
      user,
      oldPassword,
      newPassword,
      request.auth?.token ?? null,
      askerOf(request, trustProxy, 'change_password'),
    );
    request.log.info({ user }, 'password changed');
    return {};
  });
}

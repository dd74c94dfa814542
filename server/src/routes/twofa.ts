/** `/api/2fa/*`: TOTP second factor (wire-protocol.md 5.9). */
import type { FastifyInstance } from 'fastify';
import { NotFoundError, ValidatorError } from '../errors';
import { askerOf, TRUSTED_DEVICE_COOKIE } from '../http/auth';
import type { AppContext } from '../context';
import { str } from '../validators';

function code(name: string, value: unknown): string {
  const v = str(name, value, { hidden: true });
  if (!/^\d{6}$/.test(v))
    throw new ValidatorError(`The argument '${name}' is not a valid 6-digit code`);
  return v;
}

export function twoFaRoutes(app: FastifyInstance, ctx: AppContext): void {
  const { auth } = ctx;
  const trustProxy = ctx.config.server.trust_proxy;

  app.get('/api/2fa/is_enabled', { config: { public: true } }, async (request) => {
    const trusted = request.cookies[TRUSTED_DEVICE_COOKIE];
    return {
      enabled: auth.isTwoFaEnabled(),
      trusted: trusted !== undefined && auth.isTrusted(trusted),
    };
  });

  app.get('/api/2fa/create', async () => auth.createTwoFa());

  app.get('/api/2fa/init', async (request) => {
    const q = request.query as Record<string, unknown>;
    await auth.enableTwoFa(str('secret', q['secret'], { hidden: true }), code('key', q['key']));
    request.log.info('2FA enabled');
    return {};
  });

  app.get('/api/2fa/show', async () => {
    const uri = auth.showTwoFa();
    if (!uri) throw new NotFoundError('2FA is not enabled');
    return { URI: uri };
  });

  // A code is accepted once (also here); wrong codes count against the login limiter.
  app.get('/api/2fa/verify', async (request) => {
    const q = request.query as Record<string, unknown>;
    await auth.verifyTwoFa(code('code', q['code']), {
      ...askerOf(request, trustProxy, '2fa_verify'),
      user: request.auth?.user,
    });
    return {};
  });

  // Turning 2FA off needs a current code (a stolen session alone must not remove the factor).
  app.get('/api/2fa/delete', async (request, reply) => {
    const q = request.query as Record<string, unknown>;
    await auth.disableTwoFa(code('code', q['code']), {
      ...askerOf(request, trustProxy, '2fa_delete'),
      user: request.auth?.user,
    });
    reply.clearCookie(TRUSTED_DEVICE_COOKIE, { path: '/' });
    request.log.info('2FA disabled');
    return {};
  });
}

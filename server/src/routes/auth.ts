/** `/api/auth/*`: login (plain and with 2FA), logout, check. wire-protocol.md 1.2. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ADMIN_USER } from '@kvm/protocol';
import { ValidatorError } from '../errors';
import { AUTH_COOKIE, askerOf, authenticate, TRUSTED_DEVICE_COOKIE } from '../http/auth';
import { readForm } from '../http/forms';
import type { AppContext } from '../context';
import { bool, int, str } from '../validators';

export function authRoutes(app: FastifyInstance, ctx: AppContext): void {
  const { auth } = ctx;
  const secure = ctx.config.server.tls;
  const trustProxy = ctx.config.server.trust_proxy;

  const setSessionCookie = (reply: FastifyReply, token: string): void => {
    reply.setCookie(AUTH_COOKIE, token, { httpOnly: true, sameSite: 'strict', path: '/', secure });
  };

  const login = async (request: FastifyRequest, reply: FastifyReply, withCode: boolean) => {
    const form = await readForm(request);
    const user = str('user', form['user'] ?? '');
    const passwd = str('passwd', form['passwd'] ?? '', { hidden: true });
    const expireS = int('expire', form['expire'], { min: 0, fallback: 0 });
    let code: string | undefined;
    let remember = false;
    if (withCode) {
      code = str('code', form['code'], { hidden: true });
      if (!/^\d{6}$/.test(code))
        throw new ValidatorError("The argument 'code' is not a valid 6-digit code");
      remember = bool('remember', form['remember'], false);
    }
    const token = await auth.login({
      user,
      passwd,
      code,
      expireS,
      trustedToken: request.cookies[TRUSTED_DEVICE_COOKIE],
      ...askerOf(request, trustProxy, withCode ? 'login_with_2fa' : 'login'),
    });
    setSessionCookie(reply, token);
    if (remember && auth.isTwoFaEnabled()) {
      const trusted = await auth.trustDevice();
      reply.setCookie(TRUSTED_DEVICE_COOKIE, trusted.token, {
        httpOnly: true,
        sameSite: 'strict',
        path: '/',
        secure,
        maxAge: trusted.maxAgeS,
      });
    }
    request.log.info({ user, twofa: withCode || auth.isTwoFaEnabled() }, 'login');
    return { token };
  };

  const publicWrite = { config: { public: true, sameOrigin: true } };
  app.post('/api/auth/login', publicWrite, (req, reply) => login(req, reply, false));
  app.post('/api/auth/login_with_2fa', publicWrite, (req, reply) => login(req, reply, true));

  app.post('/api/auth/logout', async (request, reply) => {
    // GL (default): ends the token that came with the call (header, query or cookie); PiKVM
    // (`auth.logout_scope: user`): every session of the caller's user.
    const token = request.auth?.token;
    if (ctx.config.auth.logout_scope === 'user' && request.auth)
      await auth.logoutUser(request.auth.user);
    else if (token) await auth.logout(token);
    reply.clearCookie(AUTH_COOKIE, { path: '/' });
    return {};
  });

  // Public route that answers for itself: 200 / 401 / 403 (the console's session probe).
  app.get('/api/auth/check', { config: { public: true } }, async (request) => {
    const result = await authenticate(request, auth, trustProxy);
    return { user: result.user ?? ADMIN_USER };
  });
}

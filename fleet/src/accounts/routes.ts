/**
 * The fleet's account API (docs/cloud.md "Fleet API"): sign-up with an e-mail code, login
 * (cookie `fleet_session`: httpOnly, Secure, SameSite=Lax), logout, me, TOTP.
 */
import type { FastifyInstance } from 'fastify';
import { FLEET_API } from '@kvm/protocol';
import type { FleetContext } from '../context';
import { NotSignedInError } from '../errors';
import { bodyOf, ipOf, ok, str, userOrThrow } from '../http';
import { SESSION_COOKIE, SESSION_TTL_MS, type Accounts } from './accounts';

export function registerAccountRoutes(
  app: FastifyInstance,
  ctx: FleetContext,
  accounts: Accounts,
): void {
  app.post(`${FLEET_API}/signup/email-code`, async (req) => {
    const b = bodyOf(req);
    return ok(await accounts.sendEmailCode(str(b, 'email', 1024), ipOf(req, ctx)));
  });

  app.post(`${FLEET_API}/signup`, async (req) => {
    const b = bodyOf(req);
    const account = await accounts.signUp(
      {
        username: str(b, 'username', 64),
        email: str(b, 'email', 1024),
        email_code: str(b, 'email_code', 64),
        password: str(b, 'password', 256),
        // "twice" is the form's rule: a client that checked it itself may leave password2 out
        password2: b.password2 === undefined ? str(b, 'password', 256) : str(b, 'password2', 256),
        privacy: b.privacy === true,
        region: str(b, 'region', 64),
      },
      ipOf(req, ctx),
    );
    return ok({
      username: account.username,
      email: account.email,
      region: account.region,
    });
  });

  app.post(`${FLEET_API}/login`, async (req, reply) => {
    const b = bodyOf(req);
    const ip = ipOf(req, ctx);
    const account = await accounts.authenticate(
      {
        username: str(b, 'username', 256),
        password: str(b, 'password', 256),
        ...(b.totp !== undefined && b.totp !== '' ? { totp: str(b, 'totp', 16) } : {}),
      },
      ip,
    );
    const token = await accounts.createSession(account.id, ip);
    void reply.setCookie(SESSION_COOKIE, token, {
      httpOnly: true,
      secure: true,
      sameSite: 'lax',
      path: '/',
      maxAge: SESSION_TTL_MS / 1000,
    });
    const { id: _id, ...me } = account;
    return ok(me);
  });

  app.post(`${FLEET_API}/logout`, async (req, reply) => {
    await accounts.endSession(req.cookies[SESSION_COOKIE]);
    void reply.clearCookie(SESSION_COOKIE, {
      path: '/',
      httpOnly: true,
      secure: true,
      sameSite: 'lax',
    });
    return ok({});
  });

  app.get(`${FLEET_API}/me`, async (req) => {
    const user = await userOrThrow(req, ctx);
    const account = await accounts.get(user.accountId);
    if (!account) throw new NotSignedInError();
    const { id: _id, ...me } = account;
    return ok(me);
  });

  app.post(`${FLEET_API}/totp/setup`, async (req) => {
    const user = await userOrThrow(req, ctx);
    return ok(await accounts.totpSetup(user.accountId));
  });

  app.post(`${FLEET_API}/totp/enable`, async (req) => {
    const user = await userOrThrow(req, ctx);
    await accounts.totpEnable(user.accountId, str(bodyOf(req), 'code', 16));
    return ok({ totp_enabled: true });
  });

  app.post(`${FLEET_API}/totp/disable`, async (req) => {
    const user = await userOrThrow(req, ctx);
    const b = bodyOf(req);
    await accounts.totpDisable(
      user.accountId,
      str(b, 'password', 256),
      str(b, 'code', 16),
      ipOf(req, ctx),
    );
    return ok({ totp_enabled: false });
  });
}

/**
 * The fleet's account API (docs/cloud.md "Fleet API", "Users, groups and roles"): sign-up with
 * an e-mail code, login (cookie `fleet_session`: httpOnly, Secure, SameSite=Lax; `fleet_trust`
 * after a TOTP sign-in with `remember`), logout, me, TOTP; `login`, `login_failed` and `logout`
 * go to the event log.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { FLEET_API, FLEET_TRUST_TTL_S } from '@kvm/protocol';
import type { FleetContext } from '../context';
import { InvalidCredentialsError, InvalidTotpError, NotSignedInError } from '../errors';
import { bodyOf, ipOf, ok, str, userOrThrow } from '../http';
import { SESSION_COOKIE, SESSION_TTL_MS, TRUST_COOKIE, type Accounts } from './accounts';

const COOKIE = { httpOnly: true, secure: true, sameSite: 'lax', path: '/' } as const;

/** Sets the session cookie of a new session of `accountId` (password or OpenID Connect). */
export async function startSession(
  reply: FastifyReply,
  accounts: Accounts,
  accountId: string,
  ip: string,
): Promise<void> {
  const token = await accounts.createSession(accountId, ip);
  void reply.setCookie(SESSION_COOKIE, token, { ...COOKIE, maxAge: SESSION_TTL_MS / 1000 });
}

/**
 * Why a login failed, for the log (never the password); null when it was no attempt, or was
 * refused by the rate limit before anything was checked (a flood then writes nothing).
 */
function failedReason(e: unknown): string | null {
  if (e instanceof InvalidCredentialsError) return e.reason;
  if (e instanceof InvalidTotpError) return 'totp';
  return null;
}

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
    const username = str(b, 'username', 256);
    let done;
    try {
      done = await accounts.login(
        {
          username,
          password: str(b, 'password', 256),
          ...(b.totp !== undefined && b.totp !== '' ? { totp: str(b, 'totp', 16) } : {}),
        },
        ip,
        {
          remember: b.remember === true,
          ...(req.cookies[TRUST_COOKIE] ? { trust: req.cookies[TRUST_COOKIE] } : {}),
        },
      );
    } catch (e) {
      const reason = failedReason(e);
      if (reason) {
        const accountId = username.length <= 64 ? await accounts.idOf(username) : null;
        await ctx.devices.event('login_failed', {
          ...(accountId ? { accountId } : {}),
          detail: { username: username.slice(0, 64), reason, ip },
        });
      }
      throw e;
    }
    const { account, method, trustToken } = done;
    await startSession(reply, accounts, account.id, ip);
    if (trustToken) {
      void reply.setCookie(TRUST_COOKIE, trustToken, { ...COOKIE, maxAge: FLEET_TRUST_TTL_S });
    }
    await ctx.devices.event('login', {
      accountId: account.id,
      actor: account.username,
      detail: { method, ip },
    });
    return ok(account);
  });

  app.post(`${FLEET_API}/logout`, async (req, reply) => {
    const user = await ctx.userOf(req);
    await accounts.endSession(req.cookies[SESSION_COOKIE]);
    void reply.clearCookie(SESSION_COOKIE, COOKIE);
    if (user)
      await ctx.devices.event('logout', { accountId: user.accountId, actor: user.username });
    return ok({});
  });

  app.get(`${FLEET_API}/me`, async (req) => {
    const user = await userOrThrow(req, ctx);
    const account = await accounts.get(user.accountId);
    if (!account) throw new NotSignedInError();
    return ok(account);
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

  // forgets every browser this account trusted (this one's cookie goes too)
  app.post(`${FLEET_API}/totp/trusted/forget`, async (req, reply) => {
    const user = await userOrThrow(req, ctx);
    await accounts.forgetTrusted(user.accountId);
    void reply.clearCookie(TRUST_COOKIE, COOKIE);
    return ok({});
  });
}

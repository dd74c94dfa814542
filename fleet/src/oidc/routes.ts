/**
 * OpenID Connect sign-in's two routes (public; docs/cloud.md "Users, groups and roles"):
 * `GET oidc/start?next=` sends the browser to the provider, `GET oidc/callback` signs it in and
 * sends it on. Every failure sends the browser to `/?oidc_error=<code>#signin`: a code, never
 * the provider's text or a stack.
 */
import type { FastifyInstance } from 'fastify';
import { FLEET_API } from '@kvm/protocol';
import { startSession } from '../accounts/routes';
import type { FleetCore } from '../app';
import type { FleetContext } from '../context';
import { NotFoundError } from '../errors';
import { ipOf } from '../http';
import { OIDC_COOKIE, OIDC_STATE_TTL_S, Oidc, OidcError } from './oidc';

const COOKIE = {
  httpOnly: true,
  secure: true,
  sameSite: 'lax',
  path: `${FLEET_API}/oidc/`,
} as const;

export function registerOidcRoutes(app: FastifyInstance, ctx: FleetContext, core: FleetCore): void {
  const cfg = ctx.config.oidc;
  const oidc = cfg ? new Oidc(cfg, core.accounts) : null;
  const failed = (e: unknown, where: string): string => {
    const code = e instanceof OidcError ? e.code : 'provider';
    ctx.log.warn({ err: (e as Error).message, code }, `oidc ${where} failed`);
    return `/?oidc_error=${code}#signin`;
  };

  app.get(`${FLEET_API}/oidc/start`, async (req, reply) => {
    if (!oidc) throw new NotFoundError('OpenID Connect sign-in is not configured');
    try {
      const { url, browser } = await oidc.start(
        (req.query as Record<string, unknown>).next,
        ipOf(req, ctx),
      );
      void reply.setCookie(OIDC_COOKIE, browser, { ...COOKIE, maxAge: OIDC_STATE_TTL_S });
      return await reply.redirect(url, 302);
    } catch (e) {
      return reply.redirect(failed(e, 'start'), 302);
    }
  });

  app.get(`${FLEET_API}/oidc/callback`, async (req, reply) => {
    if (!oidc) throw new NotFoundError('OpenID Connect sign-in is not configured');
    void reply.clearCookie(OIDC_COOKIE, COOKIE);
    const ip = ipOf(req, ctx);
    try {
      const search = req.url.includes('?') ? req.url.slice(req.url.indexOf('?') + 1) : '';
      const { account, next, created } = await oidc.callback(search, req.cookies[OIDC_COOKIE]);
      if (created) {
        await ctx.devices.event('user_created', {
          accountId: account.id,
          detail: { id: account.id, username: account.username, role: account.role, by: 'oidc' },
        });
      }
      await startSession(reply, core.accounts, account.id, ip);
      await ctx.devices.event('login', {
        accountId: account.id,
        actor: account.username,
        detail: { method: 'oidc', ip },
      });
      return await reply.redirect(next, 302);
    } catch (e) {
      if (e instanceof OidcError && (e.code === 'disabled' || e.code === 'no_account')) {
        await ctx.devices.event('login_failed', { detail: { reason: `oidc_${e.code}`, ip } });
      }
      return reply.redirect(failed(e, 'callback'), 302);
    }
  });
}

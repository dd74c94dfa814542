/**
 * `/api/tailscale/*` (issue 27, docs/api.md "Tailscale"): GL's calls in GL's shapes
 * (gl-inet/glkvm `kvmd/apps/kvmd/api/tailscale.py`) and our `up` (bind) in the same pattern.
 * Arguments come from the query (GL) or a form/JSON body; every one is checked here before the
 * app sees it, and a bad one is a 400 naming it (an auth key is never echoed).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  checkTailscaleAuthKey,
  checkTailscaleExitNode,
  checkTailscaleLoginServer,
  checkTailscaleRoutes,
  type TailscaleOptionsChange,
} from '@kvm/protocol/tailscale';
import { isTailscaleControl, type TailscaleControl } from '../drivers/apps/types';
import { NotFoundError, ValidatorError } from '../errors';
import type { AppsService } from '../services/apps/apps-service';
import { bool, queryOf, str } from '../validators';

/** The query and, for a POST with a form or JSON object body, its fields (the query wins). */
function argsOf(request: FastifyRequest): Record<string, unknown> {
  const body = request.body;
  const fromBody =
    body && typeof body === 'object' && !Array.isArray(body) && !Buffer.isBuffer(body)
      ? (body as Record<string, unknown>)
      : {};
  return { ...fromBody, ...queryOf(request) };
}

/** A JSON body may carry real booleans; the query carries kvmd's words. */
function boolArg(name: string, value: unknown): boolean {
  return bool(name, typeof value === 'boolean' ? String(value) : value);
}

function checked<T>(name: string, r: { ok: true; value: T } | { ok: false; error: string }): T {
  if (!r.ok) throw new ValidatorError(`The argument '${name}' ${r.error}`);
  return r.value;
}

/** The options GL's `config` (and our `up`) take; only the ones given. */
export function tailscaleOptions(args: Record<string, unknown>): TailscaleOptionsChange {
  const out: TailscaleOptionsChange = {};
  if (args['exit_node'] !== undefined) out.exit_node = boolArg('exit_node', args['exit_node']);
  if (args['use_exit_node'] !== undefined) {
    out.use_exit_node = checked(
      'use_exit_node',
      checkTailscaleExitNode(str('use_exit_node', args['use_exit_node'])),
    );
  }
  if (args['advertise_routes'] !== undefined) {
    const routes = str('advertise_routes', args['advertise_routes']);
    if (routes.trim().toLowerCase() === 'auto') out.advertise_routes_auto = true;
    else out.advertise_routes = checked('advertise_routes', checkTailscaleRoutes(routes));
  }
  if (args['accept_routes'] !== undefined) {
    out.accept_routes = boolArg('accept_routes', args['accept_routes']);
  }
  if (args['accept_dns'] !== undefined) out.accept_dns = boolArg('accept_dns', args['accept_dns']);
  return out;
}

export function tailscaleRoutes(app: FastifyInstance, apps: AppsService): void {
  const ts = (): TailscaleControl => {
    const driver = apps.get('tailscale');
    if (!isTailscaleControl(driver)) {
      throw new NotFoundError('The Tailscale app is not available on this device');
    }
    return driver;
  };

  app.get('/api/tailscale/status', async () => ts().status());
  app.post('/api/tailscale/start', async () => ts().start());
  app.post('/api/tailscale/stop', async () => ts().stop());
  app.get('/api/tailscale/login_url', async () => ts().loginUrl());
  app.get('/api/tailscale/login_status', async () => ts().loginStatus());
  app.post('/api/tailscale/logout', async () => ts().logout());
  app.get('/api/tailscale/config', async () => ts().getConfig());
  app.post('/api/tailscale/config', async (request) => {
    const driver = ts();
    return driver.setConfig(tailscaleOptions(argsOf(request)));
  });

  app.post('/api/tailscale/up', async (request) => {
    const driver = ts();
    const args = argsOf(request);
    let loginServer: string | undefined;
    if (args['login_server'] !== undefined) {
      loginServer = checked(
        'login_server',
        checkTailscaleLoginServer(str('login_server', args['login_server'])),
      );
    }
    const options = tailscaleOptions(args);
    let authKey: string | undefined;
    if (args['auth_key'] !== undefined && args['auth_key'] !== '') {
      const custom = (loginServer ?? driver.settings.login_server) !== '';
      authKey = checked(
        'auth_key',
        checkTailscaleAuthKey(str('auth_key', args['auth_key'], { hidden: true }), custom),
      );
    }
    return driver.up({
      ...(authKey !== undefined ? { authKey } : {}),
      ...(loginServer !== undefined ? { loginServer } : {}),
      options,
    });
  });
}

/**
 * `/api/netbird/*`: the NetBird app (issue 27, docs/api.md "NetBird"), GL 1.9's routes and
 * answers: `start`, `stop`, `login` (a setup key, or the SSO page), `logout`, `config` (read and
 * set the management server), `get_info`. A refused argument is 400 `ValidatorError` naming it
 * (GL answers 200 `success: false` for those); a setup key is never echoed.
 */
import type { FastifyInstance } from 'fastify';
import {
  netbirdManagementUrlProblem,
  netbirdSetupKeyProblem,
  type NetbirdConfig,
  type NetbirdInfo,
  type NetbirdLoginAnswer,
  type NetbirdRunAnswer,
} from '@kvm/protocol/netbird';
import type { AppDriver } from '../drivers/apps/types';
import { ValidatorError } from '../errors';
import type { AppsService } from '../services/apps/apps-service';
import { appOf } from './apps';
import { bool, queryOf, str } from '../validators';

/** What the NetBird app (drivers/apps/netbird.ts, made by the registry for id `netbird`) offers. */
export interface NetbirdControl extends AppDriver {
  start(): Promise<NetbirdRunAnswer>;
  stop(): Promise<NetbirdRunAnswer>;
  login(setupKey: string | null): Promise<NetbirdLoginAnswer>;
  logout(): Promise<{ success: boolean; err_msg: string }>;
  info(): Promise<NetbirdInfo>;
  getConfig(): Promise<NetbirdConfig>;
  setConfig(change: Partial<Omit<NetbirdConfig, 'enable'>>): Promise<NetbirdConfig>;
}

const netbirdOf = (apps: AppsService): NetbirdControl =>
  appOf<NetbirdControl>(apps, 'netbird', 'NetBird');

/** GL takes `setup_key` from the query, else from a JSON body; absent is the SSO login. */
export function setupKeyOf(query: Record<string, unknown>, body: unknown): string | null {
  let raw = query['setup_key'];
  if (raw === undefined && body && typeof body === 'object' && !Array.isArray(body)) {
    raw = (body as Record<string, unknown>)['setup_key'];
  }
  if (raw === undefined || raw === null) return null;
  const key = str('setup_key', raw, { hidden: true }).trim();
  const problem = netbirdSetupKeyProblem(key);
  if (problem) {
    throw new ValidatorError(
      `The argument 'setup_key' is not a valid NetBird setup key: it ${problem}`,
    );
  }
  return key;
}

export function managementUrlOf(raw: unknown): string {
  const url = str('management_url', raw).trim();
  const problem = netbirdManagementUrlProblem(url);
  if (problem) {
    throw new ValidatorError(
      `The argument 'management_url' is not a valid management URL: it ${problem}`,
    );
  }
  return url;
}

export function netbirdRoutes(app: FastifyInstance, apps: AppsService): void {
  app.post('/api/netbird/start', async () => netbirdOf(apps).start());
  app.post('/api/netbird/stop', async () => netbirdOf(apps).stop());
  app.post('/api/netbird/login', async (request) =>
    netbirdOf(apps).login(setupKeyOf(queryOf(request), request.body)),
  );
  app.post('/api/netbird/logout', async () => netbirdOf(apps).logout());
  app.get('/api/netbird/get_info', async () => netbirdOf(apps).info());
  app.get('/api/netbird/config', async () => netbirdOf(apps).getConfig());

  /** GL: `?management_url=` (empty: NetBird's own server); ours too: `disable_dns`, `accept_routes`. */
  app.post('/api/netbird/config', async (request) => {
    const q = queryOf(request);
    const change: Partial<Omit<NetbirdConfig, 'enable'>> = {};
    if (q['management_url'] !== undefined)
      change.management_url = managementUrlOf(q['management_url']);
    if (q['disable_dns'] !== undefined) change.disable_dns = bool('disable_dns', q['disable_dns']);
    if (q['accept_routes'] !== undefined) {
      change.accept_routes = bool('accept_routes', q['accept_routes']);
    }
    if (Object.keys(change).length === 0) {
      throw new ValidatorError("The argument 'management_url' is required");
    }
    const cfg = await netbirdOf(apps).setConfig(change);
    return { success: true, ...cfg };
  });
}

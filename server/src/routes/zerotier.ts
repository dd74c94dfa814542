/**
 * `/api/zerotier/*`: the ZeroTier app (issue 27, docs/api.md "ZeroTier"), GL 1.9's routes and
 * answers (`status`, `start`, `stop`, `set_token`), then ours in the same pattern (`join`,
 * `leave`, `set`). Every network id is exactly 16 hex digits (400 `ValidatorError` naming the
 * argument otherwise; GL took 8 to 32 letters and digits, which zerotier-cli then refused).
 */
import type { FastifyInstance } from 'fastify';
import {
  normalizeNwid,
  normalizeWorldId,
  normalizeZtAddress,
  type ZerotierJoinAnswer,
  type ZerotierNetwork,
  type ZerotierRunAnswer,
  type ZerotierSetting,
  type ZerotierStatus,
} from '@kvm/protocol/zerotier';
import type { AppDriver } from '../drivers/apps/types';
import { ValidatorError } from '../errors';
import type { AppsService } from '../services/apps/apps-service';
import { appOf } from './apps';
import { bool, fail, queryOf, str } from '../validators';

/** What the ZeroTier app (drivers/apps/zerotier.ts, made by the registry for id `zerotier`) offers. */
export interface ZerotierControl extends AppDriver {
  status(): Promise<ZerotierStatus>;
  start(): Promise<ZerotierRunAnswer>;
  stop(): Promise<ZerotierRunAnswer>;
  setToken(nwid: string): Promise<ZerotierJoinAnswer>;
  join(nwid: string): Promise<ZerotierJoinAnswer>;
  leave(nwid: string): Promise<{ success: boolean; output: string }>;
  set(nwid: string, settings: Partial<Record<ZerotierSetting, boolean>>): Promise<ZerotierNetwork>;
  orbit(worldId: string, seed: string): Promise<{ success: boolean; output: string }>;
  deorbit(worldId: string): Promise<{ success: boolean; output: string }>;
}

const zerotierOf = (apps: AppsService): ZerotierControl =>
  appOf<ZerotierControl>(apps, 'zerotier', 'ZeroTier');

/** A network id argument: exactly 16 hex digits, kept in lower case. */
export function nwidOf(name: string, raw: unknown): string {
  const value = str(name, raw);
  return normalizeNwid(value.trim()) ?? fail(name, value, 'ZeroTier network id (16 hex digits)');
}

/** The query arguments of `set` and the settings they change. */
const SET_ARGS: ReadonlyArray<[string, ZerotierSetting]> = [
  ['allow_managed', 'allowManaged'],
  ['allow_global', 'allowGlobal'],
  ['allow_default', 'allowDefault'],
  ['allow_dns', 'allowDNS'],
];

export function zerotierRoutes(app: FastifyInstance, apps: AppsService): void {
  app.get('/api/zerotier/status', async () => zerotierOf(apps).status());
  app.post('/api/zerotier/start', async () => zerotierOf(apps).start());
  app.post('/api/zerotier/stop', async () => zerotierOf(apps).stop());
  app.post('/api/zerotier/set_token', async (request) =>
    zerotierOf(apps).setToken(nwidOf('token', queryOf(request)['token'])),
  );
  app.post('/api/zerotier/join', async (request) =>
    zerotierOf(apps).join(nwidOf('nwid', queryOf(request)['nwid'])),
  );
  app.post('/api/zerotier/leave', async (request) =>
    zerotierOf(apps).leave(nwidOf('nwid', queryOf(request)['nwid'])),
  );
  app.post('/api/zerotier/orbit', async (request) => {
    const q = queryOf(request);
    const world = str('world_id', q['world_id']);
    const worldId =
      normalizeWorldId(world.trim()) ??
      fail('world_id', world, 'moon world id (10 or 16 hex digits)');
    const seedRaw = str('seed', q['seed']);
    const seed =
      normalizeZtAddress(seedRaw.trim()) ??
      fail('seed', seedRaw, 'ZeroTier address (10 hex digits)');
    return zerotierOf(apps).orbit(worldId, seed);
  });
  app.post('/api/zerotier/deorbit', async (request) => {
    const world = str('world_id', queryOf(request)['world_id']);
    const worldId =
      normalizeWorldId(world.trim()) ??
      fail('world_id', world, 'moon world id (10 or 16 hex digits)');
    return zerotierOf(apps).deorbit(worldId);
  });
  app.post('/api/zerotier/set', async (request) => {
    const q = queryOf(request);
    const nwid = nwidOf('nwid', q['nwid']);
    const settings: Partial<Record<ZerotierSetting, boolean>> = {};
    for (const [arg, setting] of SET_ARGS) {
      if (q[arg] !== undefined) settings[setting] = bool(arg, q[arg]);
    }
    if (Object.keys(settings).length === 0) {
      throw new ValidatorError(
        "Give at least one of the arguments 'allow_managed', 'allow_global', 'allow_default', 'allow_dns'",
      );
    }
    return { network: await zerotierOf(apps).set(nwid, settings) };
  });
}

/** `/api/wol/*`: the Wake-on-LAN device list and the wake call (docs/api.md). */
import type { FastifyInstance } from 'fastify';
import { WOL_NAME_MAX, normalizeMac, wolNameProblem } from '@kvm/protocol';
import { ValidatorError } from '../errors';
import type { WolService } from '../services/wol/wol-service';
import { queryOf, str } from '../validators';

/** SPEC 5's device name: 1 to WOL_NAME_MAX characters, no control characters; trimmed. */
export function wolName(name: string): string {
  switch (wolNameProblem(name)) {
    case 'empty':
    case 'long':
      throw new ValidatorError(`The argument 'name' must be 1 to ${WOL_NAME_MAX} characters`);
    case 'control':
      throw new ValidatorError(
        "The argument 'name' must not contain control characters, line breaks or direction overrides",
      );
    case null:
      return name.trim();
  }
}

/** A MAC address in normalizeMac's form (six upper-case hex pairs, colons). */
export function wolMac(mac: string): string {
  const normal = normalizeMac(mac);
  if (!normal) {
    throw new ValidatorError(
      `The argument 'mac' (${JSON.stringify(mac.slice(0, 40))}) is not a valid MAC address (six pairs of hex digits separated by colons)`,
    );
  }
  return normal;
}

export function wolRoutes(app: FastifyInstance, wol: WolService): void {
  app.get('/api/wol/devices', async () => ({ devices: wol.list() }));

  /** GL 1.9's name for the same list, in GL's shape: `ip` is not kept here, so it is empty. */
  app.get('/api/wol/list', async () => ({
    devices: wol.list().map((d) => ({ ip: '', mac: d.mac, name: d.name })),
  }));

  // Both arguments must be strings before either is checked further (the order of the 400s).
  app.post('/api/wol/add', async (request) => {
    const name = str('name', queryOf(request)['name']);
    const mac = str('mac', queryOf(request)['mac']);
    return { device: await wol.add(wolName(name), wolMac(mac)) };
  });

  app.post('/api/wol/rename', async (request) => {
    const mac = str('mac', queryOf(request)['mac']);
    const name = str('name', queryOf(request)['name']);
    return { device: await wol.rename(wolMac(mac), wolName(name)) };
  });

  app.post('/api/wol/remove', async (request) => {
    await wol.remove(wolMac(str('mac', queryOf(request)['mac'])));
    return {};
  });

  app.post('/api/wol/wake', async (request) => ({
    sent: await wol.wake(wolMac(str('mac', queryOf(request)['mac']))),
  }));
}

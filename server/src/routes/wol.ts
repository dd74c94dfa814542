/** `/api/wol/*`: the Wake-on-LAN device list and the wake call (docs/api.md). */
import type { FastifyInstance } from 'fastify';
import type { WolService } from '../services/wol/wol-service';
import { str } from '../validators';

export function wolRoutes(app: FastifyInstance, wol: WolService): void {
  const q = (request: { query: unknown }) => request.query as Record<string, unknown>;

  app.get('/api/wol/devices', async () => ({ devices: wol.list() }));

  /** GL 1.9's name for the same list, in GL's shape: `ip` is not kept here, so it is empty. */
  app.get('/api/wol/list', async () => ({
    devices: wol.list().map((d) => ({ ip: '', mac: d.mac, name: d.name })),
  }));

  app.post('/api/wol/add', async (request) => ({
    device: await wol.add(str('name', q(request)['name']), str('mac', q(request)['mac'])),
  }));

  app.post('/api/wol/rename', async (request) => ({
    device: await wol.rename(str('mac', q(request)['mac']), str('name', q(request)['name'])),
  }));

  app.post('/api/wol/remove', async (request) => {
    await wol.remove(str('mac', q(request)['mac']));
    return {};
  });

  app.post('/api/wol/wake', async (request) => ({
    sent: await wol.wake(str('mac', q(request)['mac'])),
  }));
}

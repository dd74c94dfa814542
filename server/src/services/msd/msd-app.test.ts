/**
 * The MSD routes inside the whole server (buildApp through newApp): session check, envelope,
 * the `msd` state. Skipped until the lead wires createMsd/msdRoutes/msdProvider into app.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { initAndLogin, newApp } from '../../test-helpers';

let app: FastifyInstance | null = null;

afterEach(async () => {
  await app?.close();
  app = null;
});

describe('MSD in the full app', () => {
  it('guards the routes, uploads, and shows the image in the state', async () => {
    app = await newApp();
    await app.ready();
    expect(app.hasRoute({ method: 'POST', url: '/api/msd/write' })).toBe(true);
    const a = app;
    expect((await a.inject({ method: 'GET', url: '/api/msd' })).statusCode).toBe(401);
    const token = await initAndLogin(a);
    const up = await a.inject({
      method: 'POST',
      url: '/api/msd/write?image=x.iso&prefix=isos',
      headers: { token, 'content-type': 'application/octet-stream' },
      payload: Buffer.from('iso bytes'),
    });
    expect(up.json()).toEqual({
      ok: true,
      result: { image: { name: 'isos/x.iso', size: 9, written: 9 } },
    });
    const state = (await a.inject({ method: 'GET', url: '/api/msd', headers: { token } })).json();
    expect(state.ok).toBe(true);
    expect(state.result.storage.images['isos/x.iso']).toMatchObject({ complete: true, size: 9 });
    // the testbed target has no virtual media driver
    expect(state.result.online).toBe(false);
    await a.inject({
      method: 'POST',
      url: '/api/msd/set_params?image=isos/x.iso',
      headers: { token },
    });
    const plug = await a.inject({
      method: 'POST',
      url: '/api/msd/set_connected?connected=1',
      headers: { token },
    });
    expect(plug.statusCode).toBe(400);
    expect(plug.json().result.error).toBe('MsdOfflineError');
  });
});

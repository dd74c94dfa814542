import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { appWithAtx, FakeAtx } from '../services/atx/test-support';
import { initAndLogin, newApp, PASSWORD } from '../test-helpers';

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

/** The headers redfishtool (DMTF) sends; the credentials are the test's token header. */
const tool = (token: string) => ({
  token,
  accept: 'application/json',
  'odata-version': '4.0',
  'user-agent': 'redfishtool',
});

describe('Redfish', () => {
  it('serves the service root without credentials at /redfish/v1 and /api/redfish/v1', async () => {
    app = await newApp();
    await initAndLogin(app);
    for (const url of ['/redfish/v1', '/redfish/v1/', '/api/redfish/v1']) {
      const res = await app.inject({ url, headers: { accept: 'application/json' } });
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.json()).toEqual({
        '@odata.id': '/redfish/v1',
        '@odata.type': '#ServiceRoot.v1_6_0.ServiceRoot',
        Id: 'RootService',
        Name: 'Root Service',
        RedfishVersion: '1.6.0',
        Systems: { '@odata.id': '/redfish/v1/Systems' },
        Managers: { '@odata.id': '/redfish/v1/Managers' },
      });
    }
    expect((await app.inject({ url: '/redfish/v1/Systems' })).statusCode).toBe(401);
    expect((await app.inject({ url: '/api/redfish/v1/Systems/0' })).statusCode).toBe(401);
    const reset = await app.inject({
      method: 'POST',
      url: '/redfish/v1/Systems/0/Actions/ComputerSystem.Reset',
      headers: { 'content-type': 'application/json' },
      payload: { ResetType: 'ForceOff' },
    });
    expect(reset.statusCode).toBe(401);
  });

  it('lists system 0, its power state and resets it through ATX as kvmd maps ResetType', async () => {
    const atx = new FakeAtx({ hold: false });
    app = await appWithAtx(atx);
    const token = await initAndLogin(app);
    const systems = await app.inject({ url: '/redfish/v1/Systems', headers: tool(token) });
    expect(systems.json()).toEqual({
      '@odata.id': '/redfish/v1/Systems',
      '@odata.type': '#ComputerSystemCollection.ComputerSystemCollection',
      Name: 'Computer System Collection',
      Members: [{ '@odata.id': '/redfish/v1/Systems/0' }],
      'Members@odata.count': 1,
    });
    const sys = (await app.inject({ url: '/redfish/v1/Systems/0', headers: tool(token) })).json();
    expect(sys['@odata.type']).toBe('#ComputerSystem.v1_10_0.ComputerSystem');
    expect(sys.Id).toBe('0');
    expect(sys.PowerState).toBe('Off');
    expect(sys.HostName).toMatch(/^[a-zA-Z0-9_.]+$/);
    expect(sys.Actions['#ComputerSystem.Reset']).toEqual({
      'ResetType@Redfish.AllowableValues': [
        'On',
        'ForceOff',
        'GracefulShutdown',
        'ForceRestart',
        'ForceOn',
        'PushPowerButton',
      ],
      target: '/redfish/v1/Systems/0/Actions/ComputerSystem.Reset',
    });
    expect(sys.Boot).toEqual({
      BootSourceOverrideEnabled: 'Disabled',
      BootSourceOverrideTarget: null,
    });

    const reset = (type: unknown) =>
      app!.inject({
        method: 'POST',
        url: '/redfish/v1/Systems/0/Actions/ComputerSystem.Reset',
        headers: { ...tool(token), 'content-type': 'application/json' },
        payload: JSON.stringify({ ResetType: type }),
      });
    // Off: On presses power, GracefulShutdown and ForceOff do nothing (already off).
    expect((await reset('On')).statusCode).toBe(204);
    expect((await reset('GracefulShutdown')).statusCode).toBe(204);
    expect(atx.pressed).toEqual(['power']);
    atx.power = true;
    expect(
      (await app.inject({ url: '/api/redfish/v1/Systems/0', headers: tool(token) })).json()
        .PowerState,
    ).toBe('On');
    const off = await reset('ForceOff');
    expect(off.statusCode).toBe(204);
    expect(off.body).toBe('');
    await reset('ForceRestart');
    await reset('PushPowerButton');
    await expect
      .poll(() => atx.pressed, { timeout: 5000 })
      .toEqual(['power', 'power_long', 'reset', 'power']);

    const bad = await reset('Nmi');
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toEqual({
      ok: false,
      result: { error: 'HttpError', error_msg: 'Missing or invalid ResetType' },
    });
    const sid = await app.inject({ url: '/redfish/v1/Systems/1', headers: tool(token) });
    expect(sid.statusCode).toBe(400);
    expect(sid.json().result.error_msg).toBe('Missing or invalid Server ID');

    // A boot override (ipmitool/redfish clients send one before a reset) is accepted.
    const patch = await app.inject({
      method: 'PATCH',
      url: '/redfish/v1/Systems/0',
      headers: { ...tool(token), 'content-type': 'application/json' },
      payload: { Boot: { BootSourceOverrideEnabled: 'Once', BootSourceOverrideTarget: 'Pxe' } },
    });
    expect(patch.statusCode).toBe(204);
  });

  it('answers redfishtool as it runs (-S Never: Basic on every request)', async () => {
    const atx = new FakeAtx({ hold: false });
    app = await appWithAtx(atx);
    await initAndLogin(app, PASSWORD);
    const authorization = `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}`;
    const headers = { authorization, accept: 'application/json', 'odata-version': '4.0' };
    expect((await app.inject({ url: '/redfish/v1/', headers })).statusCode).toBe(200);
    const systems = (await app.inject({ url: '/redfish/v1/Systems', headers })).json();
    const sys = (await app.inject({ url: systems.Members[0]['@odata.id'], headers })).json();
    const reset = await app.inject({
      method: 'POST',
      url: sys.Actions['#ComputerSystem.Reset'].target,
      headers: { ...headers, 'content-type': 'application/json' },
      payload: '{"ResetType": "PushPowerButton"}',
    });
    expect(reset.statusCode).toBe(204);
    await expect.poll(() => atx.pressed, { timeout: 5000 }).toEqual(['power']);
    const wrong = `Basic ${Buffer.from('admin:wrong').toString('base64')}`;
    const refused = await app.inject({
      url: '/redfish/v1/Systems',
      headers: { ...headers, authorization: wrong },
    });
    expect(refused.statusCode).toBe(403);
  });

  it('describes the virtual media drive under the BMC manager', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const managers = (
      await app.inject({ url: '/redfish/v1/Managers', headers: tool(token) })
    ).json();
    expect(managers.Members).toEqual([{ '@odata.id': '/redfish/v1/Managers/BMC' }]);
    const bmc = (
      await app.inject({ url: '/redfish/v1/Managers/BMC', headers: tool(token) })
    ).json();
    expect(bmc['@odata.type']).toBe('#Manager.v1_15_0.Manager');
    const vm = (
      await app.inject({ url: '/redfish/v1/Managers/BMC/VirtualMedia/MSD', headers: tool(token) })
    ).json();
    expect(vm['@odata.type']).toBe('#VirtualMedia.v1_4_0.VirtualMedia');
    expect(vm.Oem.PiKVM).toHaveProperty('MsdEnabled');
    expect(vm.Actions['#VirtualMedia.EjectMedia'].target).toBe(
      '/redfish/v1/Managers/BMC/VirtualMedia/MSD/Actions/VirtualMedia.EjectMedia',
    );
  });
});

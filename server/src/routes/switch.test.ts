/**
 * `/api/switch*` on a device without a PiKVM Switch (kvmd 4.2xx): the empty chain's state, and
 * the actions as kvmd's API takes them (query only; aiohttp's body-less POST).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { initAndLogin, newApp } from '../test-helpers';

let app: FastifyInstance;
afterEach(async () => {
  await app?.close();
});

describe('/api/switch without a Switch', () => {
  it('answers the empty chain, which the PiKVM UI reads as no Switch', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const res = await app.inject({ url: '/api/switch', headers: { token } });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.ok).toBe(true);
    const s = body.result;
    expect(s.model.units).toEqual([]);
    expect(s.model.ports).toEqual([]);
    expect(s.model.firmware).toEqual({ version: 9 });
    expect(s.model.limits.atx.click_delays.power_long).toEqual({ default: 5.5, min: 0, max: 10 });
    expect(s.summary).toEqual({ active_port: -1, active_id: '', synced: true });
    expect(Object.keys(s.edids.all)).toEqual(['default']);
    expect(s.edids.all.default.data).toHaveLength(512);
    expect(s.edids.used).toEqual([]);
    expect(s.colors.beacon).toEqual({
      red: 228,
      green: 44,
      blue: 156,
      brightness: 255,
      blink_ms: 250,
    });
    expect(s.atx).toEqual({ busy: [], leds: { power: [], hdd: [] } });
    expect(s.beacons).toEqual({ uplinks: [], downlinks: [], ports: [] });
  });

  it('takes the actions as kvmd does and has nothing to act on', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    // kvmd's client sends these with the query only (aiohttp's body-less POST is covered for
    // every POST route by http/bodies.test.ts).
    const json = (url: string) =>
      app.inject({ method: 'POST', url, headers: { token } }).then((r) => ({
        status: r.statusCode,
        body: r.json(),
      }));
    for (const url of [
      '/api/switch/set_active_prev',
      '/api/switch/set_active_next',
      '/api/switch/set_active?port=1.2',
      '/api/switch/set_beacon?port=0&state=1',
      '/api/switch/set_beacon?uplink=0&state=0',
      '/api/switch/set_beacon?downlink=1&state=false',
      '/api/switch/set_port_params?port=0&name=Server&dummy=0&atx_click_power_delay=1.5',
      '/api/switch/set_port_params?port=2&edid_id=default',
      '/api/switch/set_colors?active=00FF00:80:0000&beacon=default',
      '/api/switch/reset?unit=0&bootloader=1',
      '/api/switch/atx/power?port=0&action=on',
      '/api/switch/atx/click?port=0.1&button=reset',
    ]) {
      expect(await json(url), url).toEqual({ status: 200, body: { ok: true, result: {} } });
    }

    const bad = async (url: string, error: string, arg?: string) => {
      const res = await json(url);
      expect(res.status, url).toBe(400);
      expect(res.body.ok).toBe(false);
      expect(res.body.result.error, url).toBe(error);
      if (arg) expect(res.body.result.error_msg, url).toContain(`'${arg}'`);
    };
    await bad('/api/switch/set_active', 'ValidatorError', 'port');
    await bad('/api/switch/set_active?port=-1', 'ValidatorError', 'port');
    await bad('/api/switch/set_beacon?port=0', 'ValidatorError', 'state');
    await bad('/api/switch/set_port_params?port=0&atx_click_power_delay=11', 'ValidatorError');
    await bad('/api/switch/set_colors?active=green', 'ValidatorError', 'active');
    await bad('/api/switch/atx/power?port=0&action=explode', 'ValidatorError', 'action');
    await bad('/api/switch/atx/click?port=0&button=ok', 'ValidatorError', 'button');
    await bad('/api/switch/edids/remove?id=default', 'ValidatorError', 'id');
    const id = '0b3ecae8-5d1a-4bd4-9c2e-8e7f3b0a1c2d';
    await bad(`/api/switch/edids/remove?id=${id}`, 'SwitchUnknownEdidError');
    await bad(`/api/switch/edids/change?id=${id}&name=x`, 'SwitchUnknownEdidError');
    await bad(`/api/switch/set_port_params?port=0&edid_id=${id}`, 'SwitchUnknownEdidError');
    await bad('/api/switch/edids/create?name=x&data=00', 'ValidatorError', 'data');
    await bad(`/api/switch/edids/create?name=x&data=${'00'.repeat(128)}`, 'SwitchNotFoundError');
  });

  it('needs a session like every route', async () => {
    app = await newApp();
    await initAndLogin(app);
    expect((await app.inject({ url: '/api/switch' })).statusCode).toBe(401);
  });
});

/**
 * `/api/switch*`: by default absent, as on GL's models without a Switch (issue 21, item 8);
 * with `device.pikvm_switch`, kvmd 4.2xx's empty chain, its actions as kvmd's API takes them
 * (query only; aiohttp's body-less POST), and the colors and EDIDs kvmd keeps (item 12).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { edidInfo } from '../services/switch/switch-settings';
import { initAndLogin, login, newApp, PASSWORD, tempDataDir } from '../test-helpers';

let app: FastifyInstance;
afterEach(async () => {
  await app?.close();
});

const withSwitch = { device: { pikvm_switch: true } };

describe("/api/switch on GL's models (no Switch)", () => {
  it('is not there: 404 in the envelope for every switch route, after the session check', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    for (const [method, url] of [
      ['GET', '/api/switch'],
      ['POST', '/api/switch/set_active?port=1'],
      ['POST', '/api/switch/set_colors?active=00FF00:80:0000'],
      ['POST', `/api/switch/edids/create?name=x&data=${'00'.repeat(128)}`],
      ['POST', '/api/switch/atx/power?port=0&action=on'],
    ] as const) {
      const res = await app.inject({ method, url, headers: { token } });
      expect(res.statusCode, url).toBe(404);
      expect(res.json(), url).toEqual({
        ok: false,
        result: {
          error: 'NotFoundError',
          error_msg: `No such route: ${method} ${url.split('?')[0]}`,
        },
      });
    }
    // a stranger learns nothing about which routes exist
    expect((await app.inject({ url: '/api/switch' })).statusCode).toBe(401);
  });
});

describe('/api/switch with device.pikvm_switch (kvmd 4.2xx, nothing on the chain)', () => {
  it('answers the empty chain, which the PiKVM UI reads as no Switch', async () => {
    app = await newApp(undefined, withSwitch);
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
    app = await newApp(undefined, withSwitch);
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
    await bad('/api/switch/edids/create?name=&data=' + '00'.repeat(128), 'ValidatorError', 'name');
  });

  it('needs a session like every route', async () => {
    app = await newApp(undefined, withSwitch);
    await initAndLogin(app);
    expect((await app.inject({ url: '/api/switch' })).statusCode).toBe(401);
  });

  it('keeps the colors and EDIDs as kvmd does, in <data>/switch.json, across a restart', async () => {
    const dataDir = await tempDataDir();
    app = await newApp(dataDir, withSwitch);
    const token = await initAndLogin(app);
    const post = (url: string) =>
      app.inject({ method: 'POST', url, headers: { token } }).then((r) => ({
        status: r.statusCode,
        body: r.json(),
      }));
    const state = async () =>
      (await app.inject({ url: '/api/switch', headers: { token } })).json().result;

    expect(
      (await post('/api/switch/set_colors?active=0a0B0c:40:00fa&inactive=FF0000:10:0000')).status,
    ).toBe(200);
    let s = await state();
    expect(s.colors.active).toEqual({
      red: 10,
      green: 11,
      blue: 12,
      brightness: 64,
      blink_ms: 250,
    });
    expect(s.colors.inactive).toEqual({ red: 255, green: 0, blue: 0, brightness: 16, blink_ms: 0 });
    // `default` puts a role back to kvmd's default; roles not named stay
    expect((await post('/api/switch/set_colors?inactive=default')).status).toBe(200);
    s = await state();
    expect(s.colors.inactive).toEqual({ red: 255, green: 0, blue: 0, brightness: 64, blink_ms: 0 });
    expect(s.colors.active.blink_ms).toBe(250);

    // an EDID with a name, a serial and audio (the server's own preset format is enough)
    const edid = monitorEdid();
    const created = await post(
      `/api/switch/edids/create?name=${encodeURIComponent(' My TV ')}&data=${edid}`,
    );
    expect(created.status).toBe(200);
    const id = created.body.result.id as string;
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    s = await state();
    expect(Object.keys(s.edids.all)).toEqual(['default', id]);
    expect(s.edids.all[id]).toEqual({
      name: 'My TV',
      data: edid.toUpperCase(),
      parsed: {
        mfc_id: 'GLK',
        product_id: 0x1234,
        serial: 0x89abcdef,
        monitor_name: 'KVM Monitor',
        monitor_serial: 'SN42',
        audio: false,
      },
    });
    // now the id is known: port params may name it, change keeps what is not given
    expect((await post(`/api/switch/set_port_params?port=0&edid_id=${id}`)).status).toBe(200);
    expect((await post(`/api/switch/edids/change?id=${id}&name=Office`)).status).toBe(200);
    expect((await state()).edids.all[id].name).toBe('Office');
    expect((await state()).edids.all[id].data).toBe(edid.toUpperCase());

    // kept across a restart, in the data folder
    await app.close();
    const file = JSON.parse(await readFile(join(dataDir, 'switch.json'), 'utf8'));
    expect(file.colors).toEqual({ active: '0A0B0C:40:00FA' });
    expect(Object.keys(file.edids)).toEqual([id]);
    app = await newApp(dataDir, withSwitch);
    const token2 = await login(app, PASSWORD);
    s = (await app.inject({ url: '/api/switch', headers: { token: token2 } })).json().result;
    expect(s.colors.active.blink_ms).toBe(250);
    expect(s.edids.all[id].name).toBe('Office');
    const removed = await app.inject({
      method: 'POST',
      url: `/api/switch/edids/remove?id=${id}`,
      headers: { token: token2 },
    });
    expect(removed.statusCode).toBe(200);
    s = (await app.inject({ url: '/api/switch', headers: { token: token2 } })).json().result;
    expect(Object.keys(s.edids.all)).toEqual(['default']);
  });

  it('serves the defaults and keeps the file aside when switch.json is unusable', async () => {
    const dataDir = await tempDataDir();
    await writeFile(join(dataDir, 'switch.json'), '{"colors": {"active": "green"}}');
    app = await newApp(dataDir, withSwitch);
    const token = await initAndLogin(app);
    const s = (await app.inject({ url: '/api/switch', headers: { token } })).json().result;
    expect(s.colors.active).toEqual({ red: 0, green: 255, blue: 0, brightness: 128, blink_ms: 0 });
  });
});

/** A 128-byte EDID: maker GLK, product 0x1234, serial 0x89ABCDEF, name and serial text. */
function monitorEdid(): string {
  const d = new Uint8Array(128);
  d.set([0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00]);
  const code = (c: string) => c.charCodeAt(0) - 0x40;
  const maker = (code('G') << 10) | (code('L') << 5) | code('K');
  d[8] = maker >> 8;
  d[9] = maker & 0xff;
  d[10] = 0x34;
  d[11] = 0x12;
  d.set([0xef, 0xcd, 0xab, 0x89], 12);
  const text = (at: number, tag: number, value: string) => {
    d.set([0, 0, 0, tag, 0], at);
    const bytes = Buffer.from(`${value}\n`.padEnd(13, ' '), 'latin1');
    d.set(bytes.subarray(0, 13), at + 5);
  };
  text(72, 0xfc, 'KVM Monitor');
  text(90, 0xff, 'SN42');
  return Buffer.from(d).toString('hex');
}

describe("kvmd's EdidInfo", () => {
  it('reads 256-byte EDIDs with the CEA audio blocks, and gives up where kvmd does', () => {
    const base = Buffer.from(monitorEdid(), 'hex');
    const long = Buffer.alloc(256);
    base.copy(long);
    long[126] = 1;
    // CEA: tag 2, revision 3, DTDs at 4 + blocks, basic audio bit; an audio and a speaker block
    const blocks = [(1 << 5) | 3, 0x09, 0x7f, 0x07, (4 << 5) | 3, 0x01, 0x00, 0x00];
    long.set([0x02, 0x03, 4 + blocks.length, 0b01000000, ...blocks], 128);
    expect(edidInfo(long.toString('hex'))?.audio).toBe(true);
    long[131] = 0;
    expect(edidInfo(long.toString('hex'))?.audio).toBe(false);
    // no CEA extension where one is announced: kvmd's parser refuses the whole EDID
    long[128] = 0;
    expect(edidInfo(long.toString('hex'))).toBeNull();
    // no name descriptor: null, as kvmd's EdidNoBlockError
    const bare = Buffer.from(base);
    bare[72 + 3] = 0;
    expect(edidInfo(bare.toString('hex'))?.monitor_name).toBeNull();
  });
});

import { createSocket, type Socket } from 'node:dgram';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { FastifyInstance } from 'fastify';
import type { GpioState } from '@kvm/protocol';
import { appWithAtx, FakeAtx } from '../services/atx/test-support';
import { escapeHtml } from '../services/gpio/gpio-service';
import { initAndLogin, PASSWORD } from '../test-helpers';

let app: FastifyInstance | undefined;
let udp: Socket | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
  udp?.close();
  udp = undefined;
});

function appWith(opts: { atx?: FakeAtx; wolPort?: number } = {}): Promise<FastifyInstance> {
  // The magic packet goes to a loopback listener of the test, never to the LAN.
  return appWithAtx(opts.atx, {
    wol: { network: 'host', address: '127.0.0.1', port: opts.wolPort ?? 9, interface: null },
  });
}

/** What PiKVM's UI sends: XMLHttpRequest POST, query only, no body and no content type. */
function xhrPost(a: FastifyInstance, url: string, token: string) {
  return a.inject({
    method: 'POST',
    url,
    headers: { cookie: `auth_token=${token}`, 'content-length': '0' },
  });
}

describe('/api/gpio over ATX', () => {
  it('offers the LEDs and buttons as channels with scheme and view, pulses, refuses the rest', async () => {
    const atx = new FakeAtx();
    app = await appWith({ atx });
    const token = await initAndLogin(app);
    const res = await app.inject({ url: '/api/gpio', headers: { token } });
    expect(res.statusCode).toBe(200);
    const { model, state } = (res.json() as { result: GpioState }).result;
    expect(Object.keys(model.scheme.inputs).sort()).toEqual(['atx_hdd_led', 'atx_power_led']);
    expect(model.scheme.outputs['atx_power']).toEqual({
      switch: false,
      pulse: { delay: 0.5, min_delay: 0.5, max_delay: 0.5 },
      hw: { driver: 'atx', pin: 'power' },
    });
    expect(model.scheme.outputs['atx_power_long']?.pulse.delay).toBe(6.5);
    expect(model.view.header.title[0]).toEqual({ type: 'label', text: 'GPIO' });
    // Every output in the view exists in the scheme (the UI looks it up there).
    const outputs = model.view.table.flat().filter((i) => i?.type === 'output');
    expect(outputs.length).toBe(3);
    for (const o of outputs)
      expect(model.scheme.outputs[(o as { channel: string }).channel]).toBeDefined();
    expect(state.inputs['atx_power_led']).toEqual({ online: true, state: false });
    expect(state.outputs['atx_reset']).toEqual({ online: true, state: false, busy: false });

    const pulse = await xhrPost(app, '/api/gpio/pulse?channel=atx_power', token);
    expect(pulse.statusCode).toBe(200);
    expect(pulse.json()).toEqual({ ok: true, result: {} });
    expect(atx.pressed).toEqual(['power']);
    // The ATX region is busy: PiKVM's UI shows its 409 message.
    const busy = await xhrPost(app, '/api/gpio/pulse?channel=atx_reset', token);
    expect(busy.statusCode).toBe(409);
    expect(busy.json().result.error).toBe('GpioChannelIsBusyError');
    const st = (await app.inject({ url: '/api/gpio', headers: { token } })).json()
      .result as GpioState;
    expect(st.state.outputs['atx_power']?.busy).toBe(true);
    atx.finish();
    await expect
      .poll(
        async () =>
          (await app!.inject({ url: '/api/gpio', headers: { token } })).json().result.state.outputs
            .atx_power.busy,
        { timeout: 5000 },
      )
      .toBe(false);

    const sw = await xhrPost(app, '/api/gpio/switch?channel=atx_power&state=1', token);
    expect(sw.statusCode).toBe(400);
    expect(sw.json().result).toEqual({
      error: 'GpioSwitchNotSupported',
      error_msg: 'This GPIO channel does not support switching',
    });
    const missing = await xhrPost(app, '/api/gpio/pulse?channel=atx_power_led', token);
    expect(missing.json().result.error).toBe('GpioChannelNotFoundError');
    for (const bad of [
      'channel=1abc',
      'channel=a%20b',
      'channel=atx_power&delay=-1',
      'channel=atx_power&delay=1e400',
      'channel=atx_power&wait=maybe',
    ]) {
      const r = await xhrPost(app, `/api/gpio/pulse?${bad}`, token);
      expect(r.statusCode, bad).toBe(400);
      expect(r.json().result.error, bad).toBe('ValidatorError');
    }
    const noState = await xhrPost(app, '/api/gpio/switch?channel=atx_power', token);
    expect(noState.json().result.error).toBe('ValidatorError');
    // A pulse with wait answers when the press is over.
    const waited = xhrPost(app, '/api/gpio/pulse?channel=atx_reset&delay=3&wait=1', token);
    await expect.poll(() => atx.pressed.length, { timeout: 5000 }).toBe(2);
    atx.finish();
    expect((await waited).statusCode).toBe(200);
    expect(atx.pressed).toEqual(['power', 'reset']);
  });

  it('sends the gpio event on /api/ws: the full state first, then diffs', async () => {
    const atx = new FakeAtx();
    app = await appWith({ atx });
    const token = await initAndLogin(app);
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as { port: number }).port;
    const ws = new WebSocket(`ws://127.0.0.1:${port}/api/ws?stream=0`, {
      headers: { cookie: `auth_token=${token}` },
    });
    const gpio: Array<Record<string, unknown>> = [];
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      const f = JSON.parse(String(data)) as { event_type: string; event: Record<string, unknown> };
      if (f.event_type === 'gpio') gpio.push(f.event);
    });
    try {
      await expect.poll(() => gpio.length, { timeout: 5000 }).toBeGreaterThanOrEqual(1);
      expect(Object.keys(gpio[0]!).sort()).toEqual(['model', 'state']);
      const n = gpio.length;
      atx.setPower(true);
      await expect.poll(() => gpio.length, { timeout: 5000 }).toBeGreaterThan(n);
      expect(gpio[n]).toEqual({
        state: { inputs: { atx_power_led: { online: true, state: true } } },
      });
      // A press flips the outputs' busy (the ATX region is shared by all three).
      await xhrPost(app, '/api/gpio/pulse?channel=atx_power_long', token);
      await expect
        .poll(
          () =>
            gpio.some(
              (e) =>
                (e['state'] as { outputs?: Record<string, { busy: boolean }> }).outputs?.[
                  'atx_power_long'
                ]?.busy === true,
            ),
          { timeout: 5000 },
        )
        .toBe(true);
      atx.finish();
    } finally {
      ws.close();
    }
  });
});

describe('/api/gpio over Wake-on-LAN', () => {
  it('wakes a device through its channel and through __wol__, and the view escapes its name', async () => {
    udp = createSocket('udp4');
    const packets: Buffer[] = [];
    udp.on('message', (m) => packets.push(m));
    await new Promise<void>((r) => udp!.bind(0, '127.0.0.1', r));
    app = await appWith({ wolPort: udp.address().port });
    const token = await initAndLogin(app);
    let st = (await app.inject({ url: '/api/gpio', headers: { token } })).json()
      .result as GpioState;
    // Testbed: no ATX and no fingerbot, no devices: an empty table hides PiKVM's GPIO menu.
    expect(st.model.view.table).toEqual([]);
    expect(st.model.scheme).toEqual({ inputs: {}, outputs: {} });
    const add = await app.inject({
      method: 'POST',
      url: '/api/wol/add?name=' + encodeURIComponent('<b>NAS</b>') + '&mac=52:54:00:12:34:56',
      headers: { token },
    });
    expect(add.statusCode, add.body).toBe(200);
    st = (await app.inject({ url: '/api/gpio', headers: { token } })).json().result as GpioState;
    expect(Object.keys(st.model.scheme.outputs).sort()).toEqual(['__wol__', 'wol_525400123456']);
    expect(st.model.view.table[0]?.[0]).toEqual({
      type: 'label',
      text: escapeHtml('Wake-on-LAN: <b>NAS</b>'),
    });
    expect(JSON.stringify(st.model.view)).not.toContain('<b>');

    const res = await xhrPost(app, '/api/gpio/pulse?channel=wol_525400123456&wait=1', token);
    expect(res.statusCode, res.body).toBe(200);
    await expect.poll(() => packets.length, { timeout: 5000 }).toBe(1);
    // kvmd's own client and Home Assistant (aiohttp): an empty octet-stream body and Basic.
    const r2 = await app.inject({
      method: 'POST',
      url: '/api/gpio/pulse?channel=__wol__&delay=0',
      headers: {
        authorization: `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}`,
        'content-type': 'application/octet-stream',
        'content-length': '0',
        'user-agent': 'Python/3.12 aiohttp/3.9.5',
      },
    });
    expect(r2.statusCode, r2.body).toBe(200);
    await expect.poll(() => packets.length, { timeout: 5000 }).toBe(2);
    expect(packets[0]!.subarray(0, 6)).toEqual(Buffer.alloc(6, 0xff));
    expect(packets[0]!.subarray(6, 12)).toEqual(Buffer.from([0x52, 0x54, 0, 0x12, 0x34, 0x56]));
  });

  it('sends the full gpio event again when a Wake-on-LAN device is added', async () => {
    app = await appWith();
    const token = await initAndLogin(app);
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as { port: number }).port;
    const ws = new WebSocket(`ws://127.0.0.1:${port}/api/ws?stream=0`, {
      headers: { cookie: `auth_token=${token}` },
    });
    const gpio: GpioState[] = [];
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      const f = JSON.parse(String(data)) as { event_type: string; event: GpioState };
      if (f.event_type === 'gpio') gpio.push(f.event);
    });
    try {
      await expect.poll(() => gpio.length, { timeout: 5000 }).toBe(1);
      expect(gpio[0]!.model.view.table).toEqual([]);
      await app.inject({
        method: 'POST',
        url: '/api/wol/add?name=pc&mac=52:54:00:00:00:01',
        headers: { token },
      });
      // Nobody asks for /api/gpio: the periodic check finds the new channel list.
      await expect.poll(() => gpio.length, { timeout: 5000 }).toBe(2);
      expect(Object.keys(gpio[1]!.model.scheme.outputs).sort()).toEqual([
        '__wol__',
        'wol_525400000001',
      ]);
      expect(gpio[1]!.state.outputs['__wol__']).toEqual({
        online: true,
        state: false,
        busy: false,
      });
    } finally {
      ws.close();
    }
  });

  it('needs a session', async () => {
    app = await appWith();
    await initAndLogin(app);
    expect((await app.inject({ url: '/api/gpio' })).statusCode).toBe(401);
    expect(
      (await app.inject({ method: 'POST', url: '/api/gpio/pulse?channel=__wol__' })).statusCode,
    ).toBe(401);
  });
});

import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { FastifyInstance } from 'fastify';
import { encodeKey, encodeMouseMove } from '@kvm/protocol';
import type { TestbedReport } from '../drivers/testbed/hid';
import { initAndLogin, newApp } from '../test-helpers';

let app: FastifyInstance;
afterEach(async () => {
  await app?.close();
});

function record(a: FastifyInstance): TestbedReport[] {
  const reports: TestbedReport[] = [];
  a.ctx.drivers.testbedHid!.on('report', (r) => reports.push(r));
  return reports;
}

const keyLog = (reports: TestbedReport[]) =>
  reports.flatMap((r) => (r.kind === 'key' ? [`${r.key}${r.pressed ? '+' : '-'}`] : []));

async function until(pred: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error('timeout');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('/api/hid', () => {
  it('answers the state and the keymaps', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const state = (await app.inject({ url: '/api/hid', headers: { token } })).json().result;
    expect(state).toMatchObject({
      enabled: true,
      online: true,
      busy: false,
      keyboard: { online: true, leds: { caps: false, num: false, scroll: false } },
      mouse: {
        online: true,
        absolute: true,
        outputs: { available: ['usb', 'usb_rel'], active: 'usb' },
      },
      jiggler: { enabled: false, active: false, interval: 60 },
    });
    const keymaps = (await app.inject({ url: '/api/hid/keymaps', headers: { token } })).json();
    expect(keymaps.result.keymaps.default).toBe('en-us');
    expect(keymaps.result.keymaps.available).toContain('de');
    expect(keymaps.result.keymaps.available.length).toBeGreaterThanOrEqual(34);
    const layout = (
      await app.inject({ url: '/api/hid/keymap?name=de', headers: { token } })
    ).json();
    expect(layout.result.keys.KeyY.base).toBe('z');
    const bad = await app.inject({ url: '/api/hid/keymap?name=../etc', headers: { token } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().result.error).toBe('ValidatorError');
  });

  it('validates and applies set_params, persisting the mouse output', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const post = (q: string) =>
      app.inject({ method: 'POST', url: `/api/hid/set_params?${q}`, headers: { token } });
    expect((await post('mouse_output=usb_win98')).statusCode).toBe(400);
    expect((await post('jiggler=maybe')).statusCode).toBe(400);
    expect((await post('keyboard_output=ps2')).statusCode).toBe(400);
    expect((await post('mouse_output=usb_rel&jiggler=1')).statusCode).toBe(200);
    const state = (await app.inject({ url: '/api/hid', headers: { token } })).json().result;
    expect(state.mouse).toMatchObject({ absolute: false, outputs: { active: 'usb_rel' } });
    expect(state.jiggler.enabled).toBe(true);
  });

  it('sends the HTTP events, validating every key first', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const reports = record(app);
    const post = (path: string) =>
      app.inject({ method: 'POST', url: `/api/hid/events/${path}`, headers: { token } });
    expect((await post('send_key?key=KeyA')).statusCode).toBe(200);
    expect((await post('send_key?key=Bogus')).statusCode).toBe(400);
    expect((await post('send_shortcut?keys=ControlLeft,Bogus')).statusCode).toBe(400);
    expect((await post('send_shortcut?keys=ControlLeft,AltLeft,Delete')).statusCode).toBe(200);
    expect((await post('send_mouse_button?button=left&state=1')).statusCode).toBe(200);
    expect((await post('send_mouse_button?button=side')).statusCode).toBe(400);
    expect((await post('send_mouse_move?to_x=-99999&to_y=5')).statusCode).toBe(200);
    expect((await post('send_mouse_wheel?delta_x=0&delta_y=300')).statusCode).toBe(200);
    expect(keyLog(reports)).toEqual([
      'KeyA+',
      'KeyA-',
      'ControlLeft+',
      'AltLeft+',
      'Delete+',
      'Delete-',
      'AltLeft-',
      'ControlLeft-',
    ]);
    expect(reports.slice(-3)).toEqual([
      { kind: 'button', button: 'left', pressed: true },
      { kind: 'move', x: -32768, y: 5 },
      { kind: 'wheel', dx: 0, dy: 127 },
    ]);
  });

  it('prints raw text in a keymap, reporting what it cannot type, whatever the Content-Type', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const reports = record(app);
    let res = await app.inject({
      method: 'POST',
      url: '/api/hid/print?keymap=de&limit=0',
      headers: { token, 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'zA€中',
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().result).toEqual({ typed: 3, unmapped: ['中'] });
    expect(keyLog(reports).slice(0, 2)).toEqual(['KeyY+', 'KeyY-']);
    res = await app.inject({
      method: 'POST',
      url: '/api/hid/print?limit=2',
      headers: { token, 'content-type': 'text/plain' },
      payload: 'abcdef',
    });
    expect(res.json().result).toEqual({ typed: 2, unmapped: [] });
    res = await app.inject({
      method: 'POST',
      url: '/api/hid/print?keymap=xx',
      headers: { token, 'content-type': 'text/plain' },
      payload: 'a',
    });
    expect(res.statusCode).toBe(400);
    res = await app.inject({
      method: 'POST',
      url: '/api/hid/print',
      headers: { token, 'content-type': 'text/plain; charset=utf-8' },
      payload: Buffer.from([0xff, 0xfe, 0xfd]),
    });
    expect(res.statusCode).toBe(400);
  });

  it('takes binary and JSON input on /api/ws and releases a client that disconnects', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const reports = record(app);
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as { port: number }).port;
    const ws = new WebSocket(`ws://127.0.0.1:${port}/api/ws?stream=0`, { headers: { token } });
    const events: Array<{ event_type: string }> = [];
    ws.on('message', (data, binary) => {
      if (!binary) events.push(JSON.parse(String(data)));
    });
    await until(() => events.some((e) => e.event_type === 'hid_keymaps'));
    expect(events.some((e) => e.event_type === 'hid')).toBe(true);
    ws.send(encodeKey('ShiftLeft', true));
    ws.send(JSON.stringify({ event_type: 'key', event: { key: 'KeyQ', state: true } }));
    ws.send(encodeMouseMove(100, -100));
    await until(() => reports.length === 3);
    ws.terminate();
    await until(() => reports.length === 5);
    expect(keyLog(reports)).toEqual(['ShiftLeft+', 'KeyQ+', 'KeyQ-', 'ShiftLeft-']);
    expect(app.ctx.drivers.testbedHid!.held).toEqual([]);
  });
});

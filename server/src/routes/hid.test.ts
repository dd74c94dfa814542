import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { FastifyInstance } from 'fastify';
import { request as httpRequest } from 'node:http';
import { PRINT_MAX_CHARS, encodeKey, encodeMouseMove } from '@kvm/protocol';
import type { TestbedReport } from '../drivers/hid/testbed';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { PASSWORD, initAndLogin, login, newApp, tempDataDir } from '../test-helpers';
import { PRINT_BODY_MAX_BYTES } from './hid';
import { stillPressed } from '../services/hid/test-support';

let app: FastifyInstance;
const dirs: string[] = [];
afterEach(async () => {
  await app?.close();
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
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
      // kvmd/GL: `enabled` = may be used; only `active` follows set_params?jiggler=
      jiggler: { enabled: true, active: false, interval: 60, schedule: [] },
    });
    const keymaps = (await app.inject({ url: '/api/hid/keymaps', headers: { token } })).json();
    expect(keymaps.result.keymaps.default).toBe('en-us');
    expect(keymaps.result.keymaps.available).toContain('de');
    expect(keymaps.result.keymaps.available.length).toBeGreaterThanOrEqual(34);
    const layout = (
      await app.inject({ url: '/api/hid/keymap?name=de', headers: { token } })
    ).json();
    expect(layout.result.keys.KeyY.base).toBe('z');
    for (const name of ['../etc', '../../etc/passwd', '/etc/passwd', 'de/../../x', 'de%00']) {
      const bad = await app.inject({
        url: `/api/hid/keymap?name=${encodeURIComponent(name)}`,
        headers: { token },
      });
      expect(bad.statusCode, name).toBe(400);
      expect(bad.json().result.error).toBe('ValidatorError');
    }
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
    expect(state.jiggler).toMatchObject({ enabled: true, active: true });
    expect((await post('jiggler=0')).statusCode).toBe(200);
    const off = (await app.inject({ url: '/api/hid', headers: { token } })).json().result;
    expect(off.jiggler).toMatchObject({ enabled: true, active: false });
  });

  it('answers kvmd 4.2xx /api/hid/inactivity in whole seconds since the last input', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const inactivity = async () => {
      const res = await app.inject({ url: '/api/hid/inactivity', headers: { token } });
      expect(res.statusCode).toBe(200);
      return res.json().result.inactivity as number;
    };
    expect(Number.isInteger(await inactivity())).toBe(true);
    await expect.poll(inactivity, { timeout: 5000, interval: 200 }).toBeGreaterThanOrEqual(1);
    await app.inject({
      method: 'POST',
      url: '/api/hid/events/send_key?key=KeyA',
      headers: { token },
    });
    expect(await inactivity()).toBe(0);
  });

  it("takes GL's set_jiggler_schedule JSON, keeps it across restarts, refuses bad times", async () => {
    const dir = await tempDataDir();
    dirs.push(dir);
    app = await newApp(dir);
    const token = await initAndLogin(app);
    // GL's web UI: axios with a JSON body.
    const send = (payload: string) =>
      app.inject({
        method: 'POST',
        url: '/api/hid/set_jiggler_schedule',
        headers: { token, 'content-type': 'application/json' },
        payload,
      });
    const periods = [
      { start: '22:00', end: '06:30' },
      { start: '9:5', end: '12:00' },
    ];
    const ok = await send(JSON.stringify({ periods }));
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toEqual({ ok: true, result: {} });
    const state = (await app.inject({ url: '/api/hid', headers: { token } })).json().result;
    expect(state.jiggler.schedule).toEqual([
      { start: '22:00', end: '06:30' },
      { start: '09:05', end: '12:00' },
    ]);
    for (const [payload, text] of [
      [JSON.stringify({ periods: [{ start: '24:00', end: '01:00' }] }), 'jiggler time (HH:MM)'],
      [JSON.stringify({ periods: [{ start: '10:00' }] }), 'jiggler time (HH:MM)'],
      [JSON.stringify({ periods: ['10:00-11:00'] }), 'jiggler period'],
      [JSON.stringify({ periods: {} }), 'jiggler schedule'],
      [JSON.stringify({ periods: Array(49).fill({ start: '01:00', end: '02:00' }) }), 'at most 48'],
      ['[]', "argument 'periods' is missing"],
      ['', "argument 'periods' is missing"],
    ] as const) {
      const bad = await send(payload);
      expect(bad.statusCode, payload).toBe(400);
      expect(bad.json().result.error).toBe('ValidatorError');
      expect(bad.json().result.error_msg).toContain(text);
    }
    const big = await send(JSON.stringify({ periods: [], pad: 'x'.repeat(20_000) }));
    expect(big.statusCode).toBe(413);
    // Nothing refused was applied; the file is GL's shape.
    expect(JSON.parse(await readFile(join(dir, 'jiggler_schedule.json'), 'utf8'))).toEqual({
      periods: state.jiggler.schedule,
    });
    await app.close();
    app = await newApp(dir);
    const again = await login(app, PASSWORD);
    const after = (await app.inject({ url: '/api/hid', headers: { token: again } })).json();
    expect(after.result.jiggler.schedule).toEqual(state.jiggler.schedule);
    // GL: no `periods` is an empty schedule.
    expect(
      (
        await app.inject({
          method: 'POST',
          url: '/api/hid/set_jiggler_schedule',
          headers: { token: again, 'content-type': 'application/json' },
          payload: '{}',
        })
      ).statusCode,
    ).toBe(200);
    const cleared = (await app.inject({ url: '/api/hid', headers: { token: again } })).json();
    expect(cleared.result.jiggler.schedule).toEqual([]);
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
    const many = Array.from({ length: 1000 }, (_, i) => (i % 2 ? 'KeyA' : 'KeyB')).join(',');
    expect((await post(`send_shortcut?keys=${many}`)).statusCode).toBe(400);
    expect((await post(`send_key?key=${'K'.repeat(8000)}`)).statusCode).toBe(400);
    for (const bad of ['NaN', 'Infinity', '1e400', '99999999999999999999', '0x', '']) {
      expect((await post(`send_mouse_move?to_x=${bad}&to_y=0`)).statusCode, bad).toBe(400);
      expect((await post(`send_mouse_wheel?delta_x=0&delta_y=${bad}`)).statusCode, bad).toBe(400);
    }
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
    // SPEC 5's numeric check: a delay is a finite decimal (Number() alone took 0x0).
    for (const delay of ['0x0', '0b1', 'Infinity', '1e999', '0.0.1']) {
      res = await app.inject({
        method: 'POST',
        url: `/api/hid/print?limit=1&delay=${encodeURIComponent(delay)}`,
        headers: { token, 'content-type': 'text/plain' },
        payload: 'a',
      });
      expect(res.statusCode, delay).toBe(400);
      expect(res.json().result.error_msg, delay).toMatch(/^The argument 'delay'.* float in \[0, /);
    }
    res = await app.inject({
      method: 'POST',
      url: '/api/hid/print',
      headers: { token, 'content-type': 'text/plain; charset=utf-8' },
      payload: Buffer.from([0xff, 0xfe, 0xfd]),
    });
    expect(res.statusCode).toBe(400);
  });

  it('types a long paste without holding up other routes, and /api/hid/reset stops it with no key left down', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const reports = record(app);
    let settled = false;
    const paste = app
      .inject({
        method: 'POST',
        url: '/api/hid/print?limit=0',
        headers: { token, 'content-type': 'text/plain' },
        payload: 'A'.repeat(PRINT_MAX_CHARS),
      })
      .finally(() => (settled = true));
    await expect.poll(() => reports.length, { timeout: 20_000 }).toBeGreaterThan(0);
    // Answered while the paste is still typing: the event loop is not held by it.
    const state = await app.inject({ url: '/api/hid', headers: { token } });
    expect(state.statusCode).toBe(200);
    expect(settled).toBe(false);
    expect(app.ctx.hid.pasting).toBe(true);

    const reset = await app.inject({ method: 'POST', url: '/api/hid/reset', headers: { token } });
    expect(reset.statusCode).toBe(200);
    const res = await paste;
    expect(res.statusCode).toBe(409);
    const result = res.json().result;
    expect(result).toMatchObject({ error: 'HidPasteStoppedError', reason: 'reset' });
    expect(result.typed).toBeLessThan(PRINT_MAX_CHARS);
    expect(app.ctx.drivers.testbedHid!.held).toEqual([]);
    expect(stillPressed(reports)).toEqual([]);
    expect(keyLog(reports).at(-1)).toBe('ShiftLeft-');
  });

  it('bounds a paste: limit=0 stops at PRINT_MAX_CHARS, the body at PRINT_BODY_MAX_BYTES', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const print = (q: string, payload: string) =>
      app.inject({
        method: 'POST',
        url: `/api/hid/print?${q}`,
        headers: { token, 'content-type': 'text/plain' },
        payload,
      });
    let res = await print('limit=0', 'a'.repeat(PRINT_MAX_CHARS + 1));
    expect(res.statusCode).toBe(400);
    expect(res.json().result.error).toBe('ValidatorError');
    res = await print(`limit=${PRINT_MAX_CHARS + 5}`, '\u00e9'.repeat(PRINT_MAX_CHARS + 1));
    expect(res.statusCode).toBe(400);
    // A limit cuts first, as kvmd's: only what is left counts.
    res = await print('limit=3', 'a'.repeat(PRINT_MAX_CHARS + 1));
    expect(res.statusCode).toBe(200);
    expect(res.json().result).toEqual({ typed: 3, unmapped: [] });
    res = await print('limit=3', 'a'.repeat(PRINT_BODY_MAX_BYTES + 1));
    expect(res.statusCode).toBe(413);
    expect(res.json().result.error).toBe('PayloadTooLargeError');
    expect(app.ctx.hid.pasting).toBe(false);
  });

  it('a new paste replaces the one typing; a paste stops when its session ends', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const reports = record(app);
    const held = () => app.ctx.drivers.testbedHid!.held;
    const print = (t: string, q: string, payload: string) =>
      app.inject({
        method: 'POST',
        url: `/api/hid/print?limit=0&${q}`,
        headers: { token: t, 'content-type': 'text/plain' },
        payload,
      });
    const first = print(token, 'delay=0.005', 'A'.repeat(2000));
    await expect.poll(held, { timeout: 10_000 }).toContain('ShiftLeft');
    const second = await print(token, '', 'b');
    expect(second.statusCode).toBe(200);
    expect(second.json().result).toEqual({ typed: 1, unmapped: [] });
    const replaced = await first;
    expect(replaced.statusCode).toBe(409);
    expect(replaced.json().result.reason).toBe('replaced');
    expect(keyLog(reports).slice(-3)).toEqual(['ShiftLeft-', 'KeyB+', 'KeyB-']);

    const other = await login(app, PASSWORD);
    const mine = print(other, 'delay=0.005', 'A'.repeat(2000));
    await expect.poll(held, { timeout: 10_000 }).toContain('ShiftLeft');
    // Another session's logout leaves it typing.
    expect(
      (await app.inject({ method: 'POST', url: '/api/auth/logout', headers: { token } }))
        .statusCode,
    ).toBe(200);
    expect(app.ctx.hid.pasting).toBe(true);
    await app.inject({ method: 'POST', url: '/api/auth/logout', headers: { token: other } });
    const ended = await mine;
    expect(ended.statusCode).toBe(409);
    expect(ended.json().result.reason).toBe('session');
    expect(held()).toEqual([]);
    expect(stillPressed(reports)).toEqual([]);
  });

  it('stops a paste whose client disconnects', async () => {
    app = await newApp();
    const token = await initAndLogin(app);
    const reports = record(app);
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as { port: number }).port;
    const req = httpRequest({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/api/hid/print?limit=0&delay=0.005',
      headers: { token, 'content-type': 'text/plain' },
    });
    req.on('error', () => undefined);
    req.end('A'.repeat(2000));
    await expect
      .poll(() => app.ctx.drivers.testbedHid!.held, { timeout: 10_000 })
      .toContain('ShiftLeft');
    req.destroy();
    await expect.poll(() => app.ctx.hid.pasting, { timeout: 10_000 }).toBe(false);
    expect(app.ctx.drivers.testbedHid!.held).toEqual([]);
    expect(stillPressed(reports)).toEqual([]);
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

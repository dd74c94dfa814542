import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildConfig } from './config';
import { initAndLogin, newApp } from './test-helpers';

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

describe('driver types', () => {
  it('runs the target profile drivers unless the config says disabled', () => {
    const defaults = { dataDir: '/tmp/d', webDir: '/tmp/w', keymapsDirs: ['/tmp/k'] };
    const config = buildConfig({}, defaults);
    expect([config.hid.type, config.video.type]).toEqual(['target', 'target']);
    expect(() => buildConfig({ hid: { type: 'usb' } }, defaults)).toThrow(/hid\.type/);
  });

  it('starts with HID and video disabled and says so: offline, no signal, input accepted', async () => {
    app = await newApp(undefined, { hid: { type: 'disabled' }, video: { type: 'disabled' } });
    expect(app.ctx.drivers.hid.name).toBe('disabled');
    expect(app.ctx.drivers.video.name).toBe('disabled');
    // the testbed's own handles are gone with its drivers
    expect(app.ctx.drivers.testbed).toBeUndefined();
    expect(app.ctx.drivers.testbedHid).toBeUndefined();
    const token = await initAndLogin(app);

    const hid = (await app.inject({ url: '/api/hid', headers: { token } })).json().result;
    expect(hid).toMatchObject({
      enabled: false,
      online: false,
      keyboard: { online: false },
      mouse: { online: false },
    });
    // kvmd takes input while the device is offline; the disabled driver drops it
    const key = await app.inject({
      method: 'POST',
      url: '/api/hid/events/send_key?key=KeyA',
      headers: { token },
    });
    expect(key.statusCode).toBe(200);

    const streamer = (await app.inject({ url: '/api/streamer', headers: { token } })).json().result;
    expect(streamer.streamer.source.online).toBe(false);
    expect(streamer.streamer.hdmi.signal).toBe(false);
    expect(streamer.streamer.h264.online).toBe(false);
  });

  it('disables one subsystem and leaves the other to the target', async () => {
    app = await newApp(undefined, { hid: { type: 'disabled' } });
    expect(app.ctx.drivers.hid.name).toBe('disabled');
    expect(app.ctx.drivers.video.name).toBe('testbed');
    const token = await initAndLogin(app);
    const streamer = (await app.inject({ url: '/api/streamer', headers: { token } })).json().result;
    expect(streamer.streamer.source.online).toBe(true);
  });
});

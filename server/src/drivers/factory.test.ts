import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildConfig } from '../config';
import { SILENT_LOGGER } from '../log';
import { initAndLogin, newApp } from '../test-helpers';
import { DRIVER_CHOICES, TARGET_PRESETS, type Subsystem } from './choices';
import { createDrivers, type Drivers } from './factory';
import { LocalClock } from './clock/local';
import { TimedatectlClock } from './clock/timedatectl';
import { NmcliNetwork } from './network/nmcli';
import { NmcliWifi } from './wifi/nmcli';

const defaults = { dataDir: '/nonexistent/data', webDir: '/nonexistent/web', keymapsDirs: [] };

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

describe('driver types', () => {
  it('runs the target profile drivers unless the config says disabled', () => {
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

// Construction only: nothing here starts a VM, runs nmcli or touches this machine's clock.
describe('the factory table', () => {
  it('system.network / wifi / clock select NetworkManager and the system clock on any target', async () => {
    const config = buildConfig(
      { target: 'testbed', system: { network: 'nmcli', wifi: 'nmcli', clock: 'system' } },
      defaults,
    );
    const d = await createDrivers(config, SILENT_LOGGER);
    expect(d.system.network).toBeInstanceOf(NmcliNetwork);
    expect(d.system.wifi).toBeInstanceOf(NmcliWifi);
    expect(d.system.clock.kind).toBe('system');
    expect(d.system.clock instanceof TimedatectlClock || d.system.clock instanceof LocalClock).toBe(
      true,
    );
    // not initialised yet: says so rather than pretending
    expect(d.system.network.availability().available).toBe(false);
    // NetworkManager's network is this computer's: Wake-on-LAN goes out from here
    expect(d.wol.name).toBe('host');
  });

  it('a target is a preset of types: every key of the config can replace one of them', async () => {
    const config = buildConfig(
      {
        target: 'qemu',
        video: { type: 'testbed' },
        hid: { type: 'testbed' },
        atx: { type: 'disabled' },
        msd: { type: 'disabled' },
        fingerbot: { type: 'disabled' },
        audio: { type: 'disabled' },
        system: { network: 'disabled', wifi: 'test-radio', clock: 'disabled' },
        terminal: { serial: 'disabled' },
      },
      defaults,
    );
    const d = await createDrivers(config, SILENT_LOGGER);
    // nothing of QEMU is made when no driver needs it
    expect(d.types).toEqual({
      video: 'testbed',
      hid: 'testbed',
      atx: 'disabled',
      msd: 'disabled',
      fingerbot: 'disabled',
      audio: 'disabled',
      network: 'disabled',
      wifi: 'test-radio',
      clock: 'disabled',
      serial: 'disabled',
    });
    expect(d.video.name).toBe('testbed');
    expect(d.testbedHid).toBeDefined();
    expect(d.atx.getState().enabled).toBe(false);
    expect(d.serial.unavailable).toMatch(/no serial line/);
    expect(d.system.network.availability().available).toBe(false);
    expect(d.system.wifi.adapter).toBe('test-radio');
    await expect(d.system.clock.setZone('UTC')).rejects.toThrow(/disabled/);
    expect(await d.describe()).toEqual({ guest: null });
    // the display follows the video, the USB identity the HID
    expect(d.system.display.name).toBe('testbed');
    expect(d.system.usb.name).toBe('none');
  });

  it('builds every (subsystem, type) of the table on both presets', async () => {
    const built: Drivers[] = [];
    for (const target of Object.keys(TARGET_PRESETS) as (keyof typeof TARGET_PRESETS)[]) {
      for (const subsystem of Object.keys(DRIVER_CHOICES) as Subsystem[]) {
        for (const type of DRIVER_CHOICES[subsystem]) {
          const key = {
            network: ['system', 'network'],
            wifi: ['system', 'wifi'],
            clock: ['system', 'clock'],
            serial: ['terminal', 'serial'],
          }[subsystem as string] ?? [subsystem, 'type'];
          const config = buildConfig({ target, [key[0]!]: { [key[1]!]: type } }, defaults);
          const d = await createDrivers(config, SILENT_LOGGER);
          expect(d.types[subsystem], `${target} ${subsystem}.${type}`).toBe(type);
          built.push(d);
        }
      }
    }
    expect(built.length).toBeGreaterThan(40);
  });

  it('refuses a type the subsystem does not have, naming the key', () => {
    expect(() => buildConfig({ atx: { type: 'testbed' } }, defaults)).toThrow(/atx\.type/);
    expect(() => buildConfig({ system: { clock: 'ntp' } }, defaults)).toThrow(/system\.clock/);
    expect(() => buildConfig({ terminal: { serial: 'usb' } }, defaults)).toThrow(
      /terminal\.serial/,
    );
  });
});

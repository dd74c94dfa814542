/**
 * The whole server on the gadget target over a fixture tree (plain folders: no kernel plays
 * configfs here, so attribute files are simply written): /api/info's problems and UDC, the
 * `info` event on a UDC change, the USB identity and OTG functions acting on the gadget, and
 * the preset's other drivers (nmcli, the system clock) starting without their programs.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { StateEvent } from '../../ws/state-registry';
import { AppPerTest } from '../../test-helpers';
import { until } from './test-support';

const apps = new AppPerTest();
let tree: string | null = null;

afterEach(async () => {
  await apps.stop();
  if (tree) await rm(tree, { recursive: true, force: true });
  tree = null;
});

async function fixture(udcs: string[]): Promise<Record<string, unknown>> {
  tree = await mkdtemp(join(tmpdir(), 'gadget-app-'));
  await mkdir(join(tree, 'config/usb_gadget'), { recursive: true });
  await mkdir(join(tree, 'sys/class/udc'), { recursive: true });
  await mkdir(join(tree, 'dev'), { recursive: true });
  await mkdir(join(tree, 'root'), { recursive: true });
  for (const m of ['libcomposite', 'usb_f_hid', 'usb_f_mass_storage']) {
    await mkdir(join(tree, 'sys/module', m), { recursive: true });
  }
  for (const udc of udcs) {
    await mkdir(join(tree, 'sys/class/udc', udc));
    await writeFile(join(tree, 'sys/class/udc', udc, 'state'), 'configured\n');
  }
  return {
    target: 'gadget',
    gadget: {
      configfs: join(tree, 'config'),
      sys: join(tree, 'sys'),
      dev: join(tree, 'dev'),
      udc_poll_ms: 20,
      // the webcam's nested configfs groups need the kernel (uvc.test.ts plays it)
      uvc: false,
    },
    system: { root: join(tree, 'root') },
  };
}

const G = (): string => join(tree!, 'config/usb_gadget/kvm');
const read = async (rel: string): Promise<string> => readFile(join(G(), rel), 'utf8');

describe('the gadget target', () => {
  it("/api/audio's camera is the gadget's webcam: unavailable, with the reason, when it is off", async () => {
    const { app, token } = await apps.start(await fixture(['dummy_udc.0']));
    const audio = (await app.inject({ url: '/api/audio', headers: { token } })).json().result;
    expect(audio.camera).toEqual({
      available: false,
      reason: 'The gadget has no webcam function (gadget.uvc: false)',
      code: 'uvc_unavailable',
      active: false,
      remote: null,
    });
    expect(app.ctx.camera).not.toBeNull();
  });

  it('starts, builds the gadget and shows the UDC and no problems in /api/info', async () => {
    const { app, token } = await apps.start(await fixture(['dummy_udc.0']));
    const info = (await app.inject({ url: '/api/info', headers: { token } })).json().result;
    expect(info.system.platform).toMatchObject({
      type: 'gadget',
      base: 'USB gadget (a real board)',
      problems: [],
      udc: { name: 'dummy_udc.0', state: 'configured' },
    });
    expect(await read('UDC')).toBe('dummy_udc.0');
    expect(await read('idVendor')).toBe('0x1d6b');
    expect((await readdir(join(G(), 'functions'))).sort()).toEqual([
      'hid.usb0',
      'hid.usb1',
      'mass_storage.usb0',
      // the USB sound card (audio.type alsa on this target)
      'uac2.usb0',
    ]);
    // the log bundle says what the board's USB side is
    expect(await app.ctx.drivers.describe()).toMatchObject({
      guest: null,
      gadget: {
        problems: [],
        udc: { name: 'dummy_udc.0' },
        luns: { image: null, partition: null },
      },
    });
    // the preset's other drivers start without nmcli (absent here) and say why
    const network = await app.inject({ url: '/api/system/get_network_config', headers: { token } });
    if (!existsSync('/usr/bin/nmcli')) {
      expect(network.statusCode).toBe(400);
      expect(network.json().result.error_msg).toBe('NetworkManager (nmcli) is not installed');
    }
    const time = await app.inject({ url: '/api/system/time', headers: { token } });
    expect(time.statusCode).toBe(200);
  });

  it('no UDC: the server starts and /api/info says what is missing; the info event follows a UDC', async () => {
    const overrides = await fixture([]);
    const { app, token } = await apps.start(overrides);
    const info = (await app.inject({ url: '/api/info', headers: { token } })).json().result;
    expect(info.system.platform.problems).toEqual([
      `No USB device controller (UDC) in ${join(tree!, 'sys')}/class/udc: this board's USB port cannot act as a device`,
    ]);
    expect(info.system.platform.udc).toBeNull();
    const events: StateEvent[] = [];
    const off = app.ctx.info.provider().subscribe((e) => events.push(e));
    await mkdir(join(tree!, 'sys/class/udc/dummy_udc.0'));
    await writeFile(join(tree!, 'sys/class/udc/dummy_udc.0/state'), 'suspended\n');
    // several frames may come (the UDC found, then its state read): the last one counts
    await until(() =>
      events.some(
        (e) =>
          (e.event as { system?: { platform: { udc: { state: string } | null } } }).system?.platform
            .udc?.state === 'suspended',
      ),
    );
    off();
    const last = events.at(-1)!.event as { system: { platform: Record<string, unknown> } };
    expect(last.system.platform['problems']).toEqual([]);
    expect(last.system.platform['udc']).toEqual({ name: 'dummy_udc.0', state: 'suspended' });
    expect(await read('UDC')).toBe('dummy_udc.0');
  });

  it('applies all five identity fields, the OTG functions and reinit_udc to the gadget', async () => {
    const { app, token } = await apps.start(await fixture(['dummy_udc.0']));
    const params = (await app.inject({ url: '/api/system/get_param', headers: { token } })).json()
      .result;
    expect([...params.usb_applies].sort()).toEqual(
      ['otg_manufacturer', 'otg_product', 'otg_product_id', 'otg_serial', 'otg_vendor_id'].sort(),
    );
    const set = await app.inject({
      method: 'POST',
      url: '/api/system/set_param?otg_vendor_id=0x046d&otg_product_id=0xc31c&otg_serial=K120SER&otg_manufacturer=Logitech&otg_product=K120',
      headers: { token },
    });
    expect(set.statusCode).toBe(200);
    expect(await read('idVendor')).toBe('0x046d');
    expect(await read('idProduct')).toBe('0xc31c');
    expect(await read('strings/0x409/serialnumber')).toBe('K120SER');
    expect(await read('strings/0x409/manufacturer')).toBe('Logitech');
    expect(await read('strings/0x409/product')).toBe('K120');

    const otg = await app.inject({
      method: 'POST',
      url: '/api/system/otg_functions?enable_mouse_alt=true',
      headers: { token },
    });
    expect(otg.statusCode).toBe(200);
    expect((await readdir(join(G(), 'functions'))).sort()).toEqual([
      'hid.usb0',
      'hid.usb1',
      'hid.usb2',
      'mass_storage.usb0',
      // the USB sound card (audio.type alsa on this target)
      'uac2.usb0',
    ]);

    // reinit_udc makes the gadget again: a marker left in it is gone
    await writeFile(join(G(), 'functions/hid.usb0/marker'), 'x');
    const reinit = await app.inject({
      method: 'POST',
      url: '/api/system/reinit_udc',
      headers: { token },
    });
    expect(reinit.statusCode).toBe(200);
    expect(await readdir(join(G(), 'functions/hid.usb0'))).not.toContain('marker');
    expect(await read('UDC')).toBe('dummy_udc.0');
  });

  it("the HID's mouse output re-creates the gadget with the other mouse, kept across a restart", async () => {
    const overrides = await fixture(['dummy_udc.0']);
    const { app, token } = await apps.start(overrides);
    const set = await app.inject({
      method: 'POST',
      url: '/api/hid/set_params?mouse_output=usb_rel',
      headers: { token },
    });
    expect(set.statusCode).toBe(200);
    expect((await readdir(join(G(), 'functions'))).sort()).toEqual([
      'hid.usb0',
      'hid.usb2',
      'mass_storage.usb0',
      // the USB sound card (audio.type alsa on this target)
      'uac2.usb0',
    ]);
    expect(app.ctx.drivers.gadget?.rebuildMs()).not.toBeNull();
    const restarted = await apps.restart(overrides);
    expect((await readdir(join(G(), 'functions'))).sort()).toEqual([
      'hid.usb0',
      'hid.usb2',
      'mass_storage.usb0',
      // the USB sound card (audio.type alsa on this target)
      'uac2.usb0',
    ]);
    expect(restarted.ctx.drivers.gadget?.rebuildMs()).toBeNull();
  });

  it('builds with the stored identity at start (one enumeration, no default gadget first)', async () => {
    const overrides = await fixture(['dummy_udc.0']);
    const { app, token } = await apps.start(overrides);
    await app.inject({
      method: 'POST',
      url: '/api/system/set_param?otg_vendor_id=0x1234',
      headers: { token },
    });
    const restarted = await apps.restart(overrides);
    expect(await read('idVendor')).toBe('0x1234');
    // the identity service's start found it right: no rebuild
    expect(restarted.ctx.drivers.gadget?.rebuildMs()).toBeNull();
  });
});

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DEVICE_IDENTITY_PRESETS } from '@kvm/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { AppPerTest, caller } from '../test-helpers';

const apps = new AppPerTest();
afterEach(() => apps.stop());

async function start() {
  const { app, token } = await apps.start();
  return caller(app, token, '/api/system/');
}

describe('/api/system/get_param and set_param', () => {
  it('answers GL shape plus ours; stores and applies changes', async () => {
    const call = await start();
    let res = await call('GET', 'get_param');
    expect(res.statusCode).toBe(200);
    const params = res.json().result;
    expect(params).toMatchObject({
      success: true,
      absolute_mouse: true,
      otg_manufacturer: 'Linux Foundation',
      otg_product: 'Multifunction Composite Gadget',
      otg_vendor_id: '0x1D6B',
      otg_product_id: '0x0104',
      otg_serial: '',
      default_vendor_id: '0x1D6B',
      default_product_id: '0x0104',
      privacy_enable: false,
      privacy_restore: false,
      msd_type: 'cdrom', // virtual media on, CD-ROM mode (the default)
      enable_mic: false,
      identity_preset: 'default',
      usb_applies: [],
    });
    expect(typeof params.msd_partition).toBe('string');

    res = await call(
      'POST',
      'set_param?otg_vendor_id=46d&otg_product_id=0xc52b&otg_manufacturer=Logitech,%20Inc.' +
        '&otg_product=Unifying%20Receiver&otg_serial=AB12&absolute_mouse=false&mic_name=Desk%20mic' +
        '&privacy_enable=1&cdrom_vendor=ACME',
    );
    expect(res.statusCode).toBe(200);
    const set = res.json().result;
    expect(set).not.toHaveProperty('default_vendor_id');
    expect(set).not.toHaveProperty('default_product_id');
    expect(set).toMatchObject({
      otg_vendor_id: '0x046D',
      otg_product_id: '0xC52B',
      otg_serial: 'AB12',
      absolute_mouse: false,
      mic_name: 'Desk mic',
      privacy_enable: true,
      cdrom_vendor: 'ACME',
      identity_preset: 'monitor_1080p_receiver',
    });
    // the HID service's mouse output follows
    expect(apps.app!.ctx.hid.getState().mouse.outputs.active).toBe('usb_rel');
    const stored = JSON.parse(await readFile(join(apps.dataDir!, 'system', 'params.json'), 'utf8'));
    expect(stored).toMatchObject({ otg_vendor_id: 0x046d, otg_serial: 'AB12' });
  });

  it('answers GL errors verbatim and applies nothing on any 400', async () => {
    const call = await start();
    const before = (await call('GET', 'get_param')).json().result;
    const errors: [string, string | RegExp][] = [
      ['absolute_mouse=maybe', /^absolute_mouse parameter validation failed: /],
      ['msd_partition=', 'msd_partition parameter cannot be empty'],
      ['otg_vendor_id=0x12345', 'otg_vendor_id must be a valid hexadecimal value'],
      ['otg_product_id=xyz', 'otg_product_id must be a valid hexadecimal value'],
      ['mic_name=%20', 'mic_name parameter cannot be empty'],
      [`otg_product=${'p'.repeat(127)}`, /^otg_product must be at most 126 characters$/],
      [`mic_name=${'m'.repeat(127)}`, /^mic_name parameter must be at most 126/],
      ['flash_vendor=TooLongVendor', /^flash_vendor parameter must be at most 8/],
      // SPEC 5's text pattern for the names that reach the USB gadget
      ['mic_name=Desk%0Amic', /^mic_name parameter may only contain ASCII letters, digits/],
      ['mic_name=%22mic%22', /^mic_name parameter may only contain ASCII letters, digits/],
      ['cdrom_vendor=A%24B', /^cdrom_vendor parameter may only contain ASCII letters/],
      ['otg_serial=a%20b', /^otg_serial may only contain/],
      ['privacy_restore=perhaps', /^privacy_restore parameter must be a boolean/],
    ];
    for (const [query, message] of errors) {
      // a valid change rides along each time: it must not be applied either
      const res = await call('POST', `set_param?privacy_enable=true&absolute_mouse=false&${query}`);
      expect(res.statusCode, query).toBe(400);
      expect(res.json().result.error, query).toBe('BadRequestError');
      if (typeof message === 'string') expect(res.json().result.error_msg).toBe(message);
      else expect(res.json().result.error_msg, query).toMatch(message);
    }
    expect((await call('GET', 'get_param')).json().result).toEqual(before);
  });

  it('applies a device identity preset and names its EDID', async () => {
    const call = await start();
    const preset = DEVICE_IDENTITY_PRESETS.find((p) => p.key === 'monitor_4k_holtek')!;
    let res = await call('POST', 'set_identity_preset?preset=monitor_4k_holtek');
    expect(res.statusCode).toBe(200);
    const answer = res.json().result;
    expect(answer.preset).toEqual(preset);
    expect(answer.preset.edid).toBe('E3840x2160');
    expect(answer.params).toMatchObject({
      otg_manufacturer: 'Holtek Semiconductor, Inc.',
      otg_vendor_id: '0x04D9',
      identity_preset: 'monitor_4k_holtek',
    });
    // a serial does not make it custom; another product does
    await call('POST', 'set_param?otg_serial=CAFEBABE');
    expect((await call('GET', 'get_param')).json().result.identity_preset).toBe(
      'monitor_4k_holtek',
    );
    await call('POST', 'set_param?otg_product=Mine');
    expect((await call('GET', 'get_param')).json().result.identity_preset).toBe('custom');

    res = await call('POST', 'set_identity_preset?preset=custom');
    expect(res.statusCode).toBe(400);
    expect(res.json().result.error_msg).toMatch(/^preset parameter must be one of default, /);
    expect((await call('POST', 'set_identity_preset')).statusCode).toBe(400);
    expect((await call('GET', 'get_param')).json().result.otg_product).toBe('Mine');
  });
});

describe('/api/system/otg_functions and reinit_udc', () => {
  it('stores the six functions; enable_mic is the params flag', async () => {
    const call = await start();
    let res = await call('GET', 'otg_functions');
    expect(res.json().result).toEqual({
      enable_keyboard: true,
      enable_mouse: true,
      enable_mouse_alt: false,
      start_cdrom: true,
      start_flash: false,
      enable_mic: false,
    });
    res = await call('POST', 'otg_functions?enable_mouse_alt=true&enable_mic=1&start_cdrom=false');
    expect(res.statusCode).toBe(200);
    expect(res.json().result).toMatchObject({
      enable_mouse_alt: true,
      enable_mic: true,
      start_cdrom: false,
    });
    expect((await call('GET', 'get_param')).json().result.enable_mic).toBe(true);

    res = await call('POST', 'otg_functions?enable_keyboard=false&start_flash=sometimes');
    expect(res.statusCode).toBe(400);
    expect(res.json().result.error_msg).toMatch(/^start_flash parameter must be a boolean/);
    expect((await call('GET', 'otg_functions')).json().result.enable_keyboard).toBe(true);
  });

  it('re-initialises the USB devices', async () => {
    const call = await start();
    const res = await call('POST', 'reinit_udc');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ ok: true, result: {} });
  });

  it('requires a session on every route', async () => {
    const { app } = await apps.start();
    for (const [method, url] of [
      ['GET', 'get_param'],
      ['POST', 'set_param?mic_name=x'],
      ['POST', 'set_identity_preset?preset=default'],
      ['GET', 'otg_functions'],
      ['POST', 'otg_functions'],
      ['POST', 'reinit_udc'],
      ['GET', 'time'],
      ['POST', 'time?time_zone=0'],
      ['GET', 'timezone/list'],
      ['POST', 'timezone?timezone=UTC'],
    ] as const) {
      const res = await app.inject({ method, url: `/api/system/${url}` });
      expect(res.statusCode, url).toBe(401);
    }
  });
});

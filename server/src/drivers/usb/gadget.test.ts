import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_GADGET_SETTINGS, GadgetPlatform } from '../../platform/gadget/platform';
import { FixtureKernel } from '../../platform/gadget/test-support';
import { GadgetUsbIdentity } from './gadget';
import type { UsbIdentity } from './types';

const G = 'config/usb_gadget/kvm';
let kernel: FixtureKernel | null = null;
let platform: GadgetPlatform | null = null;

afterEach(async () => {
  await platform?.dispose();
  await kernel?.cleanup();
  kernel = platform = null;
});

const IDENTITY: UsbIdentity = {
  otg_vendor_id: 0x1d6b,
  otg_product_id: 0x0104,
  otg_manufacturer: 'Linux Foundation',
  otg_product: 'Multifunction Composite Gadget',
  otg_serial: '',
  inquiry: { cdrom: 'Linux', flash: 'Linux' },
  functions: { ...DEFAULT_GADGET_SETTINGS.functions },
};

describe('GadgetUsbIdentity', () => {
  it('applies all five fields, the INQUIRY vendors and the functions; reinit rebinds anyway', async () => {
    kernel = await FixtureKernel.make();
    platform = new GadgetPlatform(kernel.options());
    await platform.init();
    const usb = new GadgetUsbIdentity(platform);
    expect([...usb.applies].sort()).toEqual(
      ['otg_manufacturer', 'otg_product', 'otg_product_id', 'otg_serial', 'otg_vendor_id'].sort(),
    );
    expect(usb.appliesFunctions).toBe(true);
    // the identity the gadget has: nothing to do
    kernel.writes.length = 0;
    await usb.apply(IDENTITY);
    expect(kernel.writes).toEqual([]);
    await usb.apply({
      ...IDENTITY,
      otg_vendor_id: 0x2e8a,
      otg_product_id: 0x000a,
      otg_manufacturer: 'Raspberry Pi',
      otg_product: 'Pico',
      otg_serial: 'E6614C311B',
      inquiry: { cdrom: 'RPi', flash: 'RPi' },
      functions: { ...IDENTITY.functions!, enable_mouse: false },
    });
    expect(await kernel.read(`${G}/idVendor`)).toBe('0x2e8a');
    expect(await kernel.read(`${G}/idProduct`)).toBe('0x000a');
    expect(await kernel.read(`${G}/strings/0x409/manufacturer`)).toBe('Raspberry Pi');
    expect(await kernel.read(`${G}/strings/0x409/product`)).toBe('Pico');
    expect(await kernel.read(`${G}/strings/0x409/serialnumber`)).toBe('E6614C311B');
    expect(await kernel.read(`${G}/functions/mass_storage.usb0/lun.0/inquiry_string`)).toMatch(
      /^RPi {5}File-CD Gadget/,
    );
    expect(await kernel.exists(`${kernel.root}/${G}/functions/hid.usb1`)).toBe(false);
    kernel.writes.length = 0;
    await usb.reinit({
      ...IDENTITY,
      otg_vendor_id: 0x2e8a,
      otg_product_id: 0x000a,
      otg_manufacturer: 'Raspberry Pi',
      otg_product: 'Pico',
      otg_serial: 'E6614C311B',
      inquiry: { cdrom: 'RPi', flash: 'RPi' },
      functions: { ...IDENTITY.functions!, enable_mouse: false },
    });
    expect(kernel.writesUnder(`${G}/UDC`).map(([, v]) => v)).toEqual(['', 'dummy_udc.0']);
  });
});

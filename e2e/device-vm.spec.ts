/**
 * The gadget target in the device VM (issue 23, docs/hardware.md "The device VM"): our server
 * runs inside a QEMU VM on Debian's kernel, its USB gadget plugged into the same kernel's host
 * side by dummy_hcd; the observer inside reports what that host side sees. The VM boots once for
 * this whole file (it takes 15-25 s under TCG): every device-VM test lives here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOOT_TIMEOUT_MS, DeviceVm } from './fixtures/device-vm';

describe('device VM (gadget target)', () => {
  let vm: DeviceVm;

  beforeAll(async () => {
    vm = await DeviceVm.start();
  }, BOOT_TIMEOUT_MS + 30_000);

  afterAll(async () => {
    await vm?.stop();
  }, 60_000);

  it('serves the API over https through the forwarded port', async () => {
    const res = await vm.request('/api/auth/check');
    expect(res.status).toBe(401);
    expect(JSON.parse(res.body)).toEqual({
      ok: false,
      result: { error: 'UnauthorizedError', error_msg: 'Unauthorized' },
    });
  });

  it('the VM kernel enumerates the gadget as a USB device with its identity', async () => {
    const dev = await vm.waitFor(
      (e) => e.ev === 'usb-add' && e['dev'] !== 'usb1' && e['idVendor'] === '1d6b',
      60_000,
      { what: 'the gadget on the USB bus' },
    );
    expect(dev).toMatchObject({ idVendor: '1d6b', idProduct: '0104' });
    const { usb } = (await vm.command('devices')) as unknown as { usb: { dev: string }[] };
    expect(usb.map((d) => d.dev)).toContain(dev['dev']);
  });
});

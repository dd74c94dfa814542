/**
 * The gadget target in the device VM (issue 23, docs/hardware.md "The device VM"): our server
 * runs inside a QEMU VM on Debian's kernel, its USB gadget plugged into the same kernel's host
 * side by dummy_hcd; the observer inside reports what that host side sees. The VM boots once for
 * this whole file (15-45 s under TCG): every device-VM test lives here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOOT_TIMEOUT_MS, DeviceVm } from './fixtures/device-vm';
import { deviceVmConsoleTests } from './fixtures/device-vm-tests';
import { deviceVmVideoTests } from './fixtures/device-vm-video';
import { deviceVmAtxTests } from './fixtures/device-vm-atx';
import { deviceVmAudioTests } from './fixtures/device-vm-audio';
import { deviceVmCameraTests } from './fixtures/device-vm-camera';
import { deviceVmWebrtcTests } from './fixtures/device-vm-webrtc';

interface UsbDevice {
  dev: string;
  idVendor: string;
  idProduct: string;
  serial: string | null;
  product: string | null;
}

describe('device VM (gadget target)', () => {
  let vm: DeviceVm;

  beforeAll(async () => {
    vm = await DeviceVm.start();
    await vm.initAdmin();
  }, BOOT_TIMEOUT_MS + 60_000);

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

  it("the VM's kernel enumerates the gadget with the identity the server reports", async () => {
    // The gadget: a device on dummy_hcd's bus behind a port (1-1), not the root hub (usb1).
    await vm.waitFor((e) => e.ev === 'usb-add' && /^\d+-[\d.]+$/.test(String(e['dev'])), 60_000, {
      what: 'the gadget on the USB bus',
    });
    const params = await vm.api<{
      otg_vendor_id: string;
      otg_product_id: string;
      otg_serial: string;
      otg_product: string;
    }>('/api/system/get_param');
    const { usb } = (await vm.command('devices')) as unknown as { usb: UsbDevice[] };
    const gadgets = usb.filter((d) => /^\d+-[\d.]+$/.test(d.dev));
    expect(gadgets).toHaveLength(1);
    expect(gadgets[0]).toMatchObject({
      idVendor: params.otg_vendor_id.replace(/^0x/i, '').toLowerCase(),
      idProduct: params.otg_product_id.replace(/^0x/i, '').toLowerCase(),
      // An empty serial is no serial string descriptor at all.
      serial: params.otg_serial === '' ? null : params.otg_serial,
      product: params.otg_product,
    });
  });

  // The user's side: Chromium on this machine, the console in the VM, the VM's USB host side.
  deviceVmConsoleTests(() => vm);
  deviceVmVideoTests(() => vm);
  deviceVmAtxTests(() => vm);
  deviceVmAudioTests(() => vm);
  deviceVmCameraTests(() => vm);
  deviceVmWebrtcTests(() => vm);
});

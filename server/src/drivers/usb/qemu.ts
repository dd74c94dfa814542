/**
 * The QEMU target's USB identity. QEMU's usb-kbd and usb-tablet (and usb-mouse) have fixed
 * vendor and product ids and strings but a `serial` property, read only when the device is
 * added: the serial is applied by re-plugging them (QMP device_del, wait for DEVICE_DELETED,
 * device_add with the same ids and display binding). The HID driver owns those devices and
 * re-plugs them itself (mouse output, connect, every QEMU start, where the command line's devices
 * have no serial), so it carries the serial and does the re-plug (hid.ts `setUsbSerial`); this
 * driver hands it over. The other fields are kept and take effect on hardware (the gadget).
 */
import type { UsbIdentityField } from '@kvm/protocol';
import type { HidDriver } from '../hid/types';
import { DisabledUsbIdentity } from './disabled';
import type { UsbIdentity, UsbIdentityDriver } from './types';

/** What the driver needs of the HID driver (QemuHid). */
export interface UsbSerialTarget {
  setUsbSerial(serial: string, replug?: boolean): Promise<void>;
}

export class QemuUsbIdentity implements UsbIdentityDriver {
  readonly name = 'qemu';
  readonly applies: UsbIdentityField[] = ['otg_serial'];
  private first = true;

  constructor(private readonly devices: UsbSerialTarget) {}

  /** Every call re-plugs (reinit_udc), except the start's when there is no serial to give. */
  async apply(identity: UsbIdentity): Promise<void> {
    const replug = !(this.first && identity.otg_serial === '');
    this.first = false;
    await this.devices.setUsbSerial(identity.otg_serial, replug);
  }

  async init(): Promise<void> {}
  async dispose(): Promise<void> {}
}

/** The QEMU target's USB identity driver: QemuHid's devices, or none with another HID driver. */
export function qemuUsbIdentity(hid: HidDriver): UsbIdentityDriver {
  const target = hid as Partial<UsbSerialTarget>;
  return typeof target.setUsbSerial === 'function'
    ? new QemuUsbIdentity(target as UsbSerialTarget)
    : new DisabledUsbIdentity();
}

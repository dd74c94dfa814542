/**
 * What the gadget target's USB side is built with as the server starts, read from the stored
 * settings (system params, the HID's mouse output), so the remote computer enumerates the
 * gadget once, already right, instead of a default gadget re-created a moment later. Read
 * only: a missing or damaged file gives the defaults (the services report and fix it).
 */
import { MOUSE_OUTPUT_RELATIVE } from '@kvm/protocol';
import type { GadgetStart } from '../../drivers/usb/types';
import { hidSettingsFile } from '../hid/hid-wiring';
import { storedParamsFile, usbIdentityOf } from './identity-service';

export async function storedGadgetStart(dataDir: string): Promise<GadgetStart> {
  const params = await storedParamsFile(dataDir)
    .load()
    .catch(() => null);
  const hid = await hidSettingsFile(dataDir)
    .load()
    .catch(() => null);
  return {
    identity: params ? usbIdentityOf(params) : null,
    mouse: hid?.mouseOutput === MOUSE_OUTPUT_RELATIVE ? 'relative' : 'absolute',
  };
}

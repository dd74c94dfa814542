/** The USB identity the remote computer enumerates (issue 11; GL's OTG fields). */
import type { UsbIdentityField } from '@kvm/protocol';

export interface UsbIdentity {
  otg_manufacturer: string;
  otg_product: string;
  /** 16-bit numbers. */
  otg_vendor_id: number;
  otg_product_id: number;
  otg_serial: string;
}

export interface UsbIdentityDriver {
  readonly name: string;
  /** The fields this target makes the remote computer see; the others only on hardware. */
  readonly applies: UsbIdentityField[];
  /** Re-enumerates the USB devices with `identity` (GL: restarts the gadget). */
  apply(identity: UsbIdentity): Promise<void>;
  init(): Promise<void>;
  dispose(): Promise<void>;
}

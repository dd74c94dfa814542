/** The USB identity the remote computer enumerates (issue 11; GL's OTG fields). */
import type { OtgFunctions, UsbIdentityField } from '@kvm/protocol';

export interface UsbIdentity {
  otg_manufacturer: string;
  otg_product: string;
  /** 16-bit numbers. */
  otg_vendor_id: number;
  otg_product_id: number;
  otg_serial: string;
  /** The virtual media's INQUIRY vendor strings (system params cdrom_vendor, flash_vendor). */
  inquiry?: { cdrom: string; flash: string };
  /** The OTG functions (only for a driver with `appliesFunctions`). */
  functions?: OtgFunctions;
}

export interface UsbIdentityDriver {
  readonly name: string;
  /** The fields this target makes the remote computer see; the others only on hardware. */
  readonly applies: UsbIdentityField[];
  /** Re-enumerates the USB devices with `identity` (GL: restarts the gadget). */
  apply(identity: UsbIdentity): Promise<void>;
  /**
   * The driver builds the USB functions from `otg_functions` (the gadget): a change of them is
   * applied too. Absent: they are only stored.
   */
  readonly appliesFunctions?: boolean;
  /** `reinit_udc`: re-enumerates even when nothing changed; absent: `apply` does. */
  reinit?(identity: UsbIdentity): Promise<void>;
  init(): Promise<void>;
  dispose(): Promise<void>;
}

/** What the gadget is built with at start (services/system/gadget-start.ts reads it). */
export interface GadgetStart {
  /** The stored USB identity, INQUIRY vendors and OTG functions; null: the defaults. */
  identity: UsbIdentity | null;
  mouse: 'absolute' | 'relative';
}

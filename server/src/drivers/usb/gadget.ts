/**
 * The gadget target's USB identity: all five fields are the composite gadget's (idVendor,
 * idProduct, strings/0x409 manufacturer, product, serialnumber). apply() hands them, the drive's
 * INQUIRY vendors and the OTG functions to the platform, which re-creates the gadget when the
 * result differs from the gadget bound (the remote computer enumerates it again, about a
 * second); reinit() (`reinit_udc`) re-creates it in any case.
 */
import type { UsbIdentityField } from '@kvm/protocol';
import type { GadgetPlatform, GadgetSettings } from '../../platform/gadget/platform';
import type { UsbIdentity, UsbIdentityDriver } from './types';

export class GadgetUsbIdentity implements UsbIdentityDriver {
  readonly name = 'gadget';
  readonly applies: UsbIdentityField[] = [
    'otg_vendor_id',
    'otg_product_id',
    'otg_manufacturer',
    'otg_product',
    'otg_serial',
  ];
  readonly appliesFunctions = true;

  constructor(private readonly platform: GadgetPlatform) {}

  async apply(identity: UsbIdentity): Promise<void> {
    await this.platform.configure(settingsOf(identity));
  }

  async reinit(identity: UsbIdentity): Promise<void> {
    await this.platform.configure(settingsOf(identity));
    await this.platform.reinit();
  }

  async init(): Promise<void> {}
  async dispose(): Promise<void> {}
}

/** The platform's settings of a USB identity. */
export function settingsOf(identity: UsbIdentity): Partial<Omit<GadgetSettings, 'mouseMode'>> {
  return {
    identity: {
      vendorId: identity.otg_vendor_id,
      productId: identity.otg_product_id,
      manufacturer: identity.otg_manufacturer,
      product: identity.otg_product,
      serial: identity.otg_serial,
    },
    ...(identity.inquiry ? { inquiry: { ...identity.inquiry } } : {}),
    ...(identity.functions ? { functions: { ...identity.functions } } : {}),
  };
}

import type { UsbIdentityDriver } from './types';

/** No USB device identity to apply here: the fields are kept and take effect on hardware. */
export class DisabledUsbIdentity implements UsbIdentityDriver {
  readonly name = 'none';
  readonly applies = [];
  async apply(): Promise<void> {}
  async init(): Promise<void> {}
  async dispose(): Promise<void> {}
}

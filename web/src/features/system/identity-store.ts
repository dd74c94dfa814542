/**
 * The system group's state: USB identity (GL `get_param`/`set_param`) and the device identity
 * presets of SPEC 3, which set the USB identity and then the EDID that goes with it.
 */
import type { SystemParams } from '@kvm/protocol/system';
import { deviceIdentityPreset } from '@kvm/protocol/identity';
import { followEdidGop } from '../video/quality';
import {
  getEdid,
  getEdidPresets,
  getSystemParams,
  setEdid,
  setIdentityPreset,
  setUsbIdentity,
  type UsbIdentity,
} from './system-api';
import { Store } from './store';

export interface IdentityState {
  params: SystemParams | null;
  loadFailed: boolean;
  busy: boolean;
}

export class IdentityStore extends Store<IdentityState> {
  private readonly controller = new AbortController();

  constructor() {
    super({ params: null, loadFailed: false, busy: false });
  }

  async load(): Promise<void> {
    try {
      const params = await getSystemParams(this.controller.signal);
      this.setState({ params, loadFailed: false });
    } catch {
      if (!this.controller.signal.aborted) this.setState({ loadFailed: true });
    }
  }

  /** The preset's USB fields, then its EDID (from the device's own list). */
  applyPreset(key: string): Promise<void> {
    return this.exclusive(async () => {
      const result = await setIdentityPreset(key);
      this.setState({ params: result.params });
      const edidKey = result.preset.edid ?? deviceIdentityPreset(key)?.edid ?? null;
      if (edidKey) {
        const presets = await getEdidPresets(this.controller.signal);
        const edid = presets.find((p) => p.key === edidKey);
        // The USB identity is already applied: say plainly that the display part is missing.
        if (!edid) throw new Error(`The device has no EDID preset ${edidKey}`);
        await setEdid(edid.content);
        await followEdidGop((await getEdid(this.controller.signal)).preferred);
      }
      await this.load();
    });
  }

  applyUsb(identity: UsbIdentity): Promise<void> {
    return this.exclusive(async () => {
      await setUsbIdentity(identity);
      await this.load();
    });
  }

  private async exclusive(work: () => Promise<void>): Promise<void> {
    if (this.getState().busy) throw new Error('busy');
    this.setState({ busy: true });
    try {
      await work();
    } finally {
      this.setState({ busy: false });
    }
  }

  dispose(): void {
    this.controller.abort();
  }
}

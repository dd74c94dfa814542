/**
 * The system group's state: USB identity (GL `get_param`/`set_param`) and the device identity
 * presets of SPEC 3, which set the USB identity and then the EDID that goes with it.
 */
import { createStore, type StoreApi } from 'zustand/vanilla';
import type { SystemParams } from '@kvm/protocol/system';
import { deviceIdentityPreset } from '@kvm/protocol/identity';
import { followEdidGop } from '../video/quality';
import { whileBusy } from './busy';
import {
  getEdid,
  getEdidPresets,
  getSystemParams,
  setEdid,
  setIdentityPreset,
  setUsbIdentity,
  type UsbIdentity,
} from './system-api';

export interface IdentityState {
  params: SystemParams | null;
  loadFailed: boolean;
  busy: boolean;
}

export interface IdentityStore extends StoreApi<IdentityState> {
  load(): Promise<void>;
  /** The preset's USB fields, then its EDID (from the device's own list). */
  applyPreset(key: string): Promise<void>;
  applyUsb(identity: UsbIdentity): Promise<void>;
  dispose(): void;
}

/** One per open group (its requests end with it): a zustand store plus its actions. */
export function createIdentityStore(): IdentityStore {
  const store = createStore<IdentityState>()(() => ({
    params: null,
    loadFailed: false,
    busy: false,
  }));
  const { setState } = store;
  const controller = new AbortController();
  const exclusive = (work: () => Promise<void>) => whileBusy(store, () => new Error('busy'), work);

  const load = async (): Promise<void> => {
    try {
      const params = await getSystemParams(controller.signal);
      setState({ params, loadFailed: false });
    } catch {
      if (!controller.signal.aborted) setState({ loadFailed: true });
    }
  };

  const applyPreset = (key: string): Promise<void> =>
    exclusive(async () => {
      const result = await setIdentityPreset(key);
      setState({ params: result.params });
      const edidKey = result.preset.edid ?? deviceIdentityPreset(key)?.edid ?? null;
      if (edidKey) {
        const presets = await getEdidPresets(controller.signal);
        const edid = presets.find((p) => p.key === edidKey);
        // The USB identity is already applied: say plainly that the display part is missing.
        if (!edid) throw new Error(`The device has no EDID preset ${edidKey}`);
        await setEdid(edid.content);
        await followEdidGop((await getEdid(controller.signal)).preferred);
      }
      await load();
    });

  const applyUsb = (identity: UsbIdentity): Promise<void> =>
    exclusive(async () => {
      await setUsbIdentity(identity);
      await load();
    });

  return Object.assign(store, {
    load,
    applyPreset,
    applyUsb,
    dispose: () => controller.abort(),
  });
}

/**
 * The EDID group's state (GL `/api/upgrade/edid`, `get_edid`, `edid_list`): the presets, the
 * EDID in force and when the remote computer sees a new one.
 */
import { createStore, type StoreApi } from 'zustand/vanilla';
import { parseEdidHex } from '@kvm/protocol/edid/edid';
import type { EdidPreset, EdidState } from '@kvm/protocol/system';
import { whileBusy } from './busy';
import { getEdid, getEdidPresets, setEdid } from './system-api';

export interface EdidStoreState {
  presets: readonly EdidPreset[];
  edid: EdidState | null;
  loadFailed: boolean;
  busy: boolean;
}

/** SPEC 5: empty or malformed custom EDID (checked here before the device sees it). */
export class EdidFormatError extends Error {
  override readonly name = 'EdidFormatError';
}

export interface EdidStore extends StoreApi<EdidStoreState> {
  load(): Promise<void>;
  /** Checks with the shared parser, sends, then re-reads what the device now holds. */
  apply(hex: string): Promise<EdidState>;
  dispose(): void;
}

/** One per open group (its requests end with it): a zustand store plus its actions. */
export function createEdidStore(): EdidStore {
  const store = createStore<EdidStoreState>()(() => ({
    presets: [],
    edid: null,
    loadFailed: false,
    busy: false,
  }));
  const { setState } = store;
  const controller = new AbortController();

  const load = async (): Promise<void> => {
    const signal = controller.signal;
    const [presets, edid] = await Promise.allSettled([getEdidPresets(signal), getEdid(signal)]);
    if (signal.aborted) return;
    if (presets.status === 'fulfilled') setState({ presets: presets.value });
    if (edid.status === 'fulfilled') setState({ edid: edid.value, loadFailed: false });
    else setState({ loadFailed: true });
  };

  const apply = (hex: string): Promise<EdidState> => {
    if (parseEdidHex(hex) === null) return Promise.reject(new EdidFormatError());
    return whileBusy(
      store,
      () => new Error('busy'),
      async () => {
        await setEdid(hex.replace(/\s+/g, ''));
        const edid = await getEdid(controller.signal);
        setState({ edid });
        return edid;
      },
    );
  };

  return Object.assign(store, { load, apply, dispose: () => controller.abort() });
}

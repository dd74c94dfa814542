/**
 * The EDID group's state (GL `/api/upgrade/edid`, `get_edid`, `edid_list`): the presets, the
 * EDID in force and when the remote computer sees a new one.
 */
import { parseEdidHex } from '@kvm/protocol/edid/edid';
import type { EdidPreset, EdidState } from '@kvm/protocol/system';
import { getEdid, getEdidPresets, setEdid } from './system-api';
import { Store } from './store';

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

export class EdidStore extends Store<EdidStoreState> {
  private readonly controller = new AbortController();

  constructor() {
    super({ presets: [], edid: null, loadFailed: false, busy: false });
  }

  async load(): Promise<void> {
    const signal = this.controller.signal;
    const [presets, edid] = await Promise.allSettled([getEdidPresets(signal), getEdid(signal)]);
    if (signal.aborted) return;
    if (presets.status === 'fulfilled') this.setState({ presets: presets.value });
    if (edid.status === 'fulfilled') this.setState({ edid: edid.value, loadFailed: false });
    else this.setState({ loadFailed: true });
  }

  /** Checks with the shared parser, sends, then re-reads what the device now holds. */
  async apply(hex: string): Promise<EdidState> {
    if (parseEdidHex(hex) === null) throw new EdidFormatError();
    if (this.getState().busy) throw new Error('busy');
    this.setState({ busy: true });
    try {
      await setEdid(hex.replace(/\s+/g, ''));
      const edid = await getEdid(this.controller.signal);
      this.setState({ edid });
      return edid;
    } finally {
      this.setState({ busy: false });
    }
  }

  dispose(): void {
    this.controller.abort();
  }
}

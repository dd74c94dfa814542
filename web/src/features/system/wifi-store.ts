/**
 * The Wi-Fi group's state (GL `/api/repeater/*`): adapter status, saved and scanned networks,
 * one operation at a time, and a join that waits for confirmation like an Ethernet change.
 */
import type {
  SavedWifiNetwork,
  WifiConnectResult,
  WifiNetwork,
  WifiStatus,
} from '@kvm/protocol/system';
import { PendingWatch, type TrackedPending } from './pending-change';
import {
  confirmNetworkConfig,
  connectWifi,
  disconnectWifi,
  enableWifi,
  forgetWifi,
  getSavedWifiNetworks,
  getWifiStatus,
  revertNetworkConfig,
  scanWifi,
  type WifiJoin,
} from './system-api';
import { Store } from './store';

export type WifiOperation = 'scan' | 'join' | 'disconnect' | 'forget' | 'enable' | 'confirm';

export interface WifiState {
  status: WifiStatus | null;
  saved: readonly SavedWifiNetwork[];
  /** From the last scan; null before the first. */
  networks: readonly WifiNetwork[] | null;
  loadFailed: boolean;
  /** The operation running, or null (one at a time). */
  operation: WifiOperation | null;
  pending: TrackedPending | null;
  /** The last join was not confirmed and the previous network came back. */
  reverted: boolean;
}

export class WifiBusyError extends Error {
  override readonly name = 'WifiBusyError';
}

export class WifiStore extends Store<WifiState> {
  private readonly controller = new AbortController();
  private readonly watch = new PendingWatch(() => {
    this.setState({ pending: null, reverted: true });
    void this.refresh();
  });

  constructor() {
    super({
      status: null,
      saved: [],
      networks: null,
      loadFailed: false,
      operation: null,
      pending: null,
      reverted: false,
    });
  }

  /** Status and saved networks; a missing adapter answers too (adapter `none`). */
  async refresh(): Promise<void> {
    const signal = this.controller.signal;
    const [status, saved] = await Promise.allSettled([
      getWifiStatus(signal),
      getSavedWifiNetworks(signal),
    ]);
    if (signal.aborted) return;
    if (status.status === 'fulfilled') this.setState({ status: status.value, loadFailed: false });
    else this.setState({ loadFailed: true });
    if (saved.status === 'fulfilled') this.setState({ saved: saved.value });
  }

  scan(): Promise<void> {
    return this.run('scan', async () => {
      const networks = await scanWifi(this.controller.signal);
      // Strongest first, as every network list shows them.
      this.setState({ networks: [...networks].sort((a, b) => b.signal - a.signal) });
    });
  }

  /** A failed join answers 200 with `result: 'failed'` (GL): the caller shows why. */
  join(join: WifiJoin): Promise<WifiConnectResult> {
    return this.run('join', async () => {
      const result = await connectWifi(join);
      if (result.result === 'success') {
        this.setState({ pending: this.watch.track(result.pending ?? null), reverted: false });
      }
      await this.refresh();
      return result;
    });
  }

  disconnect(): Promise<void> {
    return this.run('disconnect', async () => {
      await disconnectWifi();
      await this.refresh();
    });
  }

  forget(ssid: string): Promise<void> {
    return this.run('forget', async () => {
      await forgetWifi(ssid);
      await this.refresh();
    });
  }

  enable(enable: boolean): Promise<void> {
    return this.run('enable', async () => {
      await enableWifi(enable);
      if (!enable) this.setState({ networks: null });
      await this.refresh();
    });
  }

  confirm(): Promise<void> {
    const pending = this.getState().pending;
    if (!pending) return Promise.resolve();
    return this.run('confirm', async () => {
      await confirmNetworkConfig(pending.change.id);
      this.watch.clear();
      this.setState({ pending: null });
    });
  }

  revert(): Promise<void> {
    const pending = this.getState().pending;
    if (!pending) return Promise.resolve();
    return this.run('confirm', async () => {
      await revertNetworkConfig(pending.change.id);
      this.watch.clear();
      this.setState({ pending: null, reverted: true });
      await this.refresh();
    });
  }

  private async run<T>(operation: WifiOperation, work: () => Promise<T>): Promise<T> {
    if (this.getState().operation) throw new WifiBusyError(operation);
    this.setState({ operation });
    try {
      return await work();
    } finally {
      this.setState({ operation: null });
    }
  }

  dispose(): void {
    this.controller.abort();
    this.watch.clear();
  }
}

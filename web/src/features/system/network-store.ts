/**
 * The Ethernet group's state: the device's network, a change waiting for confirmation and what
 * happened to the last one. After an unconfirmed change expires the device reverts by itself;
 * the store re-reads until the device no longer reports that change.
 */
import type { NetworkConfigWire, PendingNetworkChange } from '@kvm/protocol/system';
import { PendingWatch, type TrackedPending } from './pending-change';
import {
  confirmNetworkConfig,
  getNetworkConfig,
  revertNetworkConfig,
  setHostname,
  setNetworkConfig,
  type NetworkSettings,
} from './system-api';
import { Store } from './store';

/** Re-reads after an expiry: the device may need a moment to put the old settings back. */
const REREAD_INTERVAL_MS = 1000;
const REREAD_TRIES = 10;
/**
 * While the group is open the state is read again this often: a DHCP lease, a cable plugged in
 * or the device's own network starting after the page opened all show without a reload.
 */
export const NETWORK_REFRESH_MS = 3000;

export interface NetworkState {
  config: NetworkConfigWire | null;
  loadFailed: boolean;
  busy: boolean;
  pending: TrackedPending | null;
  /** The last change was not kept: the previous settings came back. */
  reverted: boolean;
}

export class NetworkBusyError extends Error {
  override readonly name = 'NetworkBusyError';
}

export class NetworkStore extends Store<NetworkState> {
  private readonly controller = new AbortController();
  private rereadTimer: ReturnType<typeof setTimeout> | undefined;
  private refreshTimer: ReturnType<typeof setInterval> | undefined;
  /** The change that expired here: not shown again while the device still reports it. */
  private expiredId: string | null = null;
  private readonly watch = new PendingWatch((expired) => {
    this.expiredId = expired.change.id;
    this.setState({ pending: null, reverted: true });
    this.rereadUntilGone(expired.change.id, REREAD_TRIES);
  });

  constructor() {
    super({ config: null, loadFailed: false, busy: false, pending: null, reverted: false });
  }

  async load(): Promise<NetworkConfigWire | null> {
    try {
      const config = await getNetworkConfig(this.controller.signal);
      this.adopt(config);
      return config;
    } catch {
      if (!this.controller.signal.aborted) this.setState({ loadFailed: true });
      return null;
    }
  }

  /** Reads now, then every NETWORK_REFRESH_MS until `dispose` (skipped while a change runs). */
  follow(): void {
    void this.load();
    if (this.refreshTimer !== undefined) return;
    this.refreshTimer = setInterval(() => {
      if (!this.getState().busy) void this.load();
    }, NETWORK_REFRESH_MS);
  }

  apply(settings: NetworkSettings): Promise<void> {
    return this.exclusive(async () => {
      const result = await setNetworkConfig(settings);
      this.setState({ pending: this.watch.track(result.pending ?? null), reverted: false });
      await this.load();
    });
  }

  renameHost(hostname: string): Promise<void> {
    return this.exclusive(async () => {
      const name = await setHostname(hostname);
      const config = this.getState().config;
      if (config) this.setState({ config: { ...config, hostname: name } });
    });
  }

  confirm(): Promise<void> {
    const pending = this.getState().pending;
    if (!pending) return Promise.resolve();
    return this.exclusive(async () => {
      await confirmNetworkConfig(pending.change.id);
      this.watch.clear();
      this.setState({ pending: null });
      await this.load();
    });
  }

  revert(): Promise<void> {
    const pending = this.getState().pending;
    if (!pending) return Promise.resolve();
    return this.exclusive(async () => {
      await revertNetworkConfig(pending.change.id);
      this.watch.clear();
      this.setState({ pending: null, reverted: true });
      await this.load();
    });
  }

  dispose(): void {
    this.controller.abort();
    this.watch.clear();
    if (this.rereadTimer !== undefined) clearTimeout(this.rereadTimer);
    if (this.refreshTimer !== undefined) clearInterval(this.refreshTimer);
    this.refreshTimer = undefined;
  }

  /** A pending change the device reports (after a reload of the page too) is tracked here. */
  private adopt(config: NetworkConfigWire): void {
    const reported = config.pending?.id === this.expiredId ? null : config.pending;
    const current = this.getState().pending;
    let pending = current;
    let reverted = this.getState().reverted;
    if (!reported) {
      // Gone without us: kept (confirmed elsewhere, or implicitly on the new address) or put
      // back (reverted elsewhere, or the window ended): the address in force tells which.
      if (current) reverted = isBackToPrevious(config, current.change);
      this.watch.clear();
      pending = null;
    } else if (reported.id !== current?.change.id) {
      pending = this.watch.track(reported);
    }
    this.setState({ config, loadFailed: false, pending, reverted });
  }

  private rereadUntilGone(id: string, tries: number): void {
    this.rereadTimer = setTimeout(() => {
      this.rereadTimer = undefined;
      void this.load().then((config) => {
        // Still reported: the device has not put the old settings back yet.
        if (config?.pending?.id === id && tries > 1) this.rereadUntilGone(id, tries - 1);
      });
    }, REREAD_INTERVAL_MS);
  }

  private async exclusive(work: () => Promise<void>): Promise<void> {
    if (this.getState().busy) throw new NetworkBusyError();
    this.setState({ busy: true });
    try {
      await work();
    } finally {
      this.setState({ busy: false });
    }
  }
}

/** Whether the device holds its address from before `change` again (and not the new one). */
function isBackToPrevious(config: NetworkConfigWire, change: PendingNetworkChange): boolean {
  if (!change.previous_address || config.ip_address !== change.previous_address) return false;
  try {
    return (
      change.new_address === null || new URL(change.new_address).hostname !== config.ip_address
    );
  } catch {
    return true;
  }
}

/**
 * The Ethernet group's state: the device's network, a change waiting for confirmation and what
 * happened to the last one. After an unconfirmed change expires the device reverts by itself;
 * the store re-reads until the device no longer reports that change.
 */
import { createStore, type StoreApi } from 'zustand/vanilla';
import type { NetworkConfigWire, PendingNetworkChange } from '@kvm/protocol/system';
import { whileBusy } from './busy';
import { PendingWatch, type TrackedPending } from './pending-change';
import {
  confirmNetworkConfig,
  getNetworkConfig,
  revertNetworkConfig,
  setHostname,
  setNetworkConfig,
  type NetworkSettings,
} from './system-api';

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

export interface NetworkStore extends StoreApi<NetworkState> {
  load(): Promise<NetworkConfigWire | null>;
  /** Reads now, then every NETWORK_REFRESH_MS until `dispose` (skipped while a change runs). */
  follow(): void;
  apply(settings: NetworkSettings): Promise<void>;
  renameHost(hostname: string): Promise<void>;
  confirm(): Promise<void>;
  revert(): Promise<void>;
  dispose(): void;
}

/** One per open group (its requests and timers end with it): a zustand store plus its actions. */
export function createNetworkStore(): NetworkStore {
  const store = createStore<NetworkState>()(() => ({
    config: null,
    loadFailed: false,
    busy: false,
    pending: null,
    reverted: false,
  }));
  const { getState, setState } = store;
  const controller = new AbortController();
  let rereadTimer: ReturnType<typeof setTimeout> | undefined;
  let refreshTimer: ReturnType<typeof setInterval> | undefined;
  /** The change that expired here: not shown again while the device still reports it. */
  let expiredId: string | null = null;
  const watch = new PendingWatch((expired) => {
    expiredId = expired.change.id;
    setState({ pending: null, reverted: true });
    rereadUntilGone(expired.change.id, REREAD_TRIES);
  });
  const exclusive = (work: () => Promise<void>) =>
    whileBusy(store, () => new NetworkBusyError(), work);
  /**
   * Counts the starts and ends of the changes sent to the device: a read begun before one of
   * them answers what was in force before it, and is not adopted (it would take the banner away
   * from a change just applied, or put back one just kept).
   */
  let changes = 0;
  /**
   * One change sent to the device (`busy` while its request runs), then a fresh read. The read
   * is not part of the change: the banner's Keep, shown as soon as `work` sets the pending
   * change, is live at once (a Keep during the read was swallowed by the loading button).
   */
  const change = async (work: () => Promise<void>): Promise<void> => {
    await exclusive(async () => {
      changes += 1;
      try {
        await work();
      } finally {
        changes += 1;
      }
    });
    await load();
  };

  /** A pending change the device reports (after a reload of the page too) is tracked here. */
  const adopt = (config: NetworkConfigWire): void => {
    const reported = config.pending?.id === expiredId ? null : config.pending;
    const current = getState().pending;
    let pending = current;
    let reverted = getState().reverted;
    if (!reported) {
      // Gone without us: kept (confirmed elsewhere, or implicitly on the new address) or put
      // back (reverted elsewhere, or the window ended): the address in force tells which.
      if (current) reverted = isBackToPrevious(config, current.change);
      watch.clear();
      pending = null;
    } else if (reported.id !== current?.change.id) {
      pending = watch.track(reported);
    }
    setState({ config, loadFailed: false, pending, reverted });
  };

  const load = async (): Promise<NetworkConfigWire | null> => {
    const begun = changes;
    try {
      const config = await getNetworkConfig(controller.signal);
      if (begun === changes) adopt(config);
      return config;
    } catch {
      if (!controller.signal.aborted) setState({ loadFailed: true });
      return null;
    }
  };

  const rereadUntilGone = (id: string, tries: number): void => {
    rereadTimer = setTimeout(() => {
      rereadTimer = undefined;
      void load().then((config) => {
        // Still reported: the device has not put the old settings back yet.
        if (config?.pending?.id === id && tries > 1) rereadUntilGone(id, tries - 1);
      });
    }, REREAD_INTERVAL_MS);
  };

  /** Runs `work` on the pending change, when there is one. */
  const onPending = (work: (pending: TrackedPending) => Promise<void>): Promise<void> => {
    const pending = getState().pending;
    return pending ? change(() => work(pending)) : Promise.resolve();
  };

  return Object.assign(store, {
    load,
    follow: () => {
      void load();
      if (refreshTimer !== undefined) return;
      refreshTimer = setInterval(() => {
        if (!getState().busy) void load();
      }, NETWORK_REFRESH_MS);
    },
    apply: (settings: NetworkSettings) =>
      change(async () => {
        const result = await setNetworkConfig(settings);
        setState({ pending: watch.track(result.pending ?? null), reverted: false });
      }),
    renameHost: (hostname: string) =>
      exclusive(async () => {
        const name = await setHostname(hostname);
        const config = getState().config;
        if (config) setState({ config: { ...config, hostname: name } });
      }),
    confirm: () =>
      onPending(async (pending) => {
        await confirmNetworkConfig(pending.change.id);
        watch.clear();
        setState({ pending: null });
      }),
    revert: () =>
      onPending(async (pending) => {
        await revertNetworkConfig(pending.change.id);
        watch.clear();
        setState({ pending: null, reverted: true });
      }),
    dispose: () => {
      controller.abort();
      watch.clear();
      if (rereadTimer !== undefined) clearTimeout(rereadTimer);
      if (refreshTimer !== undefined) clearInterval(refreshTimer);
      refreshTimer = undefined;
    },
  });
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

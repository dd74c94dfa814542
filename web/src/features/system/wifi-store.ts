/**
 * The Wi-Fi group's state (GL `/api/repeater/*`): adapter status, saved and scanned networks,
 * one operation at a time, and a join that waits for confirmation like an Ethernet change.
 */
import { createStore, type StoreApi } from 'zustand/vanilla';
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

export interface WifiStore extends StoreApi<WifiState> {
  /** Status and saved networks; a missing adapter answers too (adapter `none`). */
  refresh(): Promise<void>;
  scan(): Promise<void>;
  /** A failed join answers 200 with `result: 'failed'` (GL): the caller shows why. */
  join(join: WifiJoin): Promise<WifiConnectResult>;
  disconnect(): Promise<void>;
  forget(ssid: string): Promise<void>;
  enable(enable: boolean): Promise<void>;
  confirm(): Promise<void>;
  revert(): Promise<void>;
  dispose(): void;
}

/** One per open group (its requests and timer end with it): a zustand store plus its actions. */
export function createWifiStore(): WifiStore {
  const store = createStore<WifiState>()(() => ({
    status: null,
    saved: [],
    networks: null,
    loadFailed: false,
    operation: null,
    pending: null,
    reverted: false,
  }));
  const { getState, setState } = store;
  const controller = new AbortController();
  const watch = new PendingWatch(() => {
    setState({ pending: null, reverted: true });
    void refresh();
  });

  const refresh = async (): Promise<void> => {
    const signal = controller.signal;
    const [status, saved] = await Promise.allSettled([
      getWifiStatus(signal),
      getSavedWifiNetworks(signal),
    ]);
    if (signal.aborted) return;
    if (status.status === 'fulfilled') setState({ status: status.value, loadFailed: false });
    else setState({ loadFailed: true });
    if (saved.status === 'fulfilled') setState({ saved: saved.value });
  };

  const run = async <T>(operation: WifiOperation, work: () => Promise<T>): Promise<T> => {
    if (getState().operation) throw new WifiBusyError(operation);
    setState({ operation });
    try {
      return await work();
    } finally {
      setState({ operation: null });
    }
  };

  /** Runs `work` on the pending change, when there is one. */
  const onPending = (work: (pending: TrackedPending) => Promise<void>): Promise<void> => {
    const pending = getState().pending;
    return pending ? run('confirm', () => work(pending)) : Promise.resolve();
  };

  return Object.assign(store, {
    refresh,
    scan: () =>
      run('scan', async () => {
        const networks = await scanWifi(controller.signal);
        // Strongest first, as every network list shows them.
        setState({ networks: [...networks].sort((a, b) => b.signal - a.signal) });
      }),
    // The status is read again after the join has let go of the lock: the banner's Keep (a
    // `confirm`) must work as soon as the banner shows, not after that read (a loaded device
    // takes a second; Keep was refused as busy meanwhile).
    join: async (join: WifiJoin) => {
      const result = await run('join', async () => {
        const answer = await connectWifi(join);
        if (answer.result === 'success') {
          setState({ pending: watch.track(answer.pending ?? null), reverted: false });
        }
        return answer;
      });
      await refresh();
      return result;
    },
    disconnect: () =>
      run('disconnect', async () => {
        await disconnectWifi();
        await refresh();
      }),
    forget: (ssid: string) =>
      run('forget', async () => {
        await forgetWifi(ssid);
        await refresh();
      }),
    enable: (enable: boolean) =>
      run('enable', async () => {
        await enableWifi(enable);
        if (!enable) setState({ networks: null });
        await refresh();
      }),
    confirm: () =>
      onPending(async (pending) => {
        await confirmNetworkConfig(pending.change.id);
        watch.clear();
        setState({ pending: null });
      }),
    revert: async () => {
      const pending = getState().pending;
      await onPending(async (p) => {
        await revertNetworkConfig(p.change.id);
        watch.clear();
        setState({ pending: null, reverted: true });
      });
      if (pending) await refresh();
    },
    dispose: () => {
      controller.abort();
      watch.clear();
    },
  });
}

/**
 * The KVM switch group's state (PiKVM Switch, kvmd 4.2xx `GET /api/switch`, docs/api.md
 * "/api/switch*"): whether a switch is attached, its ports and the active one, and switching.
 * The device answers `/api/switch` only with `device.pikvm_switch: true` (404 otherwise), and
 * with no unit on the chain its `model.ports` is empty: both mean "no KVM switch attached".
 */
import { createStore, type StoreApi } from 'zustand/vanilla';
import type { SwitchState } from '@kvm/protocol/switch';
import { api, ApiError } from '../../lib/api';

/** One port of the chain as kvmd lists it in `model.ports` (4 per unit). */
export interface SwitchPort {
  /** kvmd's port id: "1".."4" with one unit, "<unit>.<channel>" with more. */
  id: string;
  name: string;
  /** A video signal on the port's input (`video.links`), null when not said. */
  video: boolean | null;
}

export type SwitchView =
  | { status: 'loading' }
  | { status: 'none' }
  | { status: 'error'; error: unknown }
  | { status: 'ready'; ports: SwitchPort[]; active: number; synced: boolean };

export interface SwitchStoreState {
  view: SwitchView;
  /** The port being switched to. */
  switching: number | null;
}

export interface SwitchStore extends StoreApi<SwitchStoreState> {
  load(): Promise<void>;
  /** POST /api/switch/set_active?port=<index>, then the state again. */
  setActive(port: number): Promise<void>;
  dispose(): void;
}

function portsOf(state: SwitchState): SwitchPort[] {
  const links = Array.isArray(state.video?.links) ? state.video.links : [];
  return (Array.isArray(state.model?.ports) ? state.model.ports : []).map((raw, index) => {
    const port = (raw ?? {}) as { id?: unknown; name?: unknown };
    const link = links[index];
    return {
      id: typeof port.id === 'string' && port.id ? port.id : String(index + 1),
      name: typeof port.name === 'string' ? port.name : '',
      video: typeof link === 'boolean' ? link : null,
    };
  });
}

/** The view of an answer of GET /api/switch. */
export function switchView(state: SwitchState): SwitchView {
  const ports = portsOf(state);
  if (ports.length === 0) return { status: 'none' };
  const active = state.summary?.active_port;
  return {
    status: 'ready',
    ports,
    active: typeof active === 'number' ? active : -1,
    synced: state.summary?.synced !== false,
  };
}

/** One per open group (its requests end with it): a zustand store plus its actions. */
export function createSwitchStore(): SwitchStore {
  const store = createStore<SwitchStoreState>()(() => ({
    view: { status: 'loading' },
    switching: null,
  }));
  const { setState } = store;
  const controller = new AbortController();

  const load = async (): Promise<void> => {
    const signal = controller.signal;
    try {
      const state = await api.get<SwitchState>('/switch', { signal });
      if (!signal.aborted) setState({ view: switchView(state) });
    } catch (err) {
      if (signal.aborted) return;
      // The route exists only where a switch can be attached.
      const none = err instanceof ApiError && err.status === 404;
      setState({ view: none ? { status: 'none' } : { status: 'error', error: err } });
    }
  };

  const setActive = async (port: number): Promise<void> => {
    setState({ switching: port });
    try {
      await api.post('/switch/set_active', { query: { port }, signal: controller.signal });
    } finally {
      setState({ switching: null });
    }
    await load();
  };

  return Object.assign(store, { load, setActive, dispose: () => controller.abort() });
}

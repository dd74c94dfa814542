/**
 * ATX power control (SPEC 2/3, wire-protocol.md 1.5): the `atx` state from GET /api/atx and the
 * `atx` event, and the button presses. A plain store; the power menu only subscribes.
 */
import { create } from 'zustand';
import { API_TIMEOUT_MS } from '@kvm/protocol/constants';
import { ATX_HOLD_MS, type AtxButtonName, type AtxState } from '@kvm/protocol/atx';
import { isPlainObject } from '@kvm/protocol/merge';
import { api } from '../../lib/api';
import { eventSocket, heartbeat } from '../connection/connection';

declare module '../../lib/event-socket' {
  interface EventPayloads {
    atx: Partial<AtxState>;
  }
}

export interface AtxStoreState {
  /** null until the first state arrives. */
  state: AtxState | null;
  /** The button this console is pressing right now. */
  pressing: AtxButtonName | null;
}

export const useAtx = create<AtxStoreState>(() => ({ state: null, pressing: null }));

/** The event carries the whole state; merged anyway, so a partial one cannot drop the LEDs. */
export function applyAtx(patch: Partial<AtxState> | null | undefined): void {
  if (!isPlainObject(patch)) return;
  const previous = useAtx.getState().state;
  const leds = isPlainObject(patch.leds) ? { ...previous?.leds, ...patch.leds } : previous?.leds;
  useAtx.setState({ state: { ...previous, ...patch, leds } as AtxState });
}

export async function loadAtx(): Promise<AtxState | null> {
  try {
    const state = await api.get<AtxState>('/atx');
    useAtx.setState({ state });
  } catch {
    // The event socket carries the state too.
  }
  return useAtx.getState().state;
}

/**
 * Presses a button (SPEC 3: power 0.5 s, power_long 6.5 s, reset). The answer may come after
 * the press, so the timeout covers the hold. 409 AtxIsBusyError while another press runs,
 * 400 AtxDisabledError without an ATX board: both reject with the server's ApiError.
 */
export async function clickAtx(button: AtxButtonName): Promise<void> {
  useAtx.setState({ pressing: button });
  try {
    await api.post('/atx/click', {
      query: { button },
      timeoutMs: API_TIMEOUT_MS + ATX_HOLD_MS[button],
    });
  } finally {
    useAtx.setState({ pressing: null });
  }
}

eventSocket.on('atx', applyAtx);
heartbeat.onReconnected(() => void loadAtx());

/** For tests. */
export function resetAtxForTests(): void {
  useAtx.setState({ state: null, pressing: null });
}

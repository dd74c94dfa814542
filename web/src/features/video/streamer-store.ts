/**
 * Streamer and TURN state (SPEC 3 "Live state events"): GET /api/streamer and the `streamer`
 * event, GET /api/turn/get_turn and the `turn` event. The streamer event carries whole objects
 * on our server, but kvmd sends partial ones: merged deeply either way.
 */
import { create } from 'zustand';
import { deepMerge, isPlainObject } from '@kvm/protocol/merge';
import type { StreamerState, TurnState } from '@kvm/protocol/streamer';
import { api } from '../../lib/api';
import { takePrefetched, TURN_TIMEOUT_MS } from './video-prefetch';

declare module '../../lib/event-socket' {
  interface EventPayloads {
    streamer: Partial<StreamerState>;
    turn: TurnState;
  }
}

export interface StreamerStoreState {
  /** null until the first state arrives. */
  state: StreamerState | null;
  turn: TurnState | null;
  /** When (Date.now()) hdmi.signal went false; null while there is a signal or it is unknown. */
  signalLostAt: number | null;
}

export const useStreamer = create<StreamerStoreState>(() => ({
  state: null,
  turn: null,
  signalLostAt: null,
}));

export function applyStreamer(patch: Partial<StreamerState> | null | undefined, now = Date.now()) {
  if (!isPlainObject(patch)) return;
  const previous = useStreamer.getState();
  const state = deepMerge((previous.state ?? {}) as StreamerState, patch);
  const signal = state.streamer?.hdmi?.signal;
  const signalLostAt = signal === false ? (previous.signalLostAt ?? now) : null;
  useStreamer.setState({ state, signalLostAt });
}

export function applyTurn(turn: TurnState | null | undefined): void {
  if (!isPlainObject(turn)) return;
  useStreamer.setState({ turn });
}

export function sourceOnline(state: StreamerState | null): boolean | null {
  const source = state?.streamer?.source;
  if (state && state.streamer === null) return false;
  return typeof source?.online === 'boolean' ? source.online : null;
}

export async function loadStreamer(): Promise<StreamerState | null> {
  try {
    const state = await api.get<StreamerState>('/streamer');
    applyStreamer(state);
    return useStreamer.getState().state;
  } catch {
    return null;
  }
}

/**
 * The TURN state for a new WebRTC session: asked fresh (credentials expire), else the last one
 * the event socket brought, else none (offline tests, devices without TURN: 404).
 */
export async function fetchTurn(): Promise<TurnState | null> {
  try {
    // the first session's answer, asked at the page's start (video-prefetch.ts)
    const turn = await (takePrefetched<TurnState>('/turn/get_turn') ??
      api.get<TurnState>('/turn/get_turn', { timeoutMs: TURN_TIMEOUT_MS }));
    applyTurn(turn);
  } catch {
    // Keep what the event socket said.
  }
  return useStreamer.getState().turn;
}

/** For tests. */
export function resetStreamerForTests(): void {
  useStreamer.setState({ state: null, turn: null, signalLostAt: null });
}

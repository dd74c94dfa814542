/**
 * The console's input session: the one HidSender (everything that types or clicks on the remote
 * computer sends through `hidSender`), the HID state of the device (`hid` event and GET
 * /api/hid, SPEC 3 "Live state events") and whether this console captures input right now.
 */
import { create } from 'zustand';
import type { HidState } from '@kvm/protocol/hid/state';
import { deepMerge, isPlainObject } from '@kvm/protocol/merge';
import { api } from '../../lib/api';
import { HidSender } from '../../lib/input/hid-sender';
import type { InputChannel } from '../../lib/input-channel';
import { eventSocket, heartbeat } from '../connection/connection';

declare module '../../lib/event-socket' {
  interface EventPayloads {
    hid: Partial<HidState>;
  }
}

let channelSource: () => InputChannel | null = () => null;

/**
 * The video session offers the data channel of its WebRTC session: video depends on input,
 * never the reverse (the view hosts the capture).
 */
export function setInputChannelSource(source: () => InputChannel | null): void {
  channelSource = source;
}

/**
 * Frames go on the data channel of the running WebRTC session when it is open (no head-of-line
 * wait behind the event socket's JSON), else on /api/ws.
 */
export const hidSender = new HidSender({
  channel: () => channelSource(),
  socket: eventSocket,
});

export interface HidStoreState {
  /** null until the first state arrives. */
  state: HidState | null;
}

export const useHid = create<HidStoreState>(() => ({ state: null }));

/** Our server sends whole states; kvmd sends only what changed: merged deeply either way. */
export function applyHid(patch: Partial<HidState> | null | undefined): void {
  if (!isPlainObject(patch)) return;
  const previous = useHid.getState().state;
  useHid.setState({ state: deepMerge((previous ?? {}) as HidState, patch) });
}

export async function loadHid(): Promise<HidState | null> {
  try {
    applyHid(await api.get<HidState>('/hid'));
  } catch {
    // The event socket's initial burst carries the state too.
  }
  return useHid.getState().state;
}

eventSocket.on('hid', applyHid);
heartbeat.onReconnected(() => void loadHid());

/**
 * Where input capture stands (SPEC 4 capture indicator): the remote screen has the keyboard
 * focus, the pointer is over it, or the pointer is locked to it (relative mouse).
 */
export interface CaptureState {
  focused: boolean;
  hovered: boolean;
  locked: boolean;
}

export const useCapture = create<CaptureState>(() => ({
  focused: false,
  hovered: false,
  locked: false,
}));

export function setCapture(patch: Partial<CaptureState>): void {
  const current = useCapture.getState();
  const changed = (Object.keys(patch) as (keyof CaptureState)[]).some(
    (key) => patch[key] !== undefined && patch[key] !== current[key],
  );
  if (changed) useCapture.setState(patch);
}

/** For tests. */
export function resetInputSessionForTests(): void {
  hidSender.dispose();
  useHid.setState({ state: null });
  useCapture.setState({ focused: false, hovered: false, locked: false });
}

/**
 * SPEC 4 "Mouse and keyboard capture indicator (7 states)", as a pure function of the HID state,
 * the connection, where capture stands and the user's settings.
 *
 *   state               captured  HID
 *   disabled            -         -          keyboard_control and mouse_control both off
 *   free                no        active
 *   free-inactive       no        inactive
 *   free-offline        no        offline
 *   captured-active     yes       active
 *   captured-inactive   yes       inactive
 *   captured-offline    yes       offline
 *
 * HID offline: the connection to the device is lost, no HID state has arrived, or `hid.online`
 * is false. HID inactive: online, but busy (an output switch re-creates the device) or a device
 * that is in use (keyboard with keyboard_control, mouse with mouse_control) is offline.
 * Captured: the remote screen has the keyboard focus (counts with keyboard_control), or the
 * pointer is over it or locked to it (counts with mouse_control).
 */
import type { HidState } from '@kvm/protocol/hid/state';

export const CAPTURE_INDICATOR_STATES = [
  'free',
  'free-inactive',
  'free-offline',
  'captured-offline',
  'captured-active',
  'captured-inactive',
  'disabled',
] as const;
export type CaptureIndicatorState = (typeof CAPTURE_INDICATOR_STATES)[number];

export type HidHealth = 'active' | 'inactive' | 'offline';

export interface CaptureIndicatorInput {
  /** The HID state; null until it arrives. Only the online and busy flags are read. */
  hid: {
    online: boolean;
    busy: boolean;
    keyboard?: Partial<Pick<HidState['keyboard'], 'online'>>;
    mouse?: Partial<Pick<HidState['mouse'], 'online'>>;
  } | null;
  /** The connection to the device is up (heartbeat not lost). */
  connected: boolean;
  focused: boolean;
  hovered: boolean;
  locked: boolean;
  keyboardControl: boolean;
  mouseControl: boolean;
}

export function hidHealth(input: CaptureIndicatorInput): HidHealth {
  const { hid } = input;
  if (!input.connected || !hid || !hid.online) return 'offline';
  if (hid.busy) return 'inactive';
  if (input.keyboardControl && hid.keyboard?.online === false) return 'inactive';
  if (input.mouseControl && hid.mouse?.online === false) return 'inactive';
  return 'active';
}

export function isCaptured(input: CaptureIndicatorInput): boolean {
  return (
    (input.keyboardControl && input.focused) ||
    (input.mouseControl && (input.hovered || input.locked))
  );
}

export function deriveCaptureIndicator(input: CaptureIndicatorInput): CaptureIndicatorState {
  if (!input.keyboardControl && !input.mouseControl) return 'disabled';
  const health = hidHealth(input);
  if (isCaptured(input)) return `captured-${health}`;
  return health === 'active' ? 'free' : `free-${health}`;
}

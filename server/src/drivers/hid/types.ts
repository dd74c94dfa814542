/**
 * The HID driver: how key and pointer reports reach the remote computer (QEMU input events,
 * USB gadget reports, the testbed screen). The HID service in front of it tracks pressed keys
 * and buttons per client, releases them, squashes deltas and runs the jiggler; the driver only
 * writes reports, in the order it is called.
 */
import type { HidState, MouseButton } from '@kvm/protocol';
import type { LatencySummary } from './write-latency';

export type { LatencySummary };

/**
 * What the driver knows of the wire's HidState: the service adds `busy` (its exclusive region)
 * and the jiggler. `enabled` is false only for the disabled driver (config `hid.type`), and
 * `connected` is always known here (the wire's null is for a device that cannot tell).
 */
export type HidDriverState = Pick<HidState, 'enabled' | 'online' | 'keyboard' | 'mouse'> & {
  /** The device is plugged in (USB link up); false after set_connected(false). */
  connected: boolean;
};

export interface KeyEvent {
  key: string;
  state: boolean;
}

export interface HidDriver {
  readonly name: string;
  getState(): HidDriverState;
  onState(listener: (state: HidDriverState) => void): () => void;
  /** `key` is a web key name (KeyboardEvent.code, wire-protocol.md 6). */
  sendKey(key: string, pressed: boolean): void;
  sendMouseButton(button: MouseButton, pressed: boolean): void;
  /** Absolute position, -32768..32767 on both axes (-32768 = left/top edge). */
  sendMouseMove(x: number, y: number): void;
  /** One relative report, each axis within ±127. */
  sendMouseRelative(dx: number, dy: number): void;
  /** One wheel report, each axis within ±127; positive dy scrolls up. */
  sendMouseWheel(dx: number, dy: number): void;
  /**
   * Types a key sequence (paste) as fast as the remote computer takes it, with at least
   * `delayMs` between events, taking the events lazily (the source may be long). Resolves when
   * the last event went out or, once `signal` fires, as soon as the event in flight is done.
   * Rejects if the device went away mid-way. However it ends, every key of the sequence still
   * pressed is released first, on the keyboard that typed it (drivers use paceKeyEvents).
   * Never holds the event loop for more than a few events at a time.
   */
  typeSequence(events: Iterable<KeyEvent>, delayMs: number, signal: AbortSignal): Promise<void>;
  /** Switches the mouse output (`usb` absolute, `usb_rel` relative): re-creates the device. */
  setMouseOutput(output: string): Promise<void>;
  /** Plugs the keyboard and mouse in or out. */
  setConnected(connected: boolean): Promise<void>;
  init(): Promise<void>;
  dispose(): Promise<void>;
  /**
   * Drivers that write reports to a device node (gadget): how long a sendKey took until the
   * kernel took its report, the last 1024 (metrics `kvm_hid_gadget_write_seconds`).
   */
  keyWriteLatency?(): LatencySummary;
}

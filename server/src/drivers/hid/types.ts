/**
 * The HID driver: how key and pointer reports reach the remote computer (QEMU input events,
 * USB gadget reports, the testbed screen). The HID service in front of it (issue 4) tracks
 * pressed keys and buttons, releases them, squashes deltas and runs the jiggler; the driver
 * only writes reports.
 */
export interface HidDriverState {
  online: boolean;
  keyboard: { online: boolean; leds: { caps: boolean; num: boolean; scroll: boolean } };
  mouse: { online: boolean; absolute: boolean };
}

export interface HidDriver {
  readonly name: string;
  getState(): HidDriverState;
  onState(listener: (state: HidDriverState) => void): () => void;
  /** `key` is a web key name (KeyboardEvent.code, wire-protocol.md 6). */
  sendKey(key: string, pressed: boolean): void;
  /** left, right, middle, up (back), down (forward). */
  sendMouseButton(button: string, pressed: boolean): void;
  /** Absolute position, -32768..32767 on both axes (0,0 = centre). */
  sendMouseMove(x: number, y: number): void;
  sendMouseRelative(dx: number, dy: number): void;
  sendMouseWheel(dx: number, dy: number): void;
  init(): Promise<void>;
  dispose(): Promise<void>;
}

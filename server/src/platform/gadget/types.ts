/**
 * The gadget target's shared part (the USB side of a real board): one composite USB gadget made
 * through configfs (libcomposite) and bound to the board's UDC. GadgetPlatform
 * (platform/gadget/platform.ts) owns it; the HID, MSD and USB identity drivers of the `gadget`
 * type see it only through these interfaces, so their unit tests run against fakes and the
 * platform's own tests against fixture trees (every configfs, /sys and /dev path comes from
 * configuration: config `gadget.*`).
 */

/**
 * `/sys/class/udc/<udc>/state` (the kernel's usb_state_string), or `missing` when there is no
 * UDC or configfs. The host polls the gadget only in `configured`.
 */
export type UdcState =
  | 'not attached'
  | 'attached'
  | 'powered'
  | 'reconnecting'
  | 'unauthenticated'
  | 'default'
  | 'addressed'
  | 'configured'
  | 'suspended'
  | 'missing';

/** SPEC's mouse mode: the absolute (0..32767) or the relative (signed 8-bit) USB mouse. */
export type GadgetMouseMode = 'absolute' | 'relative';

/** What the gadget holds; everything else (identity, mass storage LUNs) is the platform's. */
export interface GadgetHidNodes {
  /** `/dev/hidgN` of the keyboard function, null when the gadget has none (disabled, failed). */
  keyboard: string | null;
  /**
   * `/dev/hidgN` of the mouse function of the current mode, null when it has none. With
   * `otg_functions.enable_mouse_alt` the gadget holds both mice and a mode switch only swaps
   * this node (no re-enumeration; onRebuilt listeners are still called).
   */
  mouse: string | null;
}

/** What the HID driver of the gadget type needs from the platform. */
export interface GadgetHidHost {
  udcState(): UdcState;
  /** Called on every change of the UDC state (polled). Returns the unsubscribe. */
  onUdcState(listener: (state: UdcState) => void): () => void;
  /** The nodes of the gadget bound now; they change only across a rebuild. */
  hidNodes(): GadgetHidNodes;
  /** Called after every rebuild (mouse mode, identity, functions, reinit), when bound again. */
  onRebuilt(listener: () => void): () => void;
  /**
   * Optional (added for the HID driver): called and awaited before a rebuild (or a mouse node
   * swap) unbinds and removes the functions, so the driver closes its `/dev/hidgN` first rather
   * than write to a node whose function is going away. onRebuilt follows, also when the rebuild
   * failed (the driver reopens whatever nodes there are then).
   */
  onRebuilding?(listener: () => Promise<void>): () => void;
  mouseMode(): GadgetMouseMode;
  /** Re-creates the gadget with the other mouse function: the host re-enumerates it (~1 s). */
  setMouseMode(mode: GadgetMouseMode): Promise<void>;
  /** Binds (true) or unbinds (false) the UDC: the cable plugged in or pulled. */
  setConnected(connected: boolean): Promise<void>;
  connected(): boolean;
}

/**
 * One HID function as configfs takes it (`functions/hid.<name>/{protocol,subclass,report_length,
 * report_desc}`). platform/gadget/reports.ts defines the keyboard's and both mice's.
 */
export interface HidFunctionSpec {
  /** 1 keyboard, 2 mouse, 0 none (boot protocol interface protocol). */
  protocol: 0 | 1 | 2;
  /** 1 = boot interface subclass. */
  subclass: 0 | 1;
  /** The longest input report in bytes. */
  reportLength: number;
  descriptor: Uint8Array;
}

/**
 * HID state and answers shared by the device and the console (wire-protocol.md 1.4 and 2.4),
 * plus this product's two input extensions.
 */

/** The `hid` event and `GET /api/hid` (GL shape, wire-protocol.md 2.4). */
export interface HidState {
  enabled: boolean;
  online: boolean;
  /** An output switch (re-creating the device) is in progress. */
  busy: boolean;
  /** USB link state on hardware; the VM is always connected. */
  connected: boolean | null;
  keyboard: {
    online: boolean;
    leds: { caps: boolean; num: boolean; scroll: boolean };
    outputs: { available: string[]; active: string };
  };
  mouse: {
    online: boolean;
    absolute: boolean;
    outputs: { available: string[]; active: string };
  };
  jiggler: { enabled: boolean; active: boolean; interval: number };
}

/** Mouse outputs: `usb` is the absolute tablet, `usb_rel` the relative mouse. */
export const MOUSE_OUTPUT_ABSOLUTE = 'usb';
export const MOUSE_OUTPUT_RELATIVE = 'usb_rel';

/** `GET /api/hid/keymaps` and the `hid_keymaps` event. */
export interface KeymapsResult {
  keymaps: { default: string; available: string[] };
}

/**
 * One key of a keymap as the virtual keyboard draws it: the character (or dead-key accent) on
 * each level, null where the level types nothing.
 */
export interface KeymapKeyLabels {
  base: string | null;
  shift: string | null;
  altgr: string | null;
  shiftAltgr: string | null;
}

/** `GET /api/hid/keymap?name=`: the printable keys of a layout by web key name. */
export interface KeymapLayout {
  name: string;
  keys: Record<string, KeymapKeyLabels>;
}

/**
 * The most characters (code points) one `POST /api/hid/print` types: `limit=0` ("no limit" in
 * kvmd) still stops here, and a text left longer than this after `limit` is refused (400).
 */
export const PRINT_MAX_CHARS = 65_536;

/** `POST /api/hid/print`: how many characters were typed and which ones the layout lacks. */
export interface PrintResult {
  typed: number;
  /** Distinct characters the keymap cannot type, in order of first appearance. */
  unmapped: string[];
}

/**
 * Input extensions (not in kvmd; kvmd ignores unknown ops). Both travel on the data channel and
 * on `/api/ws` as single-byte binary frames.
 * - 0x06: release everything this client holds (the console lost focus or visibility).
 * - 0x07: input keepalive. A client that has sent one is watched: if it holds keys or buttons
 *   and sends nothing for HID_KEEPALIVE_TIMEOUT_MS, all it holds is released. The console sends
 *   it every HID_KEEPALIVE_INTERVAL_MS while anything is held.
 */
export const HID_OP_RELEASE_ALL = 0x06;
export const HID_OP_KEEPALIVE = 0x07;
export const HID_KEEPALIVE_INTERVAL_MS = 250;
export const HID_KEEPALIVE_TIMEOUT_MS = 1000;

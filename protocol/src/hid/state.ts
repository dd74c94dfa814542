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
  /**
   * kvmd/GL: `enabled` = the jiggler may be used (true whenever there is a HID); `active` = it
   * runs now (the switch of `set_params?jiggler=`, or GL's schedule); `interval` = seconds of
   * idleness before a move; `schedule` = GL's periods (PiKVM clients ignore it).
   */
  jiggler: { enabled: boolean; active: boolean; interval: number; schedule: JigglerPeriod[] };
}

/**
 * One period of GL's jiggler schedule (`POST /api/hid/set_jiggler_schedule`), in the device's
 * local time, `HH:MM`. The start is inside, the end is not; an end before the start runs over
 * midnight; start == end is an empty period (GL).
 */
export interface JigglerPeriod {
  start: string;
  end: string;
}

/** The most periods one schedule may hold (ours; GL sets no bound). */
export const JIGGLER_PERIODS_MAX = 48;

/**
 * GL's time rule: `H:M` with 0-23 and 0-59 (surrounding blanks and leading zeros allowed),
 * answered as `HH:MM`; null when it is not one.
 */
export function normalizeJigglerTime(value: unknown): string | null {
  if (typeof value !== 'string' && typeof value !== 'number') return null;
  const parts = String(value).trim().split(':');
  if (parts.length !== 2) return null;
  const [h, m] = parts.map((p) => (/^\s*[+-]?\d+\s*$/.test(p) ? Number.parseInt(p, 10) : NaN));
  if (!(h! >= 0 && h! <= 23 && m! >= 0 && m! <= 59)) return null;
  return `${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}`;
}

function minuteOf(hhmm: string): number {
  return Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
}

/** Whether `minuteOfDay` (0-1439, local) falls inside one of the periods (GL's rule). */
export function jigglerScheduleContains(
  periods: readonly JigglerPeriod[],
  minuteOfDay: number,
): boolean {
  return periods.some((p) => {
    const start = minuteOf(p.start);
    const end = minuteOf(p.end);
    return start <= end
      ? minuteOfDay >= start && minuteOfDay < end
      : minuteOfDay >= start || minuteOfDay < end;
  });
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

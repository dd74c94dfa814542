/**
 * The gadget's HID functions (what configfs takes: protocol, subclass, report length, report
 * descriptor) and the reports written to their `/dev/hidgN`. Descriptors follow the Device Class
 * Definition for HID 1.11 (items of section 6.2.2) and the HID Usage Tables (Generic Desktop
 * 0x01, Keyboard/Keypad 0x07, LED 0x08, Button 0x09, Consumer 0x0c). No report IDs: each
 * function is its own interface with one input report (and the keyboard one output report).
 */
import { ABS_MAX, ABS_MIN, usbModifierBit, type MouseButton } from '@kvm/protocol';
import type { HidFunctionSpec } from './types';

// ---- keyboard ----

/**
 * A boot keyboard: 8-byte input report (byte 0 the modifier bits, byte 1 reserved, bytes 2-7
 * up to six usages), 1-byte output report (the LEDs). It is the layout of HID 1.11 appendix B.1,
 * which a BIOS reads without parsing the descriptor, except that the key array's logical range
 * is 0..255 instead of 0..101: keys past Application (0x65), F13-F24, the international and
 * volume keys, would otherwise be out of range and ignored by a host that parses it.
 */
// prettier-ignore
const KEYBOARD_DESCRIPTOR = [
  0x05, 0x01, // Usage Page (Generic Desktop)
  0x09, 0x06, // Usage (Keyboard)
  0xa1, 0x01, // Collection (Application)
  0x05, 0x07, //   Usage Page (Keyboard/Keypad)
  0x19, 0xe0, //   Usage Minimum (LeftControl)
  0x29, 0xe7, //   Usage Maximum (RightGUI)
  0x15, 0x00, //   Logical Minimum (0)
  0x25, 0x01, //   Logical Maximum (1)
  0x75, 0x01, //   Report Size (1)
  0x95, 0x08, //   Report Count (8)
  0x81, 0x02, //   Input (Data, Variable, Absolute): byte 0, the modifiers
  0x75, 0x08, //   Report Size (8)
  0x95, 0x01, //   Report Count (1)
  0x81, 0x01, //   Input (Constant): byte 1, reserved
  0x05, 0x08, //   Usage Page (LEDs)
  0x19, 0x01, //   Usage Minimum (Num Lock)
  0x29, 0x05, //   Usage Maximum (Kana)
  0x75, 0x01, //   Report Size (1)
  0x95, 0x05, //   Report Count (5)
  0x91, 0x02, //   Output (Data, Variable, Absolute): bits 0-4 of the output report
  0x75, 0x03, //   Report Size (3)
  0x95, 0x01, //   Report Count (1)
  0x91, 0x01, //   Output (Constant): bits 5-7, padding
  0x05, 0x07, //   Usage Page (Keyboard/Keypad)
  0x19, 0x00, //   Usage Minimum (0)
  0x2a, 0xff, 0x00, // Usage Maximum (255)
  0x15, 0x00, //   Logical Minimum (0)
  0x26, 0xff, 0x00, // Logical Maximum (255): two bytes, a one-byte 0xff would be -1
  0x75, 0x08, //   Report Size (8)
  0x95, 0x06, //   Report Count (6)
  0x81, 0x00, //   Input (Data, Array, Absolute): bytes 2-7, the keys
  0xc0, //       End Collection
];

export const KEYBOARD_REPORT_LENGTH = 8;
/** Keys a boot keyboard report holds besides the modifiers. */
export const KEYBOARD_SLOTS = 6;

/** Boot interface subclass 1, protocol 1 (keyboard): BIOSes and boot loaders take it. */
export const KEYBOARD_FUNCTION: HidFunctionSpec = {
  protocol: 1,
  subclass: 1,
  reportLength: KEYBOARD_REPORT_LENGTH,
  descriptor: Uint8Array.from(KEYBOARD_DESCRIPTOR),
};

/**
 * What a boot keyboard report holds: the eight modifier bits and up to six other keys in the
 * order they were pressed. The rule past six: a seventh key waits (in press order) and takes
 * the first slot that frees, so it is typed late rather than lost, and its release before then
 * cancels it without a report. USB's own alternative, ErrorRollOver in every slot, would make
 * the host drop all six held keys for as long as the seventh is down.
 */
export class KeyboardReport {
  private modifiers = 0;
  private readonly slots: number[] = [];
  private readonly waiting: number[] = [];

  /** Presses a usage; true when the report changed (a waiting seventh key does not change it). */
  press(usage: number): boolean {
    const bit = usbModifierBit(usage);
    if (bit >= 0) {
      const before = this.modifiers;
      this.modifiers |= 1 << bit;
      return this.modifiers !== before;
    }
    if (this.slots.includes(usage) || this.waiting.includes(usage)) return false;
    if (this.slots.length < KEYBOARD_SLOTS) {
      this.slots.push(usage);
      return true;
    }
    this.waiting.push(usage);
    return false;
  }

  /** Releases a usage; true when the report changed. A freed slot goes to the first waiting key. */
  release(usage: number): boolean {
    const bit = usbModifierBit(usage);
    if (bit >= 0) {
      const before = this.modifiers;
      this.modifiers &= ~(1 << bit);
      return this.modifiers !== before;
    }
    const waitingAt = this.waiting.indexOf(usage);
    if (waitingAt >= 0) {
      this.waiting.splice(waitingAt, 1);
      return false;
    }
    const at = this.slots.indexOf(usage);
    if (at < 0) return false;
    this.slots.splice(at, 1);
    const next = this.waiting.shift();
    if (next !== undefined) this.slots.push(next);
    return true;
  }

  /** Whether the usage is down (in a slot, waiting, or a modifier bit). */
  has(usage: number): boolean {
    const bit = usbModifierBit(usage);
    if (bit >= 0) return (this.modifiers & (1 << bit)) !== 0;
    return this.slots.includes(usage) || this.waiting.includes(usage);
  }

  get empty(): boolean {
    return this.modifiers === 0 && this.slots.length === 0 && this.waiting.length === 0;
  }

  clear(): void {
    this.modifiers = 0;
    this.slots.length = 0;
    this.waiting.length = 0;
  }

  /** The 8-byte input report: modifiers, reserved, the six slots (unused ones 0). */
  encode(): Uint8Array {
    const report = new Uint8Array(KEYBOARD_REPORT_LENGTH);
    report[0] = this.modifiers;
    this.slots.forEach((usage, i) => (report[2 + i] = usage));
    return report;
  }
}

/** The report that releases every key: all zero. */
export function keyboardReleaseReport(): Uint8Array {
  return new Uint8Array(KEYBOARD_REPORT_LENGTH);
}

/** The keyboard LEDs the host sets, from the LED output report (HID Usage Tables, LED page). */
export interface KeyboardLeds {
  num: boolean;
  caps: boolean;
  scroll: boolean;
  compose: boolean;
  kana: boolean;
}

/**
 * The output report: bit 0 Num Lock, 1 Caps Lock, 2 Scroll Lock, 3 Compose, 4 Kana (usages
 * 1-5 of the LED page in the descriptor's order). Null for an empty read.
 */
export function parseLedReport(report: Uint8Array): KeyboardLeds | null {
  if (report.length < 1) return null;
  const b = report[0]!;
  return {
    num: (b & 0x01) !== 0,
    caps: (b & 0x02) !== 0,
    scroll: (b & 0x04) !== 0,
    compose: (b & 0x08) !== 0,
    kana: (b & 0x10) !== 0,
  };
}

// ---- mice ----

/** Bits of the buttons byte: Button page usages 1-5 (the host's left, right, middle, 4, 5). */
export const MOUSE_BUTTON_BITS: Readonly<Record<MouseButton, number>> = {
  left: 0x01,
  right: 0x02,
  middle: 0x04,
  up: 0x08, // back: button 4 (Linux BTN_SIDE, Windows XButton1)
  down: 0x10, // forward: button 5 (Linux BTN_EXTRA, Windows XButton2)
};

/** Five buttons and three bits of padding: byte 0 of both mice. */
// prettier-ignore
const BUTTONS_ITEMS = [
  0x05, 0x09, //     Usage Page (Button)
  0x19, 0x01, //     Usage Minimum (1)
  0x29, 0x05, //     Usage Maximum (5)
  0x15, 0x00, //     Logical Minimum (0)
  0x25, 0x01, //     Logical Maximum (1)
  0x75, 0x01, //     Report Size (1)
  0x95, 0x05, //     Report Count (5)
  0x81, 0x02, //     Input (Data, Variable, Absolute)
  0x75, 0x03, //     Report Size (3)
  0x95, 0x01, //     Report Count (1)
  0x81, 0x01, //     Input (Constant): padding
];

/** The horizontal wheel, signed 8-bit: AC Pan of the Consumer page (Linux REL_HWHEEL). */
// prettier-ignore
const PAN_ITEMS = [
  0x05, 0x0c, //     Usage Page (Consumer)
  0x0a, 0x38, 0x02, // Usage (AC Pan)
  0x15, 0x81, //     Logical Minimum (-127)
  0x25, 0x7f, //     Logical Maximum (127)
  0x75, 0x08, //     Report Size (8)
  0x95, 0x01, //     Report Count (1)
  0x81, 0x06, //     Input (Data, Variable, Relative)
];

// prettier-ignore
const MOUSE_OPEN = [
  0x05, 0x01, // Usage Page (Generic Desktop)
  0x09, 0x02, // Usage (Mouse)
  0xa1, 0x01, // Collection (Application)
  0x09, 0x01, //   Usage (Pointer)
  0xa1, 0x00, //   Collection (Physical)
];
const MOUSE_CLOSE = [0xc0, 0xc0]; // End Collection, End Collection

/** Absolute X and Y, 0..32767 each, 16 bits little-endian, then the vertical wheel. */
// prettier-ignore
const ABSOLUTE_AXES_ITEMS = [
  0x05, 0x01, //     Usage Page (Generic Desktop)
  0x09, 0x30, //     Usage (X)
  0x09, 0x31, //     Usage (Y)
  0x15, 0x00, //     Logical Minimum (0)
  0x26, 0xff, 0x7f, // Logical Maximum (32767)
  0x75, 0x10, //     Report Size (16)
  0x95, 0x02, //     Report Count (2)
  0x81, 0x02, //     Input (Data, Variable, Absolute)
  0x09, 0x38, //     Usage (Wheel)
  0x15, 0x81, //     Logical Minimum (-127)
  0x25, 0x7f, //     Logical Maximum (127)
  0x75, 0x08, //     Report Size (8)
  0x95, 0x01, //     Report Count (1)
  0x81, 0x06, //     Input (Data, Variable, Relative)
];

/** X, Y and the vertical wheel as signed 8-bit deltas: bytes 1-3 (a boot mouse reads 1-2). */
// prettier-ignore
const RELATIVE_AXES_ITEMS = [
  0x05, 0x01, //     Usage Page (Generic Desktop)
  0x09, 0x30, //     Usage (X)
  0x09, 0x31, //     Usage (Y)
  0x09, 0x38, //     Usage (Wheel)
  0x15, 0x81, //     Logical Minimum (-127)
  0x25, 0x7f, //     Logical Maximum (127)
  0x75, 0x08, //     Report Size (8)
  0x95, 0x03, //     Report Count (3)
  0x81, 0x06, //     Input (Data, Variable, Relative)
];

/** buttons, X (2), Y (2), wheel, pan. */
export const ABSOLUTE_MOUSE_REPORT_LENGTH = 7;
/** buttons, dx, dy, wheel, pan. */
export const RELATIVE_MOUSE_REPORT_LENGTH = 5;
/** The absolute mouse's largest coordinate (its logical maximum; the smallest is 0). */
export const USB_ABS_MAX = 32767;

/**
 * The absolute mouse: not a boot device (subclass 0), because a boot mouse's report is fixed
 * as buttons and two relative bytes, which a BIOS in boot protocol would read out of our X. So
 * protocol 0: HID 1.11 section 4.3 gives bInterfaceProtocol a meaning only with the boot
 * subclass, and a host that sees none parses the descriptor. kvmd says 2 (mouse) here; no host
 * we know reads it without subclass 1, and 0 is what the specification asks.
 */
export const ABSOLUTE_MOUSE_FUNCTION: HidFunctionSpec = {
  protocol: 0,
  subclass: 0,
  reportLength: ABSOLUTE_MOUSE_REPORT_LENGTH,
  descriptor: Uint8Array.from([
    ...MOUSE_OPEN,
    ...BUTTONS_ITEMS,
    ...ABSOLUTE_AXES_ITEMS,
    ...PAN_ITEMS,
    ...MOUSE_CLOSE,
  ]),
};

/**
 * The relative mouse: a boot mouse (subclass 1, protocol 2) whose first three bytes are the
 * boot report (buttons, dx, dy), so a BIOS or boot loader can use it too; wheel and pan follow.
 */
export const RELATIVE_MOUSE_FUNCTION: HidFunctionSpec = {
  protocol: 2,
  subclass: 1,
  reportLength: RELATIVE_MOUSE_REPORT_LENGTH,
  descriptor: Uint8Array.from([
    ...MOUSE_OPEN,
    ...BUTTONS_ITEMS,
    ...RELATIVE_AXES_ITEMS,
    ...PAN_ITEMS,
    ...MOUSE_CLOSE,
  ]),
};

/** HidDriver's -32768..32767 (-32768 = left/top edge) onto the report's 0..32767. */
export function toUsbAbsolute(v: number): number {
  const clamped = Math.min(ABS_MAX, Math.max(ABS_MIN, Math.round(v)));
  return Math.round(((clamped - ABS_MIN) * USB_ABS_MAX) / (ABS_MAX - ABS_MIN));
}

/** A signed 8-bit report field within the descriptors' -127..127. */
function s8(v: number): number {
  return Math.min(127, Math.max(-127, Math.round(v))) & 0xff;
}

/** The button bits of a set of buttons. */
export function mouseButtonBits(buttons: Iterable<MouseButton>): number {
  let bits = 0;
  for (const b of buttons) bits |= MOUSE_BUTTON_BITS[b];
  return bits;
}

/**
 * An absolute mouse report. `x`/`y` are already 0..32767 (toUsbAbsolute): every report carries
 * the position, so a click or a wheel report repeats the last one. Positive `wheel` scrolls up,
 * positive `pan` right.
 */
export function absoluteMouseReport(
  buttons: number,
  x: number,
  y: number,
  wheel = 0,
  pan = 0,
): Uint8Array {
  const cx = Math.min(USB_ABS_MAX, Math.max(0, Math.round(x)));
  const cy = Math.min(USB_ABS_MAX, Math.max(0, Math.round(y)));
  return Uint8Array.of(buttons & 0x1f, cx & 0xff, cx >> 8, cy & 0xff, cy >> 8, s8(wheel), s8(pan));
}

/** A relative mouse report; each delta is clamped to -127..127. Positive dy moves down. */
export function relativeMouseReport(
  buttons: number,
  dx: number,
  dy: number,
  wheel = 0,
  pan = 0,
): Uint8Array {
  return Uint8Array.of(buttons & 0x1f, s8(dx), s8(dy), s8(wheel), s8(pan));
}

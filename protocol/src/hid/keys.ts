/**
 * The keys the device can press, by web name (`KeyboardEvent.code`, wire-protocol.md 6), with
 * the codes each peer needs: Linux evdev (kvmd's binary form, bit 0x80 of the key op), PC/AT
 * scan code set 1 (the QEMU keymap files; extended keys as 0xE0xx) and QEMU's QKeyCode (QMP
 * `input-send-event`) and the USB HID usage (Keyboard/Keypad page 0x07, what a USB keyboard
 * reports: the gadget target). Numbers are from linux/input-event-codes.h, the set-1 table and
 * the USB HID Usage Tables (chapter 10; Linux's hid-input maps the same pairs the other way).
 */

export interface KeyInfo {
  /** Web name, the wire's key identity. */
  readonly code: string;
  readonly evdev: number;
  /** Set-1 make code; extended keys carry 0xE0 in the high byte. 0 when the key has none. */
  readonly at1: number;
  /** QEMU QKeyCode. */
  readonly qcode: string;
  /**
   * USB HID usage on the Keyboard/Keypad page (0x07). The modifiers are 0xe0-0xe7, which a boot
   * keyboard report carries as bits 0-7 of its first byte (usbModifierBit), not in a key slot.
   */
  readonly usb: number;
}

type Row = readonly [code: string, evdev: number, at1: number, qcode: string, usb: number];

const ROWS: readonly Row[] = [
  ['Escape', 1, 0x01, 'esc', 0x29],
  ['Digit1', 2, 0x02, '1', 0x1e],
  ['Digit2', 3, 0x03, '2', 0x1f],
  ['Digit3', 4, 0x04, '3', 0x20],
  ['Digit4', 5, 0x05, '4', 0x21],
  ['Digit5', 6, 0x06, '5', 0x22],
  ['Digit6', 7, 0x07, '6', 0x23],
  ['Digit7', 8, 0x08, '7', 0x24],
  ['Digit8', 9, 0x09, '8', 0x25],
  ['Digit9', 10, 0x0a, '9', 0x26],
  ['Digit0', 11, 0x0b, '0', 0x27],
  ['Minus', 12, 0x0c, 'minus', 0x2d],
  ['Equal', 13, 0x0d, 'equal', 0x2e],
  ['Backspace', 14, 0x0e, 'backspace', 0x2a],
  ['Tab', 15, 0x0f, 'tab', 0x2b],
  ['KeyQ', 16, 0x10, 'q', 0x14],
  ['KeyW', 17, 0x11, 'w', 0x1a],
  ['KeyE', 18, 0x12, 'e', 0x08],
  ['KeyR', 19, 0x13, 'r', 0x15],
  ['KeyT', 20, 0x14, 't', 0x17],
  ['KeyY', 21, 0x15, 'y', 0x1c],
  ['KeyU', 22, 0x16, 'u', 0x18],
  ['KeyI', 23, 0x17, 'i', 0x0c],
  ['KeyO', 24, 0x18, 'o', 0x12],
  ['KeyP', 25, 0x19, 'p', 0x13],
  ['BracketLeft', 26, 0x1a, 'bracket_left', 0x2f],
  ['BracketRight', 27, 0x1b, 'bracket_right', 0x30],
  ['Enter', 28, 0x1c, 'ret', 0x28],
  ['ControlLeft', 29, 0x1d, 'ctrl', 0xe0],
  ['KeyA', 30, 0x1e, 'a', 0x04],
  ['KeyS', 31, 0x1f, 's', 0x16],
  ['KeyD', 32, 0x20, 'd', 0x07],
  ['KeyF', 33, 0x21, 'f', 0x09],
  ['KeyG', 34, 0x22, 'g', 0x0a],
  ['KeyH', 35, 0x23, 'h', 0x0b],
  ['KeyJ', 36, 0x24, 'j', 0x0d],
  ['KeyK', 37, 0x25, 'k', 0x0e],
  ['KeyL', 38, 0x26, 'l', 0x0f],
  ['Semicolon', 39, 0x27, 'semicolon', 0x33],
  ['Quote', 40, 0x28, 'apostrophe', 0x34],
  ['Backquote', 41, 0x29, 'grave_accent', 0x35],
  ['ShiftLeft', 42, 0x2a, 'shift', 0xe1],
  ['Backslash', 43, 0x2b, 'backslash', 0x31],
  ['KeyZ', 44, 0x2c, 'z', 0x1d],
  ['KeyX', 45, 0x2d, 'x', 0x1b],
  ['KeyC', 46, 0x2e, 'c', 0x06],
  ['KeyV', 47, 0x2f, 'v', 0x19],
  ['KeyB', 48, 0x30, 'b', 0x05],
  ['KeyN', 49, 0x31, 'n', 0x11],
  ['KeyM', 50, 0x32, 'm', 0x10],
  ['Comma', 51, 0x33, 'comma', 0x36],
  ['Period', 52, 0x34, 'dot', 0x37],
  ['Slash', 53, 0x35, 'slash', 0x38],
  ['ShiftRight', 54, 0x36, 'shift_r', 0xe5],
  ['NumpadMultiply', 55, 0x37, 'kp_multiply', 0x55],
  ['AltLeft', 56, 0x38, 'alt', 0xe2],
  ['Space', 57, 0x39, 'spc', 0x2c],
  ['CapsLock', 58, 0x3a, 'caps_lock', 0x39],
  ['F1', 59, 0x3b, 'f1', 0x3a],
  ['F2', 60, 0x3c, 'f2', 0x3b],
  ['F3', 61, 0x3d, 'f3', 0x3c],
  ['F4', 62, 0x3e, 'f4', 0x3d],
  ['F5', 63, 0x3f, 'f5', 0x3e],
  ['F6', 64, 0x40, 'f6', 0x3f],
  ['F7', 65, 0x41, 'f7', 0x40],
  ['F8', 66, 0x42, 'f8', 0x41],
  ['F9', 67, 0x43, 'f9', 0x42],
  ['F10', 68, 0x44, 'f10', 0x43],
  ['NumLock', 69, 0x45, 'num_lock', 0x53],
  ['ScrollLock', 70, 0x46, 'scroll_lock', 0x47],
  ['Numpad7', 71, 0x47, 'kp_7', 0x5f],
  ['Numpad8', 72, 0x48, 'kp_8', 0x60],
  ['Numpad9', 73, 0x49, 'kp_9', 0x61],
  ['NumpadSubtract', 74, 0x4a, 'kp_subtract', 0x56],
  ['Numpad4', 75, 0x4b, 'kp_4', 0x5c],
  ['Numpad5', 76, 0x4c, 'kp_5', 0x5d],
  ['Numpad6', 77, 0x4d, 'kp_6', 0x5e],
  ['NumpadAdd', 78, 0x4e, 'kp_add', 0x57],
  ['Numpad1', 79, 0x4f, 'kp_1', 0x59],
  ['Numpad2', 80, 0x50, 'kp_2', 0x5a],
  ['Numpad3', 81, 0x51, 'kp_3', 0x5b],
  ['Numpad0', 82, 0x52, 'kp_0', 0x62],
  ['NumpadDecimal', 83, 0x53, 'kp_decimal', 0x63],
  ['IntlBackslash', 86, 0x56, 'less', 0x64],
  ['F11', 87, 0x57, 'f11', 0x44],
  ['F12', 88, 0x58, 'f12', 0x45],
  ['IntlRo', 89, 0x73, 'ro', 0x87],
  ['KanaMode', 93, 0x70, 'katakanahiragana', 0x88],
  ['Convert', 92, 0x79, 'henkan', 0x8a],
  ['NonConvert', 94, 0x7b, 'muhenkan', 0x8b],
  ['NumpadEnter', 96, 0xe01c, 'kp_enter', 0x58],
  ['ControlRight', 97, 0xe01d, 'ctrl_r', 0xe4],
  ['NumpadDivide', 98, 0xe035, 'kp_divide', 0x54],
  ['PrintScreen', 99, 0xe037, 'sysrq', 0x46],
  ['AltRight', 100, 0xe038, 'alt_r', 0xe6],
  ['Home', 102, 0xe047, 'home', 0x4a],
  ['ArrowUp', 103, 0xe048, 'up', 0x52],
  ['PageUp', 104, 0xe049, 'pgup', 0x4b],
  ['ArrowLeft', 105, 0xe04b, 'left', 0x50],
  ['ArrowRight', 106, 0xe04d, 'right', 0x4f],
  ['End', 107, 0xe04f, 'end', 0x4d],
  ['ArrowDown', 108, 0xe050, 'down', 0x51],
  ['PageDown', 109, 0xe051, 'pgdn', 0x4e],
  ['Insert', 110, 0xe052, 'insert', 0x49],
  ['Delete', 111, 0xe053, 'delete', 0x4c],
  ['AudioVolumeMute', 113, 0xe020, 'audiomute', 0x7f],
  ['AudioVolumeDown', 114, 0xe02e, 'volumedown', 0x81],
  ['AudioVolumeUp', 115, 0xe030, 'volumeup', 0x80],
  ['Power', 116, 0xe05e, 'power', 0x66],
  ['NumpadEqual', 117, 0x59, 'kp_equals', 0x67],
  ['Pause', 119, 0xe046, 'pause', 0x48],
  ['NumpadComma', 121, 0x7e, 'kp_comma', 0x85],
  ['IntlYen', 124, 0x7d, 'yen', 0x89],
  ['MetaLeft', 125, 0xe05b, 'meta_l', 0xe3],
  ['MetaRight', 126, 0xe05c, 'meta_r', 0xe7],
  ['ContextMenu', 127, 0xe05d, 'compose', 0x65],
  ['F13', 183, 0x64, 'f13', 0x68],
  ['F14', 184, 0x65, 'f14', 0x69],
  ['F15', 185, 0x66, 'f15', 0x6a],
  ['F16', 186, 0x67, 'f16', 0x6b],
  ['F17', 187, 0x68, 'f17', 0x6c],
  ['F18', 188, 0x69, 'f18', 0x6d],
  ['F19', 189, 0x6a, 'f19', 0x6e],
  ['F20', 190, 0x6b, 'f20', 0x6f],
  ['F21', 191, 0x6c, 'f21', 0x70],
  ['F22', 192, 0x6d, 'f22', 0x71],
  ['F23', 193, 0x6e, 'f23', 0x72],
  ['F24', 194, 0x76, 'f24', 0x73],
];

export const KEYS: readonly KeyInfo[] = ROWS.map(([code, evdev, at1, qcode, usb]) => ({
  code,
  evdev,
  at1,
  qcode,
  usb,
}));

const BY_CODE = new Map(KEYS.map((k) => [k.code, k]));
const BY_EVDEV = new Map(KEYS.map((k) => [k.evdev, k]));
const BY_AT1 = new Map(KEYS.map((k) => [k.at1, k]));
const BY_USB = new Map(KEYS.map((k) => [k.usb, k]));

/** The key of a web name, or undefined for a name the device does not know. */
export function keyByCode(code: string): KeyInfo | undefined {
  return BY_CODE.get(code);
}

export function keyByEvdev(evdev: number): KeyInfo | undefined {
  return BY_EVDEV.get(evdev);
}

/** The key of a USB HID usage (Keyboard/Keypad page). */
export function keyByUsb(usage: number): KeyInfo | undefined {
  return BY_USB.get(usage);
}

/**
 * The bit of a modifier's USB usage in byte 0 of a keyboard report (HID 1.11 appendix B.1:
 * LeftControl 0xe0 is bit 0 ... RightGUI 0xe7 is bit 7), or -1 for a usage that is not one.
 */
export function usbModifierBit(usage: number): number {
  return usage >= 0xe0 && usage <= 0xe7 ? usage - 0xe0 : -1;
}

/**
 * The key of a scan code as written in a QEMU keymap file: codes of 0x80 and up stand for the
 * extended (0xE0-prefixed) key `code & 0x7f` (wire-protocol.md 6).
 */
export function keyByKeymapScancode(scancode: number): KeyInfo | undefined {
  const at1 = scancode >= 0x80 ? 0xe000 | (scancode & 0x7f) : scancode;
  return BY_AT1.get(at1);
}

/** Modifier keys: `finish` never releases them (wire-protocol.md 1.4), nor PrintScreen. */
export const MODIFIER_KEYS: ReadonlySet<string> = new Set([
  'ControlLeft',
  'ControlRight',
  'ShiftLeft',
  'ShiftRight',
  'AltLeft',
  'AltRight',
  'MetaLeft',
  'MetaRight',
]);

export function isModifierKey(code: string): boolean {
  return MODIFIER_KEYS.has(code);
}

/** Mouse buttons by wire name; `up` is the back button and `down` forward (wire-protocol.md 2.8). */
export const MOUSE_BUTTONS = ['left', 'right', 'middle', 'up', 'down'] as const;
export type MouseButton = (typeof MOUSE_BUTTONS)[number];

/** evdev BTN_* codes of the buttons (the 0x80 form of op 2). */
export const MOUSE_BUTTON_EVDEV: Readonly<Record<MouseButton, number>> = {
  left: 0x110,
  right: 0x111,
  middle: 0x112,
  up: 0x116,
  down: 0x115,
};

export function isMouseButton(name: string): name is MouseButton {
  return (MOUSE_BUTTONS as readonly string[]).includes(name);
}

export function mouseButtonByEvdev(evdev: number): MouseButton | undefined {
  return MOUSE_BUTTONS.find((b) => MOUSE_BUTTON_EVDEV[b] === evdev);
}

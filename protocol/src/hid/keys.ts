/**
 * The keys the device can press, by web name (`KeyboardEvent.code`, wire-protocol.md 6), with
 * the codes each peer needs: Linux evdev (kvmd's binary form, bit 0x80 of the key op), PC/AT
 * scan code set 1 (the QEMU keymap files; extended keys as 0xE0xx) and QEMU's QKeyCode (QMP
 * `input-send-event`). Numbers are from linux/input-event-codes.h and the set-1 table.
 */

export interface KeyInfo {
  /** Web name, the wire's key identity. */
  readonly code: string;
  readonly evdev: number;
  /** Set-1 make code; extended keys carry 0xE0 in the high byte. 0 when the key has none. */
  readonly at1: number;
  /** QEMU QKeyCode. */
  readonly qcode: string;
}

type Row = readonly [code: string, evdev: number, at1: number, qcode: string];

const ROWS: readonly Row[] = [
  ['Escape', 1, 0x01, 'esc'],
  ['Digit1', 2, 0x02, '1'],
  ['Digit2', 3, 0x03, '2'],
  ['Digit3', 4, 0x04, '3'],
  ['Digit4', 5, 0x05, '4'],
  ['Digit5', 6, 0x06, '5'],
  ['Digit6', 7, 0x07, '6'],
  ['Digit7', 8, 0x08, '7'],
  ['Digit8', 9, 0x09, '8'],
  ['Digit9', 10, 0x0a, '9'],
  ['Digit0', 11, 0x0b, '0'],
  ['Minus', 12, 0x0c, 'minus'],
  ['Equal', 13, 0x0d, 'equal'],
  ['Backspace', 14, 0x0e, 'backspace'],
  ['Tab', 15, 0x0f, 'tab'],
  ['KeyQ', 16, 0x10, 'q'],
  ['KeyW', 17, 0x11, 'w'],
  ['KeyE', 18, 0x12, 'e'],
  ['KeyR', 19, 0x13, 'r'],
  ['KeyT', 20, 0x14, 't'],
  ['KeyY', 21, 0x15, 'y'],
  ['KeyU', 22, 0x16, 'u'],
  ['KeyI', 23, 0x17, 'i'],
  ['KeyO', 24, 0x18, 'o'],
  ['KeyP', 25, 0x19, 'p'],
  ['BracketLeft', 26, 0x1a, 'bracket_left'],
  ['BracketRight', 27, 0x1b, 'bracket_right'],
  ['Enter', 28, 0x1c, 'ret'],
  ['ControlLeft', 29, 0x1d, 'ctrl'],
  ['KeyA', 30, 0x1e, 'a'],
  ['KeyS', 31, 0x1f, 's'],
  ['KeyD', 32, 0x20, 'd'],
  ['KeyF', 33, 0x21, 'f'],
  ['KeyG', 34, 0x22, 'g'],
  ['KeyH', 35, 0x23, 'h'],
  ['KeyJ', 36, 0x24, 'j'],
  ['KeyK', 37, 0x25, 'k'],
  ['KeyL', 38, 0x26, 'l'],
  ['Semicolon', 39, 0x27, 'semicolon'],
  ['Quote', 40, 0x28, 'apostrophe'],
  ['Backquote', 41, 0x29, 'grave_accent'],
  ['ShiftLeft', 42, 0x2a, 'shift'],
  ['Backslash', 43, 0x2b, 'backslash'],
  ['KeyZ', 44, 0x2c, 'z'],
  ['KeyX', 45, 0x2d, 'x'],
  ['KeyC', 46, 0x2e, 'c'],
  ['KeyV', 47, 0x2f, 'v'],
  ['KeyB', 48, 0x30, 'b'],
  ['KeyN', 49, 0x31, 'n'],
  ['KeyM', 50, 0x32, 'm'],
  ['Comma', 51, 0x33, 'comma'],
  ['Period', 52, 0x34, 'dot'],
  ['Slash', 53, 0x35, 'slash'],
  ['ShiftRight', 54, 0x36, 'shift_r'],
  ['NumpadMultiply', 55, 0x37, 'kp_multiply'],
  ['AltLeft', 56, 0x38, 'alt'],
  ['Space', 57, 0x39, 'spc'],
  ['CapsLock', 58, 0x3a, 'caps_lock'],
  ['F1', 59, 0x3b, 'f1'],
  ['F2', 60, 0x3c, 'f2'],
  ['F3', 61, 0x3d, 'f3'],
  ['F4', 62, 0x3e, 'f4'],
  ['F5', 63, 0x3f, 'f5'],
  ['F6', 64, 0x40, 'f6'],
  ['F7', 65, 0x41, 'f7'],
  ['F8', 66, 0x42, 'f8'],
  ['F9', 67, 0x43, 'f9'],
  ['F10', 68, 0x44, 'f10'],
  ['NumLock', 69, 0x45, 'num_lock'],
  ['ScrollLock', 70, 0x46, 'scroll_lock'],
  ['Numpad7', 71, 0x47, 'kp_7'],
  ['Numpad8', 72, 0x48, 'kp_8'],
  ['Numpad9', 73, 0x49, 'kp_9'],
  ['NumpadSubtract', 74, 0x4a, 'kp_subtract'],
  ['Numpad4', 75, 0x4b, 'kp_4'],
  ['Numpad5', 76, 0x4c, 'kp_5'],
  ['Numpad6', 77, 0x4d, 'kp_6'],
  ['NumpadAdd', 78, 0x4e, 'kp_add'],
  ['Numpad1', 79, 0x4f, 'kp_1'],
  ['Numpad2', 80, 0x50, 'kp_2'],
  ['Numpad3', 81, 0x51, 'kp_3'],
  ['Numpad0', 82, 0x52, 'kp_0'],
  ['NumpadDecimal', 83, 0x53, 'kp_decimal'],
  ['IntlBackslash', 86, 0x56, 'less'],
  ['F11', 87, 0x57, 'f11'],
  ['F12', 88, 0x58, 'f12'],
  ['IntlRo', 89, 0x73, 'ro'],
  ['KanaMode', 93, 0x70, 'katakanahiragana'],
  ['Convert', 92, 0x79, 'henkan'],
  ['NonConvert', 94, 0x7b, 'muhenkan'],
  ['NumpadEnter', 96, 0xe01c, 'kp_enter'],
  ['ControlRight', 97, 0xe01d, 'ctrl_r'],
  ['NumpadDivide', 98, 0xe035, 'kp_divide'],
  ['PrintScreen', 99, 0xe037, 'sysrq'],
  ['AltRight', 100, 0xe038, 'alt_r'],
  ['Home', 102, 0xe047, 'home'],
  ['ArrowUp', 103, 0xe048, 'up'],
  ['PageUp', 104, 0xe049, 'pgup'],
  ['ArrowLeft', 105, 0xe04b, 'left'],
  ['ArrowRight', 106, 0xe04d, 'right'],
  ['End', 107, 0xe04f, 'end'],
  ['ArrowDown', 108, 0xe050, 'down'],
  ['PageDown', 109, 0xe051, 'pgdn'],
  ['Insert', 110, 0xe052, 'insert'],
  ['Delete', 111, 0xe053, 'delete'],
  ['AudioVolumeMute', 113, 0xe020, 'audiomute'],
  ['AudioVolumeDown', 114, 0xe02e, 'volumedown'],
  ['AudioVolumeUp', 115, 0xe030, 'volumeup'],
  ['Power', 116, 0xe05e, 'power'],
  ['NumpadEqual', 117, 0x59, 'kp_equals'],
  ['Pause', 119, 0xe046, 'pause'],
  ['NumpadComma', 121, 0x7e, 'kp_comma'],
  ['IntlYen', 124, 0x7d, 'yen'],
  ['MetaLeft', 125, 0xe05b, 'meta_l'],
  ['MetaRight', 126, 0xe05c, 'meta_r'],
  ['ContextMenu', 127, 0xe05d, 'compose'],
  ['F13', 183, 0x64, 'f13'],
  ['F14', 184, 0x65, 'f14'],
  ['F15', 185, 0x66, 'f15'],
  ['F16', 186, 0x67, 'f16'],
  ['F17', 187, 0x68, 'f17'],
  ['F18', 188, 0x69, 'f18'],
  ['F19', 189, 0x6a, 'f19'],
  ['F20', 190, 0x6b, 'f20'],
  ['F21', 191, 0x6c, 'f21'],
  ['F22', 192, 0x6d, 'f22'],
  ['F23', 193, 0x6e, 'f23'],
  ['F24', 194, 0x76, 'f24'],
];

export const KEYS: readonly KeyInfo[] = ROWS.map(([code, evdev, at1, qcode]) => ({
  code,
  evdev,
  at1,
  qcode,
}));

const BY_CODE = new Map(KEYS.map((k) => [k.code, k]));
const BY_EVDEV = new Map(KEYS.map((k) => [k.evdev, k]));
const BY_AT1 = new Map(KEYS.map((k) => [k.at1, k]));

/** The key of a web name, or undefined for a name the device does not know. */
export function keyByCode(code: string): KeyInfo | undefined {
  return BY_CODE.get(code);
}

export function keyByEvdev(evdev: number): KeyInfo | undefined {
  return BY_EVDEV.get(evdev);
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

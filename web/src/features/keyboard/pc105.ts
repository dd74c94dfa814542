/**
 * The drawn keyboard: a PC-105 main block (15 units wide, the ISO extra key IntlBackslash beside
 * the left Shift) and the navigation block with the arrows (3 units), six rows each. A cap is a
 * web key name and a width in units; a gap is a number of empty units.
 */

export type Cap = { code: string; width?: number } | { gap: number };

const keys = (...codes: string[]): Cap[] => codes.map((code) => ({ code }));
const letters = (row: string): Cap[] => keys(...[...row].map((c) => `Key${c}`));

export const MAIN_BLOCK: readonly (readonly Cap[])[] = [
  [
    { code: 'Escape' },
    { gap: 1 },
    ...keys('F1', 'F2', 'F3', 'F4'),
    { gap: 0.5 },
    ...keys('F5', 'F6', 'F7', 'F8'),
    { gap: 0.5 },
    ...keys('F9', 'F10', 'F11', 'F12'),
  ],
  [
    { code: 'Backquote' },
    ...keys(...[1, 2, 3, 4, 5, 6, 7, 8, 9, 0].map((d) => `Digit${d}`)),
    ...keys('Minus', 'Equal'),
    { code: 'Backspace', width: 2 },
  ],
  [
    { code: 'Tab', width: 1.5 },
    ...letters('QWERTYUIOP'),
    ...keys('BracketLeft', 'BracketRight'),
    { code: 'Backslash', width: 1.5 },
  ],
  [
    { code: 'CapsLock', width: 1.75 },
    ...letters('ASDFGHJKL'),
    ...keys('Semicolon', 'Quote'),
    { code: 'Enter', width: 2.25 },
  ],
  [
    { code: 'ShiftLeft', width: 1.25 },
    { code: 'IntlBackslash' },
    ...letters('ZXCVBNM'),
    ...keys('Comma', 'Period', 'Slash'),
    { code: 'ShiftRight', width: 2.75 },
  ],
  [
    { code: 'ControlLeft', width: 1.25 },
    { code: 'MetaLeft', width: 1.25 },
    { code: 'AltLeft', width: 1.25 },
    { code: 'Space', width: 6.25 },
    { code: 'AltRight', width: 1.25 },
    { code: 'MetaRight', width: 1.25 },
    { code: 'ContextMenu', width: 1.25 },
    { code: 'ControlRight', width: 1.25 },
  ],
];

export const NAV_BLOCK: readonly (readonly Cap[])[] = [
  keys('PrintScreen', 'ScrollLock', 'Pause'),
  keys('Insert', 'Home', 'PageUp'),
  keys('Delete', 'End', 'PageDown'),
  [{ gap: 3 }],
  [{ gap: 1 }, { code: 'ArrowUp' }, { gap: 1 }],
  keys('ArrowLeft', 'ArrowDown', 'ArrowRight'),
];

export const MAIN_BLOCK_UNITS = 15;
export const NAV_BLOCK_UNITS = 3;

/** Every key drawn, in drawing order. */
export function drawnKeys(): string[] {
  return [...MAIN_BLOCK, ...NAV_BLOCK].flatMap((row) =>
    row.flatMap((cap) => ('code' in cap ? [cap.code] : [])),
  );
}

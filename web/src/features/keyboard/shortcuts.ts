/**
 * Shortcuts (SPEC 3 "Shortcut", SPEC 5 "Shortcuts"): how a combination of web key names reads,
 * and whether a new one may be saved. Pure functions; the menu and the add dialog use them.
 */
import { BUILTIN_SHORTCUTS } from '@kvm/protocol/enums';
import { keyByCode } from '@kvm/protocol/hid/keys';
import {
  SHORTCUT_KEYS_MAX,
  SHORTCUT_KEYS_MIN,
  SHORTCUTS_MAX,
  type Shortcut,
} from '@kvm/protocol/settings';
import type { I18nKey } from '../../i18n/keys';

/**
 * Names of keys whose web name is not what a keycap says. Modifiers read as on a PC keyboard,
 * whatever the side (Meta is the Windows key there, SPEC 3 "Win+P").
 */
const KEY_NAMES: Readonly<Record<string, string>> = {
  ControlLeft: 'Ctrl',
  ControlRight: 'Ctrl',
  ShiftLeft: 'Shift',
  ShiftRight: 'Shift',
  AltLeft: 'Alt',
  AltRight: 'AltGr',
  MetaLeft: 'Win',
  MetaRight: 'Win',
  ContextMenu: 'Menu',
  Escape: 'Esc',
  Delete: 'Del',
  Insert: 'Ins',
  PageUp: 'PgUp',
  PageDown: 'PgDn',
  PrintScreen: 'PrtSc',
  ScrollLock: 'ScrLk',
  NumLock: 'NumLk',
  CapsLock: 'Caps Lock',
  ArrowUp: '↑',
  ArrowDown: '↓',
  ArrowLeft: '←',
  ArrowRight: '→',
  Backquote: '`',
  Minus: '-',
  Equal: '=',
  BracketLeft: '[',
  BracketRight: ']',
  Backslash: '\\',
  IntlBackslash: '\\ (ISO)',
  Semicolon: ';',
  Quote: "'",
  Comma: ',',
  Period: '.',
  Slash: '/',
  NumpadAdd: 'Num +',
  NumpadSubtract: 'Num -',
  NumpadMultiply: 'Num *',
  NumpadDivide: 'Num /',
  NumpadDecimal: 'Num .',
  NumpadEnter: 'Num Enter',
  NumpadEqual: 'Num =',
  NumpadComma: 'Num ,',
  AudioVolumeMute: 'Mute',
  AudioVolumeDown: 'Vol -',
  AudioVolumeUp: 'Vol +',
};

/** What a keycap says for a web key name (US-style names; the virtual keyboard uses keymaps). */
export function keyLabel(code: string): string {
  const named = KEY_NAMES[code];
  if (named !== undefined) return named;
  if (/^Key[A-Z]$/.test(code)) return code.slice(3);
  if (/^Digit\d$/.test(code)) return code.slice(5);
  if (/^Numpad\d$/.test(code)) return `Num ${code.slice(6)}`;
  return code;
}

/** ['ControlLeft', 'AltLeft', 'Delete'] reads 'Ctrl+Alt+Del'. */
export function shortcutLabel(keys: readonly string[]): string {
  return keys.map(keyLabel).join('+');
}

/** A saved shortcut's own label when it has one, else its keys. */
export function displayLabel(shortcut: { keys: readonly string[]; label?: string }): string {
  const own = shortcut.label?.trim();
  return own ? own : shortcutLabel(shortcut.keys);
}

export interface ShortcutProblem {
  key: I18nKey;
  values?: Record<string, number>;
}

/** Same keys, whatever the order: Ctrl+Alt+Del and Alt+Ctrl+Del do the same thing. */
export function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  const set = new Set(a);
  return b.every((key) => set.has(key));
}

/**
 * SPEC 5: a key cannot be empty, no key twice, 2 to 4 keys, at most 30 shortcuts saved, and
 * (ours) not one that exists already, built-in or saved, nor a key the device cannot press.
 * Returns the first problem, as an i18n key with its values, or null when it may be saved.
 */
export function validateShortcut(
  keys: readonly string[],
  existing: readonly Shortcut[],
): ShortcutProblem | null {
  if (keys.length === 0 || keys.some((key) => key.trim() === '')) {
    return { key: 'shortcuts.errors.keyEmpty' };
  }
  if (keys.some((key) => keyByCode(key) === undefined)) {
    return { key: 'shortcuts.errors.unknownKey' };
  }
  if (new Set(keys).size !== keys.length) return { key: 'shortcuts.errors.duplicateKey' };
  if (keys.length < SHORTCUT_KEYS_MIN || keys.length > SHORTCUT_KEYS_MAX) {
    return {
      key: 'shortcuts.errors.keyCount',
      values: { min: SHORTCUT_KEYS_MIN, max: SHORTCUT_KEYS_MAX },
    };
  }
  if (existing.length >= SHORTCUTS_MAX) {
    return { key: 'shortcuts.errors.limit', values: { max: SHORTCUTS_MAX } };
  }
  const taken = [...BUILTIN_SHORTCUTS, ...existing].some((s) => sameKeys(s.keys, keys));
  if (taken) return { key: 'shortcuts.errors.exists' };
  return null;
}

/** The list with one more shortcut; the label is kept only when the user typed one. */
export function withShortcut(
  existing: readonly Shortcut[],
  keys: readonly string[],
  label?: string,
): Shortcut[] {
  const trimmed = label?.trim();
  const added: Shortcut = trimmed ? { keys: [...keys], label: trimmed } : { keys: [...keys] };
  return [...existing, added];
}

/** The list without the shortcut at `index`. */
export function withoutShortcut(existing: readonly Shortcut[], index: number): Shortcut[] {
  return existing.filter((_, i) => i !== index);
}

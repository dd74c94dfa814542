/** What each cap of the virtual keyboard says, from the keymap's layout (SPEC 2). */
import type { KeymapKeyLabels, KeymapLayout } from '@kvm/protocol/hid/state';
import { keyLabel } from './shortcuts';
import type { KeyLevel } from './virtual-keyboard-store';

/** Keys whose caps come from the keymap; the others are named (Tab, Shift, ...). */
export const PRINTABLE = new Set<string>([
  'Backquote',
  'Minus',
  'Equal',
  'BracketLeft',
  'BracketRight',
  'Backslash',
  'IntlBackslash',
  'Semicolon',
  'Quote',
  'Comma',
  'Period',
  'Slash',
  ...[...'ABCDEFGHIJKLMNOPQRSTUVWXYZ'].map((c) => `Key${c}`),
  ...[...'0123456789'].map((d) => `Digit${d}`),
]);

export interface CapText {
  /** The big label. */
  main: string;
  /** The Shift level, drawn above the base one when it is not just the capital. */
  top?: string;
  /** The AltGr level, drawn small. */
  altgr?: string;
  /** The web key name stands in (the layout could not be fetched). */
  fallback?: boolean;
}

function visible(label: string | null | undefined): string | undefined {
  return label && label.trim() !== '' ? label : undefined;
}

/** What a cap says for a key, the keymap's layout (undefined until known) and the held level. */
export function capText(
  code: string,
  layout: KeymapLayout | null | undefined,
  level: KeyLevel,
): CapText {
  if (!PRINTABLE.has(code)) return { main: keyLabel(code) };
  const entry: KeymapKeyLabels | undefined = layout?.keys[code];
  if (!entry) {
    // No layout (or a key it lacks): the web name, not a US glyph that may be wrong here.
    return { main: code, fallback: true };
  }
  if (level !== 'base') return { main: visible(entry[level]) ?? '' };
  const base = visible(entry.base);
  const shift = visible(entry.shift);
  const altgr = visible(entry.altgr);
  const withAltgr = altgr !== undefined && altgr !== base && altgr !== shift ? { altgr } : {};
  if (base === undefined) return { main: shift ?? '', ...withAltgr };
  if (shift === undefined || shift === base || shift === base.toUpperCase()) {
    return { main: shift ?? base, ...withAltgr };
  }
  return { main: base, top: shift, ...withAltgr };
}

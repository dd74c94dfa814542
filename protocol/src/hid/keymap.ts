/**
 * Keymaps in QEMU's keymap file format: what each key types on the target computer, per level,
 * read from lines `<keysym> <set-1 scancode> [shift] [altgr] [addupper] …`. From one parsed
 * keymap come the key presses that type a text (`POST /api/hid/print`), the inverse (what a
 * computer using that layout makes of key presses, for tests) and the labels the virtual
 * keyboard draws.
 *
 * Levels are 0 plain, 1 Shift, 2 AltGr, 3 Shift+AltGr. Shift is pressed as ShiftLeft and AltGr
 * as AltRight. Variants that need Ctrl are not used.
 */
import { isModifierKey, keyByKeymapScancode } from './keys';
import type { KeymapKeyLabels, KeymapLayout } from './state';

/** X11 keysym name → Unicode code point (keysymdef.h, see {@link parseKeysymdef}). */
export type KeysymTable = ReadonlyMap<string, number>;

/** One key press on one level. */
export interface KeyStroke {
  /** Web key name (`KeyboardEvent.code`). */
  readonly code: string;
  readonly shift: boolean;
  readonly altgr: boolean;
}

/** A dead key: types nothing itself and adds its accent to the next character. */
export interface DeadKey {
  /** X11 keysym name, e.g. `dead_circumflex`. */
  readonly keysym: string;
  /** The Unicode combining mark it adds to the next character. */
  readonly mark: string;
  /** What the virtual keyboard draws on the key. */
  readonly label: string;
  /** The character it types followed by Space; null where targets disagree on it. */
  readonly spacing: string | null;
}

/** What one key types on one level. */
export type KeyOutput =
  | { readonly kind: 'char'; readonly char: string }
  | { readonly kind: 'dead'; readonly dead: DeadKey };

/** A key's output on levels 0 to 3; null where the level types nothing. */
export type KeyLevels = readonly [
  KeyOutput | null,
  KeyOutput | null,
  KeyOutput | null,
  KeyOutput | null,
];

/** A parsed keymap. Named so to keep clear of `Keymap`, the keymap-name type in enums.ts. */
export interface ParsedKeymap {
  readonly name: string;
  /** Every key that types something, by web key name, in the file's order. */
  readonly keys: ReadonlyMap<string, KeyLevels>;
  /** Each character typed by one key press, with every way to type it, best first. */
  readonly chars: ReadonlyMap<string, readonly KeyStroke[]>;
  /** Dead keys by the combining mark they add, with every way to press them, best first. */
  readonly deadKeys: ReadonlyMap<
    string,
    { readonly dead: DeadKey; readonly strokes: readonly KeyStroke[] }
  >;
}

/** A key press (`state: true`) or release, as the HID layer takes it. */
export interface KeyStateEvent {
  key: string;
  state: boolean;
}

/** What {@link textToKeyEvents} makes of a text. */
export interface TypedText {
  events: KeyStateEvent[];
  /** Characters typed (a `\r\n` pair counts once). */
  typed: number;
  /** Distinct characters the layout cannot type, in order of first appearance. */
  unmapped: string[];
}

type DeadRow = readonly [keysym: string, mark: number, label: string | null, spaceable: boolean];

/**
 * Dead keysyms and the marks they add. `spaceable` is false where dead key + Space types
 * different things on Windows and on X11 (ring: ˚ or °) or nothing useful; the five accents the
 * console must be able to type alone (^ ` ~ ¨ ´) are spaceable, though X11's en_US Compose
 * table turns ´ and ¨ + Space into ' and ".
 */
const DEAD_ROWS: readonly DeadRow[] = [
  ['dead_grave', 0x300, '`', true],
  ['dead_acute', 0x301, '\u00b4', true],
  ['dead_circumflex', 0x302, '^', true],
  ['dead_tilde', 0x303, '~', true],
  ['dead_perispomeni', 0x303, '~', true],
  ['dead_macron', 0x304, '\u00af', true],
  ['dead_breve', 0x306, '\u02d8', true],
  ['dead_abovedot', 0x307, '\u02d9', true],
  ['dead_diaeresis', 0x308, '\u00a8', true],
  ['dead_hook', 0x309, null, false],
  ['dead_abovering', 0x30a, '\u02da', false],
  ['dead_doubleacute', 0x30b, '\u02dd', true],
  ['dead_caron', 0x30c, '\u02c7', true],
  ['dead_aboveverticalline', 0x30d, null, false],
  ['dead_doublegrave', 0x30f, null, false],
  ['dead_invertedbreve', 0x311, null, false],
  ['dead_abovecomma', 0x313, null, false],
  ['dead_psili', 0x313, null, false],
  ['dead_abovereversedcomma', 0x314, null, false],
  ['dead_dasia', 0x314, null, false],
  ['dead_horn', 0x31b, null, false],
  ['dead_belowdot', 0x323, null, false],
  ['dead_belowdiaeresis', 0x324, null, false],
  ['dead_belowring', 0x325, null, false],
  ['dead_belowcomma', 0x326, null, false],
  ['dead_cedilla', 0x327, '\u00b8', true],
  ['dead_ogonek', 0x328, '\u02db', true],
  ['dead_belowverticalline', 0x329, null, false],
  ['dead_belowcircumflex', 0x32d, null, false],
  ['dead_belowbreve', 0x32e, null, false],
  ['dead_belowtilde', 0x330, null, false],
  ['dead_belowmacron', 0x331, null, false],
  ['dead_lowline', 0x332, null, false],
  ['dead_stroke', 0x338, null, false],
  ['dead_longsolidusoverlay', 0x338, null, false],
  ['dead_iota', 0x345, '\u037a', false],
];

const DEAD_KEYS: ReadonlyMap<string, DeadKey> = new Map(
  DEAD_ROWS.map(([keysym, mark, label, spaceable]) => {
    const m = String.fromCodePoint(mark);
    // A mark without a spacing form is drawn on a dotted circle, as Unicode charts show it.
    const shown = label ?? `\u25cc${m}`;
    return [keysym, { keysym, mark: m, label: shown, spacing: spaceable ? shown : null }];
  }),
);

/**
 * QEMU generated its de and fr keymaps from XKB's `nodeadkeys` variants, which put plain
 * accents where the standard variants have dead keys. Target computers run the standard
 * variants (as they do for the other keymaps, generated from those), so the dead keys are put
 * back: per web key, the dead keysym on each level (XKB symbols/de, symbols/fr, symbols/latin),
 * null where the file is right.
 */
const NODEADKEYS_FIXES: Readonly<
  Record<string, Readonly<Record<string, readonly (string | null)[]>>>
> = {
  de: {
    Backquote: ['dead_circumflex', null, null, null],
    Equal: ['dead_acute', 'dead_grave', 'dead_cedilla', 'dead_ogonek'],
    BracketLeft: [null, null, 'dead_diaeresis', 'dead_abovering'],
    BracketRight: [null, null, 'dead_tilde', 'dead_macron'],
    Semicolon: [null, null, 'dead_doubleacute', 'dead_belowdot'],
    Quote: [null, null, 'dead_circumflex', 'dead_caron'],
    Backslash: [null, null, null, 'dead_breve'],
  },
  fr: {
    Equal: [null, null, null, 'dead_ogonek'],
    BracketLeft: ['dead_circumflex', 'dead_diaeresis', null, null],
    BracketRight: [null, null, null, 'dead_macron'],
    Quote: [null, null, 'dead_circumflex', 'dead_caron'],
    Backslash: [null, null, 'dead_grave', 'dead_breve'],
    KeyM: [null, null, 'dead_acute', 'dead_doubleacute'],
    Slash: [null, null, null, 'dead_abovedot'],
  },
};

/** The fixes for a file generated from a `nodeadkeys` variant, from its header comments. */
function nodeadkeysFixes(text: string): Readonly<Record<string, readonly (string | null)[]>> {
  if (!/^#\s*variant\s*:\s*nodeadkeys\s*$/m.test(text)) return {};
  const layout = /^#\s*layout\s*:\s*(\S+)\s*$/m.exec(text)?.[1];
  return layout !== undefined && Object.hasOwn(NODEADKEYS_FIXES, layout)
    ? (NODEADKEYS_FIXES[layout] ?? {})
    : {};
}

/** Typographic characters typed as their plain forms when the layout lacks them. */
const FALLBACKS: Readonly<Record<string, string>> = {
  '\u201a': "'",
  '\u2018': "'",
  '\u2019': "'",
  '\u201e': '"',
  '\u201c': '"',
  '\u201d': '"',
  '\u2013': '-',
  '\u00a0': ' ',
};

const ENTER: KeyStroke = { code: 'Enter', shift: false, altgr: false };
const TAB: KeyStroke = { code: 'Tab', shift: false, altgr: false };
const SHIFT_KEY = 'ShiftLeft';
const ALTGR_KEY = 'AltRight';
/**
 * Windows' US layout types \ | on the ISO key where X11's types < >: a character that another
 * key also types is never typed there.
 */
const LAST_RESORT_KEY = 'IntlBackslash';

const COMBINING = /^\p{M}$/u;
const CONTROL = /^\p{Cc}$/u;

/** The code point a keysym value stands for: Latin-1 as is, and 0x01000000 + code point. */
function keysymValueCodePoint(value: number): number | undefined {
  if ((value >= 0x20 && value <= 0x7e) || (value >= 0xa0 && value <= 0xff)) return value;
  if (value >= 0x01000000 && value <= 0x0110ffff) return value - 0x01000000;
  return undefined;
}

/**
 * The Unicode code point of a keysym as a keymap file writes it: a keysymdef.h name, `U<hex>`,
 * or a numeric `0x<hex>` keysym. Undefined for keysyms that type no character (Shift_L, F1…).
 */
export function keysymCodePoint(name: string, keysyms: KeysymTable): number | undefined {
  const known = keysyms.get(name);
  if (known !== undefined) return known;
  const unicode = /^U([0-9A-Fa-f]{4,6})$/.exec(name);
  if (unicode?.[1] !== undefined) return parseInt(unicode[1], 16);
  const numeric = /^0x([0-9A-Fa-f]{1,8})$/.exec(name);
  if (numeric?.[1] !== undefined) return keysymValueCodePoint(parseInt(numeric[1], 16));
  return undefined;
}

/**
 * Parses X11's keysymdef.h into a {@link KeysymTable}. A `U+XXXX` in a line's comment gives the
 * character (also the parenthesised approximate ones, which keymaps use for box drawing and
 * the like); other keysyms count only when their value is a Latin-1 or 0x01000000-based one.
 * The first definition of a name wins.
 */
export function parseKeysymdef(text: string): Map<string, number> {
  const table = new Map<string, number>();
  const define = /^#define\s+XK_(\w+)\s+0x([0-9A-Fa-f]+)(.*)$/;
  for (const line of text.split('\n')) {
    const m = define.exec(line);
    if (m?.[1] === undefined || m[2] === undefined || table.has(m[1])) continue;
    const comment = /U\+([0-9A-Fa-f]{4,6})/.exec(m[3] ?? '');
    const cp =
      comment?.[1] !== undefined
        ? parseInt(comment[1], 16)
        : keysymValueCodePoint(parseInt(m[2], 16));
    if (cp !== undefined) table.set(m[1], cp);
  }
  return table;
}

function isTypable(cp: number): boolean {
  if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
  return !CONTROL.test(String.fromCodePoint(cp));
}

function keysymOutput(name: string, keysyms: KeysymTable): KeyOutput | null {
  const dead = DEAD_KEYS.get(name);
  if (dead) return { kind: 'dead', dead };
  const cp = keysymCodePoint(name, keysyms);
  if (cp === undefined || !isTypable(cp)) return null;
  return { kind: 'char', char: String.fromCodePoint(cp) };
}

function modifierCount(s: KeyStroke): number {
  return (s.shift ? 1 : 0) + (s.altgr ? 1 : 0) + (s.code === LAST_RESORT_KEY ? 10 : 0);
}

/**
 * Parses a keymap file. Where two lines give the same key and level, the later one wins:
 * the old hand-written files (sl, sv) start with a US block and then redefine keys for their
 * layout, and the generated ones never repeat a key and level. Lines with `numlock` (the
 * keypad's digits), `inhibit` or any modifier other than shift and altgr are skipped. Keymaps
 * generated from XKB's `nodeadkeys` variants (de, fr) get the standard variants' dead keys back.
 * @param name the keymap's name, carried into {@link keymapLayout}
 * @param text the file's contents
 * @param keysyms keysymdef.h's names (keysyms written as `U<hex>` or `0x<hex>` need none)
 */
export function parseKeymap(name: string, text: string, keysyms: KeysymTable): ParsedKeymap {
  const levels = new Map<string, (KeyOutput | null)[]>();
  const put = (code: string, level: number, out: KeyOutput): void => {
    let row = levels.get(code);
    if (!row) {
      row = [null, null, null, null];
      levels.set(code, row);
    }
    row[level] = out;
  };

  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || /^(map|include)\s/.test(line)) continue;
    const [sym, scan, ...words] = line.split(/\s+/);
    if (sym === undefined || scan === undefined || !/^0x[0-9A-Fa-f]+$/.test(scan)) continue;
    let shift = false;
    let altgr = false;
    let addupper = false;
    let usable = true;
    for (const word of words) {
      if (word === 'shift') shift = true;
      else if (word === 'altgr') altgr = true;
      else if (word === 'addupper') addupper = true;
      else if (word !== 'localstate') usable = false;
    }
    const key = keyByKeymapScancode(parseInt(scan, 16));
    if (!usable || !key) continue;
    const out = keysymOutput(sym, keysyms);
    if (!out) continue;
    const level = (shift ? 1 : 0) + (altgr ? 2 : 0);
    put(key.code, level, out);
    if (addupper && !shift && out.kind === 'char') {
      const upper = out.char.toUpperCase();
      if (upper !== out.char && [...upper].length === 1) {
        put(key.code, level + 1, { kind: 'char', char: upper });
      }
    }
  }

  for (const [code, fixes] of Object.entries(nodeadkeysFixes(text))) {
    fixes.forEach((keysym, level) => {
      const dead = keysym === null ? undefined : DEAD_KEYS.get(keysym);
      if (dead) put(code, level, { kind: 'dead', dead });
    });
  }

  const keys = new Map<string, KeyLevels>();
  const chars = new Map<string, KeyStroke[]>();
  const deadKeys = new Map<string, { dead: DeadKey; strokes: KeyStroke[] }>();
  for (const [code, row] of levels) {
    keys.set(code, [row[0] ?? null, row[1] ?? null, row[2] ?? null, row[3] ?? null]);
    row.forEach((out, level) => {
      if (!out) return;
      const stroke: KeyStroke = { code, shift: (level & 1) !== 0, altgr: (level & 2) !== 0 };
      if (out.kind === 'char') {
        const list = chars.get(out.char);
        if (list) list.push(stroke);
        else chars.set(out.char, [stroke]);
      } else {
        const entry = deadKeys.get(out.dead.mark);
        if (entry) entry.strokes.push(stroke);
        else deadKeys.set(out.dead.mark, { dead: out.dead, strokes: [stroke] });
      }
    });
  }
  const byCost = (a: KeyStroke, b: KeyStroke): number => modifierCount(a) - modifierCount(b);
  for (const list of chars.values()) list.sort(byCost);
  for (const entry of deadKeys.values()) entry.strokes.sort(byCost);
  return { name, keys, chars, deadKeys };
}

/** Of equally cheap strokes, the one that keeps the modifiers as they are. */
function pick(
  strokes: readonly KeyStroke[] | undefined,
  shift: boolean,
  altgr: boolean,
): KeyStroke | undefined {
  const first = strokes?.[0];
  if (!strokes || !first) return undefined;
  const cost = modifierCount(first);
  return (
    strokes.find((s) => modifierCount(s) === cost && s.shift === shift && s.altgr === altgr) ??
    first
  );
}

/** The strokes that type one character, or null when the layout cannot type it. */
function plan(
  char: string,
  keymap: ParsedKeymap,
  shift: boolean,
  altgr: boolean,
): KeyStroke[] | null {
  if (char === '\n' || char === '\r') return [ENTER];
  if (char === '\t') return [TAB];
  if (CONTROL.test(char)) return null;
  const direct = pick(keymap.chars.get(char), shift, altgr);
  if (direct) return [direct];

  const parts = [...char.normalize('NFD')];
  const [base, mark] = parts;
  if (parts.length === 2 && base !== undefined && mark !== undefined) {
    const dead = pick(keymap.deadKeys.get(mark)?.strokes, shift, altgr);
    if (dead && (base + mark).normalize('NFC') === char) {
      const letter = pick(keymap.chars.get(base), dead.shift, dead.altgr);
      if (letter) return [dead, letter];
    }
  }

  for (const { dead, strokes } of keymap.deadKeys.values()) {
    if (dead.spacing !== char) continue;
    const space = pick(keymap.chars.get(' '), false, false);
    const stroke = pick(strokes, shift, altgr);
    if (space && stroke) return [stroke, space];
  }

  const fallback = FALLBACKS[char];
  return fallback !== undefined ? plan(fallback, keymap, shift, altgr) : null;
}

/**
 * The key presses that type `text` on a computer using `keymap`'s layout, made lazily as they
 * are taken (a paste of a long text never holds all its events at once), with the counts of
 * the part taken so far. Each character takes its cheapest direct key (fewest modifiers), else
 * dead key + base letter, else (a lone accent) dead key + Space, else a plain stand-in for
 * typographic quotes, en dash and no-break space. `\n` is Enter, `\t` Tab, `\r\n` one Enter (a
 * lone `\r` too). Shift and AltGr stay held while consecutive characters need them and are
 * released at the end; Enter and Tab are pressed without them, as Shift+Tab and Shift+Enter
 * mean something else to most programs.
 */
export class TextKeyEvents implements Iterable<KeyStateEvent> {
  /** Characters whose events were all taken (a `\r\n` pair counts once). */
  typed = 0;
  /** Distinct characters the layout cannot type, met so far, in order of first appearance. */
  readonly unmapped: string[] = [];
  private started = false;
  /** Modifiers held by the events taken so far. */
  private shift = false;
  private altgr = false;

  constructor(
    private readonly text: string,
    private readonly keymap: ParsedKeymap,
  ) {}

  /** One pass only: the counts belong to it. */
  [Symbol.iterator](): Iterator<KeyStateEvent> {
    if (this.started) throw new Error('TextKeyEvents can be iterated once');
    this.started = true;
    return this.events();
  }

  private *events(): Generator<KeyStateEvent, void, undefined> {
    const { keymap } = this;
    const skipped = new Set<string>();
    // Code points one at a time, with a look-ahead of one cluster: no copy of the whole text.
    const cps = this.text[Symbol.iterator]();
    let ahead: string[] = [];
    const peek = (n: number): string | undefined => {
      while (ahead.length <= n) {
        const next = cps.next();
        if (next.done) return undefined;
        ahead.push(next.value);
      }
      return ahead[n];
    };
    for (;;) {
      const char = peek(0);
      if (char === undefined) break;
      if (char === '\r' && peek(1) === '\n') {
        ahead.shift();
        continue;
      }
      // Decomposed input (e + U+0301) is typed as its composed character when the layout has no
      // key for the lone mark.
      let end = 1;
      while (COMBINING.test(peek(end) ?? '')) end++;
      if (end > 1) {
        const cluster = ahead.slice(0, end);
        if (cluster.some((c) => !keymap.chars.has(c))) {
          const composed = cluster.join('').normalize('NFC');
          const strokes =
            [...composed].length === 1 ? plan(composed, keymap, this.shift, this.altgr) : null;
          if (strokes) {
            ahead = ahead.slice(end);
            yield* this.type(strokes);
            continue;
          }
        }
      }
      ahead.shift();
      const strokes = plan(char, keymap, this.shift, this.altgr);
      if (strokes) yield* this.type(strokes);
      else if (!skipped.has(char)) {
        skipped.add(char);
        this.unmapped.push(char);
      }
    }
    yield* this.setModifiers(false, false);
  }

  private *type(strokes: readonly KeyStroke[]): Generator<KeyStateEvent, void, undefined> {
    for (const s of strokes) {
      yield* this.setModifiers(s.shift, s.altgr);
      yield { key: s.code, state: true };
      yield { key: s.code, state: false };
    }
    // Counted once its last event was taken, so a stopped paste never over-reports.
    this.typed += 1;
  }

  private *setModifiers(shift: boolean, altgr: boolean): Generator<KeyStateEvent, void, undefined> {
    if (this.shift && !shift) yield { key: SHIFT_KEY, state: false };
    if (this.altgr && !altgr) yield { key: ALTGR_KEY, state: false };
    if (!this.shift && shift) yield { key: SHIFT_KEY, state: true };
    if (!this.altgr && altgr) yield { key: ALTGR_KEY, state: true };
    this.shift = shift;
    this.altgr = altgr;
  }
}

/**
 * Every key press that types `text` at once, as {@link TextKeyEvents} makes them.
 * @returns the events, the count of characters typed, and the distinct characters skipped
 */
export function textToKeyEvents(text: string, keymap: ParsedKeymap): TypedText {
  const lazy = new TextKeyEvents(text, keymap);
  const events = [...lazy];
  return { events, typed: lazy.typed, unmapped: lazy.unmapped };
}

function composeDead(dead: DeadKey, char: string): string {
  if (char === ' ') return dead.spacing ?? dead.label;
  const composed = (char + dead.mark).normalize('NFC');
  // Without a composition, Windows types the accent and then the character.
  return [...composed].length === 1 ? composed : (dead.spacing ?? '') + char;
}

/**
 * What a computer using `keymap`'s layout types for these key events: Shift and AltGr (left or
 * right Shift, AltRight) pick the level, a dead key waits for the next character and combines
 * with it (NFC), Enter is `\n` and Tab `\t`. Keys pressed while Ctrl, Alt or Meta is held type
 * nothing. The inverse of {@link textToKeyEvents}, for tests.
 */
export function keyEventsToText(events: readonly KeyStateEvent[], keymap: ParsedKeymap): string {
  const down = new Set<string>();
  let text = '';
  let pending: DeadKey | null = null;
  for (const { key, state } of events) {
    if (!state) {
      down.delete(key);
      continue;
    }
    down.add(key);
    if (isModifierKey(key)) continue;
    const shortcut = ['ControlLeft', 'ControlRight', 'AltLeft', 'MetaLeft', 'MetaRight'].some((m) =>
      down.has(m),
    );
    if (shortcut) continue;
    let out: KeyOutput | null;
    if (key === 'Enter' || key === 'NumpadEnter') out = { kind: 'char', char: '\n' };
    else if (key === 'Tab') out = { kind: 'char', char: '\t' };
    else {
      const level =
        (down.has('ShiftLeft') || down.has('ShiftRight') ? 1 : 0) + (down.has(ALTGR_KEY) ? 2 : 0);
      out = keymap.keys.get(key)?.[level] ?? null;
    }
    if (!out) continue;
    if (out.kind === 'dead') {
      // The same dead key twice types its accent; another one first gives up the pending one.
      if (pending) text += pending.spacing ?? '';
      pending = pending === out.dead ? null : out.dead;
      continue;
    }
    text += pending ? composeDead(pending, out.char) : out.char;
    pending = null;
  }
  return text;
}

function label(out: KeyOutput | null): string | null {
  if (!out) return null;
  return out.kind === 'char' ? out.char : out.dead.label;
}

/**
 * The virtual keyboard's labels: for every key that types something, the character on each
 * level, or the accent of a dead key.
 */
export function keymapLayout(keymap: ParsedKeymap): KeymapLayout {
  const keys: Record<string, KeymapKeyLabels> = {};
  for (const [code, [base, shift, altgr, shiftAltgr]] of keymap.keys) {
    keys[code] = {
      base: label(base),
      shift: label(shift),
      altgr: label(altgr),
      shiftAltgr: label(shiftAltgr),
    };
  }
  return { name: keymap.name, keys };
}

import { describe, expect, it } from 'vitest';
import {
  keyEventsToText,
  keymapLayout,
  keysymCodePoint,
  parseKeymap,
  parseKeysymdef,
  textToKeyEvents,
  type KeyStateEvent,
} from './keymap';

// The real files are exercised per layout in server/src/services/hid/keymap-store.test.ts; here
// small hand-made ones pin each rule down.
const KEYSYMDEF = `
#define XK_space                         0x0020  /* U+0020 SPACE */
#define XK_apostrophe                    0x0027  /* U+0027 APOSTROPHE */
#define XK_quotedbl                      0x0022  /* U+0022 QUOTATION MARK */
#define XK_minus                         0x002d  /* U+002D HYPHEN-MINUS */
#define XK_less                          0x003c  /* U+003C LESS-THAN SIGN */
#define XK_greater                       0x003e  /* U+003E GREATER-THAN SIGN */
#define XK_comma                         0x002c  /* U+002C COMMA */
#define XK_at                            0x0040  /* U+0040 COMMERCIAL AT */
#define XK_a                             0x0061  /* U+0061 LATIN SMALL LETTER A */
#define XK_A                             0x0041  /* U+0041 LATIN CAPITAL LETTER A */
#define XK_b                             0x0062  /* U+0062 LATIN SMALL LETTER B */
#define XK_B                             0x0042  /* U+0042 LATIN CAPITAL LETTER B */
#define XK_e                             0x0065  /* U+0065 LATIN SMALL LETTER E */
#define XK_E                             0x0045  /* U+0045 LATIN CAPITAL LETTER E */
#define XK_asciicircum                   0x005e  /* U+005E CIRCUMFLEX ACCENT */
#define XK_acute                         0x00b4
#define XK_adiaeresis                    0x00e4  /* U+00E4 LATIN SMALL LETTER A WITH DIAERESIS */
#define XK_adiaeresis                    0x00c4  /* a second definition never wins */
#define XK_ssharp                        0x00df  /* U+00DF LATIN SMALL LETTER SHARP S */
#define XK_EuroSign                      0x20ac  /* U+20AC EURO SIGN */
#define XK_horizconnector                0x08a3  /*(U+2500 BOX DRAWINGS LIGHT HORIZONTAL)*/
#define XK_Cyrillic_a                    0x06c1  /* U+0430 CYRILLIC SMALL LETTER A */
#define XK_Cyrillic_A                    0x06e1  /* U+0410 CYRILLIC CAPITAL LETTER A */
#define XK_newsym                   0x10000e9
#define XK_Return                        0xff0d  /* Return, enter */
#define XK_KP_Add                        0xffab
#define XK_dead_circumflex               0xfe52
`;
const KEYSYMS = parseKeysymdef(KEYSYMDEF);

/** A small US-like layout with AltGr, one dead key and every kind of line the files have. */
const TEST_MAP = `
# a comment
map 0x409
include common
a 0x1e
A 0x1e shift
b 0x30 addupper
e 0x12
E 0x12 shift
EuroSign 0x12 altgr
at 0x10 altgr
dead_circumflex 0x07 shift altgr
space 0x39
apostrophe 0x28
quotedbl 0x28 shift
less 0x33 shift
less 0x56
greater 0x56 shift
Cyrillic_a 0x21 altgr addupper
ssharp 0x1f ctrl
horizconnector 0x20 localstate
KP_Add 0x4e
KP_1 0x4f numlock
Return 0x1c
Multi_key 0x0 inhibit
U2212 0x0c altgr
0x0100002b 0x0d shift
Return 0x9c
minus 0x0c
`;
const map = parseKeymap('test', TEST_MAP, KEYSYMS);

const down = (key: string): KeyStateEvent => ({ key, state: true });
const up = (key: string): KeyStateEvent => ({ key, state: false });
const tap = (key: string): KeyStateEvent[] => [down(key), up(key)];

describe('parseKeysymdef', () => {
  it('takes the U+ comment, also the approximate parenthesised one', () => {
    expect(KEYSYMS.get('EuroSign')).toBe(0x20ac);
    expect(KEYSYMS.get('Cyrillic_a')).toBe(0x430);
    expect(KEYSYMS.get('horizconnector')).toBe(0x2500);
  });

  it('falls back to Latin-1 and 0x01000000-based values, and skips function keys', () => {
    expect(KEYSYMS.get('acute')).toBe(0xb4);
    expect(KEYSYMS.get('newsym')).toBe(0xe9);
    expect(KEYSYMS.has('Return')).toBe(false);
    expect(KEYSYMS.has('KP_Add')).toBe(false);
    expect(KEYSYMS.has('dead_circumflex')).toBe(false);
  });

  it('keeps the first definition of a name', () => {
    expect(KEYSYMS.get('adiaeresis')).toBe(0xe4);
  });
});

describe('keysymCodePoint', () => {
  it('reads names, U<hex> names and numeric keysyms', () => {
    expect(keysymCodePoint('at', KEYSYMS)).toBe(0x40);
    expect(keysymCodePoint('U20AC', KEYSYMS)).toBe(0x20ac);
    expect(keysymCodePoint('0x0100002b', KEYSYMS)).toBe(0x2b);
    expect(keysymCodePoint('0x00e4', KEYSYMS)).toBe(0xe4);
    expect(keysymCodePoint('0xff0d', KEYSYMS)).toBeUndefined();
    expect(keysymCodePoint('Shift_L', KEYSYMS)).toBeUndefined();
  });
});

describe('parseKeymap', () => {
  it('maps characters to web keys and levels', () => {
    expect(map.chars.get('a')).toEqual([{ code: 'KeyA', shift: false, altgr: false }]);
    expect(map.chars.get('A')).toEqual([{ code: 'KeyA', shift: true, altgr: false }]);
    expect(map.chars.get('€')).toEqual([{ code: 'KeyE', shift: false, altgr: true }]);
    expect(map.chars.get('\u2212')).toEqual([{ code: 'Minus', shift: false, altgr: true }]);
    expect(map.chars.get('+')).toEqual([{ code: 'Equal', shift: true, altgr: false }]);
    expect(map.chars.get('\u2500')).toEqual([{ code: 'KeyD', shift: false, altgr: false }]);
  });

  it('adds the upper case of addupper lines on the Shift level', () => {
    expect(map.chars.get('B')).toEqual([{ code: 'KeyB', shift: true, altgr: false }]);
    expect(map.chars.get('\u0410')).toEqual([{ code: 'KeyF', shift: true, altgr: true }]);
  });

  it('skips ctrl, numlock and inhibit lines and keys that type no character', () => {
    expect(map.chars.has('ß')).toBe(false);
    expect(map.chars.has('1')).toBe(false);
    expect(map.keys.has('NumpadAdd')).toBe(false);
    expect(map.keys.has('Enter')).toBe(false);
    expect(map.keys.has('NumpadEnter')).toBe(false);
  });

  it('records dead keys by the mark they add', () => {
    const entry = map.deadKeys.get('\u0302');
    expect(entry?.dead.keysym).toBe('dead_circumflex');
    expect(entry?.strokes).toEqual([{ code: 'Digit6', shift: true, altgr: true }]);
  });

  it('lets a later line for the same key and level replace an earlier one', () => {
    const sl = parseKeymap('x', 'a 0x15\nb 0x15\nB 0x15 shift\n', KEYSYMS);
    expect(sl.keys.get('KeyY')?.[0]).toEqual({ kind: 'char', char: 'b' });
    expect(sl.chars.has('a')).toBe(false);
  });

  it('orders the ways to type a character by modifiers, the ISO key last', () => {
    expect(map.chars.get('<')).toEqual([
      { code: 'Comma', shift: true, altgr: false },
      { code: 'IntlBackslash', shift: false, altgr: false },
    ]);
  });

  it("restores the standard variant's dead keys in keymaps generated from nodeadkeys", () => {
    const header = '#    layout  : de\n#    variant : nodeadkeys\n';
    const body = 'asciicircum 0x29\nacute 0x0d\nasciicircum 0x28 altgr\na 0x1e\n';
    const de = parseKeymap('de', header + body, KEYSYMS);
    expect(de.keys.get('Backquote')?.[0]).toMatchObject({ dead: { keysym: 'dead_circumflex' } });
    expect(de.keys.get('Equal')?.[0]).toMatchObject({ dead: { keysym: 'dead_acute' } });
    expect(de.keys.get('Quote')?.[2]).toMatchObject({ dead: { keysym: 'dead_circumflex' } });
    expect(de.chars.has('^')).toBe(false);
    const plain = parseKeymap('x', '#    layout  : de\n' + body, KEYSYMS);
    expect(plain.chars.get('^')?.[0]).toEqual({ code: 'Backquote', shift: false, altgr: false });
  });
});

describe('textToKeyEvents', () => {
  it('holds Shift across consecutive characters and releases it at the end', () => {
    const r = textToKeyEvents('ABa', map);
    expect(r.events).toEqual([
      down('ShiftLeft'),
      ...tap('KeyA'),
      ...tap('KeyB'),
      up('ShiftLeft'),
      ...tap('KeyA'),
    ]);
    expect(r.typed).toBe(3);
    expect(textToKeyEvents('A', map).events).toEqual([
      down('ShiftLeft'),
      ...tap('KeyA'),
      up('ShiftLeft'),
    ]);
  });

  it('switches between Shift and AltGr, releasing before pressing', () => {
    expect(textToKeyEvents('E€@', map).events).toEqual([
      down('ShiftLeft'),
      ...tap('KeyE'),
      up('ShiftLeft'),
      down('AltRight'),
      ...tap('KeyE'),
      ...tap('KeyQ'),
      up('AltRight'),
    ]);
  });

  it('types Enter and Tab without modifiers, and \\r\\n as one Enter', () => {
    const r = textToKeyEvents('A\r\nA\tb\rb', map);
    expect(r.events).toEqual([
      down('ShiftLeft'),
      ...tap('KeyA'),
      up('ShiftLeft'),
      ...tap('Enter'),
      down('ShiftLeft'),
      ...tap('KeyA'),
      up('ShiftLeft'),
      ...tap('Tab'),
      ...tap('KeyB'),
      ...tap('Enter'),
      ...tap('KeyB'),
    ]);
    expect(r.typed).toBe(7);
  });

  it('types an accented letter as dead key then base, with the modifiers each needs', () => {
    expect(textToKeyEvents('ê', map).events).toEqual([
      down('ShiftLeft'),
      down('AltRight'),
      ...tap('Digit6'),
      up('ShiftLeft'),
      up('AltRight'),
      ...tap('KeyE'),
    ]);
    expect(textToKeyEvents('Ê', map).events).toEqual([
      down('ShiftLeft'),
      down('AltRight'),
      ...tap('Digit6'),
      up('AltRight'),
      ...tap('KeyE'),
      up('ShiftLeft'),
    ]);
  });

  it('types a decomposed letter (e + U+0302) as the composed one', () => {
    const r = textToKeyEvents('e\u0302', map);
    expect(r.events).toEqual(textToKeyEvents('ê', map).events);
    expect(r).toMatchObject({ typed: 1, unmapped: [] });
  });

  it('types a lone accent that only exists as a dead key as dead key + Space', () => {
    expect(textToKeyEvents('^', map).events).toEqual([
      down('ShiftLeft'),
      down('AltRight'),
      ...tap('Digit6'),
      up('ShiftLeft'),
      up('AltRight'),
      ...tap('Space'),
    ]);
  });

  it('types typographic quotes, en dash and no-break space as their plain forms', () => {
    const r = textToKeyEvents('\u2018a\u2019 \u201ca\u201d\u2013\u00a0', map);
    expect(keyEventsToText(r.events, map)).toBe('\'a\' "a"- ');
    expect(r).toMatchObject({ typed: 9, unmapped: [] });
  });

  it('reports what the layout cannot type once each, in order, and skips it', () => {
    const r = textToKeyEvents('a\u0007ß漢aß\u0000', map);
    expect(r.unmapped).toEqual(['\u0007', 'ß', '漢', '\u0000']);
    expect(r.typed).toBe(2);
    expect(r.events).toEqual([...tap('KeyA'), ...tap('KeyA')]);
  });

  it('prefers the ISO key only when no other key types the character', () => {
    expect(textToKeyEvents('<>', map).events).toEqual([
      down('ShiftLeft'),
      ...tap('Comma'),
      ...tap('IntlBackslash'),
      up('ShiftLeft'),
    ]);
  });
});

describe('keyEventsToText', () => {
  it('reads levels from either Shift and AltRight', () => {
    const events = [down('ShiftRight'), ...tap('KeyA'), up('ShiftRight'), down('AltRight')];
    expect(keyEventsToText([...events, ...tap('KeyE'), up('AltRight')], map)).toBe('A€');
  });

  it('composes dead keys with the next character, or gives both when none exists', () => {
    const mods = [down('ShiftLeft'), down('AltRight')];
    const dead = [...mods, ...tap('Digit6'), up('ShiftLeft'), up('AltRight')];
    expect(keyEventsToText([...dead, ...tap('KeyA')], map)).toBe('â');
    expect(keyEventsToText([...dead, ...tap('KeyB')], map)).toBe('^b');
    expect(keyEventsToText([...dead, ...tap('Space')], map)).toBe('^');
    expect(keyEventsToText([...mods, ...tap('Digit6'), ...tap('Digit6')], map)).toBe('^');
  });

  it('types nothing for shortcuts', () => {
    expect(keyEventsToText([down('ControlLeft'), ...tap('KeyA'), up('ControlLeft')], map)).toBe('');
  });
});

describe('keymapLayout', () => {
  it('labels each level, dead keys with their accent', () => {
    const layout = keymapLayout(map);
    expect(layout.name).toBe('test');
    expect(layout.keys['KeyE']).toEqual({ base: 'e', shift: 'E', altgr: '€', shiftAltgr: null });
    expect(layout.keys['Digit6']).toEqual({
      base: null,
      shift: null,
      altgr: null,
      shiftAltgr: '^',
    });
    expect(layout.keys['NumpadAdd']).toBeUndefined();
  });
});

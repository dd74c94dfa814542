import { describe, expect, it } from 'vitest';
import {
  HID_DELTAS_MAX,
  decodeHidFrame,
  encodeHidEvent,
  encodeKey,
  encodeMouseButton,
  encodeMouseMove,
  encodeMouseRelative,
  encodeMouseWheel,
  parseJsonHidEvent,
  squashDeltas,
  type HidEvent,
} from './codec';
import { KEYS, keyByCode, keyByEvdev, keyByKeymapScancode } from './keys';

const hex = (b: Uint8Array): string =>
  Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
const bytes = (h: string): Uint8Array =>
  Uint8Array.from(h.replace(/ /g, '').match(/../g) ?? [], (x) => parseInt(x, 16));
const ascii = (s: string): string => hex(Uint8Array.from(s, (c) => c.charCodeAt(0)));

describe('HID binary ops, byte for byte (wire-protocol.md 2.8 captures)', () => {
  it('op 1 key: press, press+finish, release', () => {
    expect(hex(encodeKey('ControlLeft', true))).toBe(`0101${ascii('ControlLeft')}`);
    expect(hex(encodeKey('KeyA', true, true))).toBe(`0103${ascii('KeyA')}`);
    expect(hex(encodeKey('KeyA', false))).toBe(`0100${ascii('KeyA')}`);
  });

  it('op 2 mouse button', () => {
    expect(hex(encodeMouseButton('middle', false))).toBe(`0200${ascii('middle')}`);
    expect(hex(encodeMouseButton('left', true))).toBe(`0201${ascii('left')}`);
  });

  it('op 3 move: i16 big-endian, clamped', () => {
    expect(hex(encodeMouseMove(0, 0))).toBe('0300000000');
    expect(hex(encodeMouseMove(-32768, 32767))).toBe('0380007fff');
    expect(hex(encodeMouseMove(-40000, 99999))).toBe('0380007fff');
    expect(hex(encodeMouseMove(258, -2))).toBe('030102fffe');
  });

  it('op 4 relative and op 5 wheel: flags then i8 pairs, clamped to ±127', () => {
    expect(
      hex(
        encodeMouseRelative(
          [
            { x: 1, y: 2 },
            { x: -3, y: -4 },
          ],
          false,
        ),
      ),
    ).toBe('04000102fdfc');
    expect(
      hex(
        encodeMouseWheel(
          [
            { x: 0, y: -1 },
            { x: 0, y: -1 },
          ],
          true,
        ),
      ),
    ).toBe('050100ff00ff');
    expect(hex(encodeMouseRelative([{ x: 500, y: -500 }], true))).toBe('04017f81');
  });

  it('decodes what it encodes, for every kind', () => {
    const events: HidEvent[] = [
      { type: 'key', key: 'AltRight', state: true, finish: false },
      { type: 'key', key: 'KeyZ', state: true, finish: true },
      { type: 'mouse_button', button: 'down', state: true },
      { type: 'mouse_move', x: -12345, y: 32767 },
      { type: 'mouse_relative', deltas: [{ x: 127, y: -127 }], squash: true },
      { type: 'mouse_wheel', deltas: [{ x: 0, y: 5 }], squash: false },
    ];
    for (const e of events) expect(decodeHidFrame(encodeHidEvent(e))).toEqual(e);
  });

  it('decodes kvmd clients evdev forms (flag 0x80, u16 BE code)', () => {
    expect(decodeHidFrame(bytes('0181 001e'))).toEqual({
      type: 'key',
      key: 'KeyA',
      state: true,
      finish: false,
    });
    expect(decodeHidFrame(bytes('0280 0116'))).toEqual({
      type: 'mouse_button',
      button: 'up',
      state: false,
    });
  });

  it('drops what does not parse, silently', () => {
    for (const h of [
      '', // nothing
      '01', // no flags
      '0101', // no name
      `0101${ascii('NotAKey')}`,
      '0181 00', // evdev code short
      '0181 0000 00', // evdev code long
      `0201${ascii('left ')}`,
      '03000000', // move short
      '030000000000', // move long
      '0400010203', // odd tail
      '09',
      `0101${'ff'.repeat(4)}`,
    ]) {
      expect(decodeHidFrame(bytes(h)), h).toBeNull();
    }
  });

  it('clamps i8 -128 to -127 on decode', () => {
    expect(decodeHidFrame(bytes('0400 8080'))).toEqual({
      type: 'mouse_relative',
      deltas: [{ x: -127, y: -127 }],
      squash: false,
    });
  });

  it('reads at most HID_DELTAS_MAX deltas of one event, binary or JSON', () => {
    // A 1 MiB wheel frame: half a million deltas on the wire.
    const frame = new Uint8Array(2 + 1024 * 1024).fill(0x7f);
    frame[0] = 0x05;
    frame[1] = 0;
    const wheel = decodeHidFrame(frame);
    expect(wheel?.type === 'mouse_wheel' && wheel.deltas.length).toBe(HID_DELTAS_MAX);
    const json = parseJsonHidEvent('mouse_relative', {
      delta: Array.from({ length: 100_000 }, () => ({ x: 1, y: 1 })),
    });
    expect(json?.type === 'mouse_relative' && json.deltas.length).toBe(HID_DELTAS_MAX);
  });
});

describe('JSON forms', () => {
  it('parses each event type', () => {
    expect(parseJsonHidEvent('key', { key: 'KeyA', state: true, finish: false })).toEqual({
      type: 'key',
      key: 'KeyA',
      state: true,
      finish: false,
    });
    expect(parseJsonHidEvent('mouse_button', { button: 'left', state: true })).toEqual({
      type: 'mouse_button',
      button: 'left',
      state: true,
    });
    expect(parseJsonHidEvent('mouse_move', { to: { x: -32768, y: 40000 } })).toEqual({
      type: 'mouse_move',
      x: -32768,
      y: 32767,
    });
    expect(
      parseJsonHidEvent('mouse_relative', {
        delta: [
          { x: 5, y: -3 },
          { x: 1, y: 1 },
        ],
        squash: true,
      }),
    ).toEqual({
      type: 'mouse_relative',
      deltas: [
        { x: 5, y: -3 },
        { x: 1, y: 1 },
      ],
      squash: true,
    });
    expect(parseJsonHidEvent('mouse_wheel', { delta: { x: 0, y: -5 }, squash: false })).toEqual({
      type: 'mouse_wheel',
      deltas: [{ x: 0, y: -5 }],
      squash: false,
    });
  });

  it('refuses bad values', () => {
    expect(parseJsonHidEvent('key', { key: 'Nope', state: true })).toBeNull();
    expect(parseJsonHidEvent('key', { key: 'KeyA' })).toBeNull();
    expect(parseJsonHidEvent('mouse_button', { button: 'left', state: 'maybe' })).toBeNull();
    expect(parseJsonHidEvent('mouse_move', { to: { x: 'a', y: 0 } })).toBeNull();
    expect(parseJsonHidEvent('mouse_wheel', { delta: [{ x: 1 }] })).toBeNull();
    expect(parseJsonHidEvent('other', {})).toBeNull();
  });
});

describe('squash', () => {
  it('sums while each axis stays within ±127, then emits the remainder', () => {
    expect(
      squashDeltas([
        { x: 100, y: 0 },
        { x: 20, y: 1 },
        { x: 20, y: 1 },
        { x: -5, y: 0 },
      ]),
    ).toEqual([
      { x: 120, y: 1 },
      { x: 15, y: 1 },
    ]);
    expect(
      squashDeltas([
        { x: 0, y: -127 },
        { x: 0, y: -1 },
      ]),
    ).toEqual([
      { x: 0, y: -127 },
      { x: 0, y: -1 },
    ]);
    expect(squashDeltas([])).toEqual([]);
  });
});

describe('key table', () => {
  it('has unique web names, evdev codes, scan codes and qcodes', () => {
    for (const field of ['code', 'evdev', 'at1', 'qcode'] as const) {
      expect(new Set(KEYS.map((k) => k[field])).size, field).toBe(KEYS.length);
    }
  });

  it('maps keymap-file scan codes, extended ones as 0x80|code', () => {
    expect(keyByKeymapScancode(0x1e)?.code).toBe('KeyA');
    expect(keyByKeymapScancode(0x9c)?.code).toBe('NumpadEnter');
    expect(keyByKeymapScancode(0xb8)?.code).toBe('AltRight');
    expect(keyByEvdev(100)?.code).toBe('AltRight');
    expect(keyByCode('Backquote')?.qcode).toBe('grave_accent');
  });
});

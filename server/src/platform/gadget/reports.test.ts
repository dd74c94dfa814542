import { describe, expect, it } from 'vitest';
import { keyByCode } from '@kvm/protocol';
import {
  ABSOLUTE_MOUSE_FUNCTION,
  KEYBOARD_FUNCTION,
  KeyboardReport,
  RELATIVE_MOUSE_FUNCTION,
  absoluteMouseReport,
  keyboardReleaseReport,
  mouseButtonBits,
  parseLedReport,
  relativeMouseReport,
  toUsbAbsolute,
} from './reports';

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}

/** One data field of a report descriptor, as a host's parser sees it. */
interface Field {
  main: 'input' | 'output';
  page: number;
  /** Listed usages, or the usage range as [min, max]. */
  usages: number[];
  range: [number, number] | null;
  logical: [number, number];
  size: number;
  count: number;
  constant: boolean;
  variable: boolean;
  relative: boolean;
}

/**
 * A tiny short-item walker (HID 1.11 section 6.2.2): enough to check what a host reads from our
 * descriptors without trusting the bytes' comments.
 */
function walk(desc: Uint8Array): { fields: Field[]; depth: number; collections: number[] } {
  const fields: Field[] = [];
  const collections: number[] = [];
  let page = 0;
  let logical: [number, number] = [0, 0];
  let size = 0;
  let count = 0;
  let usages: number[] = [];
  let min: number | null = null;
  let max: number | null = null;
  let depth = 0;
  let i = 0;
  while (i < desc.length) {
    const prefix = desc[i]!;
    const n = [0, 1, 2, 4][prefix & 3]!;
    const type = (prefix >> 2) & 3;
    const tag = prefix >> 4;
    const bytes = desc.subarray(i + 1, i + 1 + n);
    expect(bytes.length).toBe(n);
    let unsigned = 0;
    bytes.forEach((b, k) => (unsigned += b * 2 ** (8 * k)));
    const signed = n > 0 && unsigned >= 2 ** (8 * n - 1) ? unsigned - 2 ** (8 * n) : unsigned;
    i += 1 + n;
    if (type === 0) {
      if (tag === 0x8 || tag === 0x9) {
        fields.push({
          main: tag === 0x8 ? 'input' : 'output',
          page,
          usages,
          range: min !== null && max !== null ? [min, max] : null,
          logical,
          size,
          count,
          constant: (unsigned & 1) !== 0,
          variable: (unsigned & 2) !== 0,
          relative: (unsigned & 4) !== 0,
        });
      } else if (tag === 0xa) {
        collections.push(unsigned);
        depth++;
      } else if (tag === 0xc) {
        depth--;
        expect(depth).toBeGreaterThanOrEqual(0);
      } else {
        throw new Error(`main item ${tag}`);
      }
      usages = [];
      min = max = null;
    } else if (type === 1) {
      if (tag === 0x0) page = unsigned;
      else if (tag === 0x1) logical = [signed, logical[1]];
      else if (tag === 0x2) logical = [logical[0], signed];
      else if (tag === 0x7) size = unsigned;
      else if (tag === 0x9) count = unsigned;
      else throw new Error(`global item ${tag}`);
    } else if (type === 2) {
      if (tag === 0x0) usages.push(unsigned);
      else if (tag === 0x1) min = unsigned;
      else if (tag === 0x2) max = unsigned;
      else throw new Error(`local item ${tag}`);
    } else {
      throw new Error('long or reserved item');
    }
  }
  return { fields, depth, collections };
}

function bytesOf(fields: Field[], main: Field['main']): number {
  return fields.filter((f) => f.main === main).reduce((bits, f) => bits + f.size * f.count, 0) / 8;
}

describe('the keyboard function', () => {
  it('is a boot keyboard with the descriptor checked by hand', () => {
    expect(KEYBOARD_FUNCTION.subclass).toBe(1);
    expect(KEYBOARD_FUNCTION.protocol).toBe(1);
    expect(KEYBOARD_FUNCTION.reportLength).toBe(8);
    expect(hex(KEYBOARD_FUNCTION.descriptor)).toBe(
      [
        '05010906a101',
        '050719e029e715002501750195088102', // modifiers
        '750895018101', // reserved
        '050819012905750195059102750395019101', // LEDs and padding
        '050719002aff00150026ff00750895068100', // keys
        'c0',
      ].join(''),
    );
  });

  it('reads back as modifiers, a reserved byte, 5 LEDs and six keys of 0..255', () => {
    const { fields, depth, collections } = walk(KEYBOARD_FUNCTION.descriptor);
    expect(depth).toBe(0);
    expect(collections).toEqual([1]);
    const [mods, reserved, keys] = fields.filter((f) => f.main === 'input');
    expect(mods).toMatchObject({
      page: 7,
      range: [0xe0, 0xe7],
      logical: [0, 1],
      size: 1,
      count: 8,
    });
    expect(mods!.variable).toBe(true);
    expect(reserved).toMatchObject({ constant: true, size: 8, count: 1 });
    expect(keys).toMatchObject({ page: 7, range: [0, 255], logical: [0, 255], size: 8, count: 6 });
    expect(keys!.variable).toBe(false);
    expect(bytesOf(fields, 'input')).toBe(KEYBOARD_FUNCTION.reportLength);
    const [leds, pad] = fields.filter((f) => f.main === 'output');
    expect(leds).toMatchObject({ page: 8, range: [1, 5], size: 1, count: 5, variable: true });
    expect(pad).toMatchObject({ constant: true, size: 3, count: 1 });
    expect(bytesOf(fields, 'output')).toBe(1);
    // Every key of the table fits the array's logical range.
    expect(keyByCode('F24')!.usb).toBeLessThanOrEqual(keys!.logical[1]);
    expect(keyByCode('NonConvert')!.usb).toBeLessThanOrEqual(keys!.logical[1]);
  });
});

describe('the mouse functions', () => {
  it('absolute: not boot, the descriptor checked by hand', () => {
    expect(ABSOLUTE_MOUSE_FUNCTION).toMatchObject({ subclass: 0, protocol: 0, reportLength: 7 });
    expect(hex(ABSOLUTE_MOUSE_FUNCTION.descriptor)).toBe(
      [
        '05010902a1010901a100',
        '05091901290515002501750195058102750395018101',
        '050109300931150026ff7f751095028102',
        '09381581257f750895018106',
        '050c0a38021581257f750895018106',
        'c0c0',
      ].join(''),
    );
  });

  it('absolute reads back as 5 buttons, X/Y 0..32767 and two signed 8-bit wheels', () => {
    const { fields, depth, collections } = walk(ABSOLUTE_MOUSE_FUNCTION.descriptor);
    expect(depth).toBe(0);
    expect(collections).toEqual([1, 0]);
    const data = fields.filter((f) => !f.constant);
    expect(data).toHaveLength(4);
    expect(data[0]).toMatchObject({ page: 9, range: [1, 5], logical: [0, 1], size: 1, count: 5 });
    expect(data[1]).toMatchObject({ page: 1, usages: [0x30, 0x31], logical: [0, 32767] });
    expect(data[1]).toMatchObject({ size: 16, count: 2, relative: false });
    expect(data[2]).toMatchObject({ page: 1, usages: [0x38], logical: [-127, 127], size: 8 });
    expect(data[2]!.relative).toBe(true);
    expect(data[3]).toMatchObject({ page: 0x0c, usages: [0x238], logical: [-127, 127], size: 8 });
    expect(data[3]!.relative).toBe(true);
    expect(bytesOf(fields, 'input')).toBe(ABSOLUTE_MOUSE_FUNCTION.reportLength);
    expect(bytesOf(fields, 'output')).toBe(0);
  });

  it('relative: a boot mouse, the descriptor checked by hand', () => {
    expect(RELATIVE_MOUSE_FUNCTION).toMatchObject({ subclass: 1, protocol: 2, reportLength: 5 });
    expect(hex(RELATIVE_MOUSE_FUNCTION.descriptor)).toBe(
      [
        '05010902a1010901a100',
        '05091901290515002501750195058102750395018101',
        '05010930093109381581257f750895038106',
        '050c0a38021581257f750895018106',
        'c0c0',
      ].join(''),
    );
  });

  it('relative reads back as the boot layout (buttons, dx, dy) then wheel and pan', () => {
    const { fields, depth } = walk(RELATIVE_MOUSE_FUNCTION.descriptor);
    expect(depth).toBe(0);
    const data = fields.filter((f) => !f.constant);
    expect(data[0]).toMatchObject({ page: 9, range: [1, 5], size: 1, count: 5 });
    expect(data[1]).toMatchObject({ page: 1, usages: [0x30, 0x31, 0x38], logical: [-127, 127] });
    expect(data[1]).toMatchObject({ size: 8, count: 3, relative: true });
    expect(data[2]).toMatchObject({ page: 0x0c, usages: [0x238], size: 8, count: 1 });
    expect(bytesOf(fields, 'input')).toBe(RELATIVE_MOUSE_FUNCTION.reportLength);
  });
});

describe('KeyboardReport', () => {
  const A = 0x04;
  const usage = (code: string): number => keyByCode(code)!.usb;

  it('puts modifiers in byte 0 and keys in press order', () => {
    const r = new KeyboardReport();
    expect(r.press(usage('ShiftLeft'))).toBe(true);
    expect(r.press(usage('KeyH'))).toBe(true);
    expect(r.press(usage('AltRight'))).toBe(true);
    expect(r.press(usage('KeyI'))).toBe(true);
    expect(hex(r.encode())).toBe('42000b0c00000000');
    expect(r.press(usage('KeyH'))).toBe(false);
    expect(r.release(usage('KeyH'))).toBe(true);
    expect(hex(r.encode())).toBe('42000c0000000000');
    expect(r.release(usage('ShiftLeft'))).toBe(true);
    expect(r.release(usage('ShiftLeft'))).toBe(false);
    expect(hex(r.encode())).toBe('40000c0000000000');
  });

  it('holds six keys; a seventh waits for a free slot and its early release cancels it', () => {
    const r = new KeyboardReport();
    for (let k = 0; k < 6; k++) expect(r.press(A + k)).toBe(true);
    expect(hex(r.encode())).toBe('0000040506070809');
    expect(r.press(A + 6)).toBe(false); // waits
    expect(r.press(A + 7)).toBe(false); // waits behind it
    expect(r.has(A + 6)).toBe(true);
    expect(hex(r.encode())).toBe('0000040506070809');
    expect(r.release(A + 1)).toBe(true);
    expect(hex(r.encode())).toBe('000004060708090a');
    expect(r.release(A + 7)).toBe(false); // was still waiting: no report
    expect(r.release(A)).toBe(true);
    expect(hex(r.encode())).toBe('0000060708090a00');
    for (const k of [2, 3, 4, 5, 6]) r.release(A + k);
    expect(r.empty).toBe(true);
    expect(hex(r.encode())).toBe(hex(keyboardReleaseReport()));
    expect(hex(keyboardReleaseReport())).toBe('0000000000000000');
  });

  it('clear() empties everything at once', () => {
    const r = new KeyboardReport();
    for (let k = 0; k < 8; k++) r.press(A + k);
    r.press(0xe0);
    r.clear();
    expect(r.empty).toBe(true);
    expect(r.has(A + 7)).toBe(false);
  });
});

describe('LED output report', () => {
  it('maps bits 0-4 to Num, Caps, Scroll, Compose, Kana', () => {
    expect(parseLedReport(Uint8Array.of(0x02))).toEqual({
      num: false,
      caps: true,
      scroll: false,
      compose: false,
      kana: false,
    });
    expect(parseLedReport(Uint8Array.of(0x1d))).toEqual({
      num: true,
      caps: false,
      scroll: true,
      compose: true,
      kana: true,
    });
    expect(parseLedReport(new Uint8Array(0))).toBeNull();
  });
});

describe('mouse reports', () => {
  it('maps HidDriver absolute -32768..32767 onto 0..32767, the ends exact', () => {
    expect(toUsbAbsolute(-32768)).toBe(0);
    expect(toUsbAbsolute(32767)).toBe(32767);
    expect(toUsbAbsolute(0)).toBe(16384);
    expect(toUsbAbsolute(-40000)).toBe(0);
    expect(toUsbAbsolute(99999)).toBe(32767);
  });

  it('absolute: buttons, X and Y little-endian, wheel and pan signed', () => {
    const bits = mouseButtonBits(['left', 'down']);
    expect(bits).toBe(0x11);
    expect(hex(absoluteMouseReport(bits, 0x1234, 32767, -1, 5))).toBe('113412ff7fff05');
    expect(hex(absoluteMouseReport(0, 0, 0))).toBe('00000000000000');
  });

  it('relative: deltas clamped to -127..127 (never -128)', () => {
    expect(hex(relativeMouseReport(mouseButtonBits(['right', 'middle', 'up']), -1, 1))).toBe(
      '0eff010000',
    );
    expect(hex(relativeMouseReport(0, -500, 500, -128, 127))).toBe('00817f817f');
  });
});

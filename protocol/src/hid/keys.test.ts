import { describe, expect, it } from 'vitest';
import { KEYS, MODIFIER_KEYS, keyByCode, keyByUsb, usbModifierBit } from './keys';

/** The usage of a web key name, failing the test for a name the table lacks. */
function usb(code: string): number {
  const key = keyByCode(code);
  if (!key) throw new Error(`no key ${code}`);
  return key.usb;
}

describe('USB HID usages (Keyboard/Keypad page 0x07)', () => {
  it('gives every key its own usage, inside the page and never a reserved or error code', () => {
    const usages = KEYS.map((k) => k.usb);
    expect(new Set(usages).size).toBe(KEYS.length);
    for (const u of usages) {
      // 0x00 none, 0x01 ErrorRollOver, 0x02 POSTFail, 0x03 ErrorUndefined: never a key.
      expect(u).toBeGreaterThanOrEqual(0x04);
      expect(u).toBeLessThanOrEqual(0xe7);
    }
    for (const k of KEYS) expect(keyByUsb(k.usb)).toBe(k);
  });

  it('runs the letters, digits and function keys in the Usage Tables order', () => {
    const letters = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'.split('');
    letters.forEach((l, i) => expect(usb(`Key${l}`)).toBe(0x04 + i));
    '123456789'.split('').forEach((d, i) => expect(usb(`Digit${d}`)).toBe(0x1e + i));
    expect(usb('Digit0')).toBe(0x27);
    for (let n = 1; n <= 12; n++) expect(usb(`F${n}`)).toBe(0x3a + n - 1);
    for (let n = 13; n <= 24; n++) expect(usb(`F${n}`)).toBe(0x68 + n - 13);
    '123456789'.split('').forEach((d, i) => expect(usb(`Numpad${d}`)).toBe(0x59 + i));
    expect(usb('Numpad0')).toBe(0x62);
  });

  it('spot checks from the Usage Tables', () => {
    const expected: Record<string, number> = {
      Enter: 0x28,
      Escape: 0x29,
      Backspace: 0x2a,
      Tab: 0x2b,
      Space: 0x2c,
      Backquote: 0x35,
      CapsLock: 0x39,
      PrintScreen: 0x46,
      ScrollLock: 0x47,
      Pause: 0x48,
      Insert: 0x49,
      Delete: 0x4c,
      ArrowRight: 0x4f,
      ArrowUp: 0x52,
      NumLock: 0x53,
      NumpadEnter: 0x58,
      IntlBackslash: 0x64,
      ContextMenu: 0x65,
      Power: 0x66,
      NumpadEqual: 0x67,
      AudioVolumeMute: 0x7f,
      AudioVolumeUp: 0x80,
      AudioVolumeDown: 0x81,
      NumpadComma: 0x85,
      IntlRo: 0x87,
      KanaMode: 0x88,
      IntlYen: 0x89,
      Convert: 0x8a,
      NonConvert: 0x8b,
    };
    for (const [code, usage] of Object.entries(expected))
      expect([code, usb(code)]).toEqual([code, usage]);
  });

  it('puts the eight modifiers, and only them, on bits 0-7 of the first byte', () => {
    const bits: Record<string, number> = {
      ControlLeft: 0,
      ShiftLeft: 1,
      AltLeft: 2,
      MetaLeft: 3,
      ControlRight: 4,
      ShiftRight: 5,
      AltRight: 6,
      MetaRight: 7,
    };
    expect(Object.keys(bits).sort()).toEqual([...MODIFIER_KEYS].sort());
    for (const [code, bit] of Object.entries(bits)) expect(usbModifierBit(usb(code))).toBe(bit);
    for (const k of KEYS) {
      if (!MODIFIER_KEYS.has(k.code)) expect([k.code, usbModifierBit(k.usb)]).toEqual([k.code, -1]);
    }
  });
});

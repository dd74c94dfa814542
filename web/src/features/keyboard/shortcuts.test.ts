import { describe, expect, it } from 'vitest';
import { BUILTIN_SHORTCUTS } from '@kvm/protocol/enums';
import { checkUserConfig, type Shortcut } from '@kvm/protocol/settings';
import en from '../../i18n/en.json';
import {
  displayLabel,
  keyLabel,
  shortcutLabel,
  validateShortcut,
  withShortcut,
  withoutShortcut,
} from './shortcuts';

describe('shortcut labels', () => {
  it('reads combinations as a PC keyboard prints them', () => {
    expect(shortcutLabel(['ControlLeft', 'AltLeft', 'Delete'])).toBe('Ctrl+Alt+Del');
    expect(shortcutLabel(['MetaLeft', 'KeyP'])).toBe('Win+P');
    expect(shortcutLabel(['MetaRight', 'KeyL'])).toBe('Win+L');
    expect(shortcutLabel(['ControlRight', 'ShiftRight', 'Escape'])).toBe('Ctrl+Shift+Esc');
    expect(shortcutLabel(['AltLeft', 'F4'])).toBe('Alt+F4');
    expect(shortcutLabel(['ControlLeft', 'Digit1'])).toBe('Ctrl+1');
    expect(shortcutLabel(['ControlLeft', 'Numpad1'])).toBe('Ctrl+Num 1');
  });

  it('gives every built-in the label SPEC 3 names', () => {
    for (const s of BUILTIN_SHORTCUTS) expect(shortcutLabel(s.keys)).toBe(s.label);
  });

  it('falls back to the web name for keys without a short name', () => {
    expect(keyLabel('F13')).toBe('F13');
    expect(keyLabel('KanaMode')).toBe('KanaMode');
  });

  it('shows a saved label when the user gave one', () => {
    expect(displayLabel({ keys: ['ControlLeft', 'KeyC'], label: ' Copy ' })).toBe('Copy');
    expect(displayLabel({ keys: ['ControlLeft', 'KeyC'], label: '  ' })).toBe('Ctrl+C');
    expect(displayLabel({ keys: ['ControlLeft', 'KeyC'] })).toBe('Ctrl+C');
  });
});

describe('validateShortcut (SPEC 5)', () => {
  const none: Shortcut[] = [];

  it('accepts 2 to 4 distinct keys', () => {
    expect(validateShortcut(['ControlLeft', 'KeyC'], none)).toBeNull();
    expect(validateShortcut(['ControlLeft', 'ShiftLeft', 'KeyC'], none)).toBeNull();
    expect(validateShortcut(['ControlLeft', 'ShiftLeft', 'AltLeft', 'KeyC'], none)).toBeNull();
  });

  it('key cannot be empty', () => {
    expect(validateShortcut([], none)?.key).toBe('shortcuts.errors.keyEmpty');
    expect(validateShortcut(['ControlLeft', ''], none)?.key).toBe('shortcuts.errors.keyEmpty');
    expect(validateShortcut([' ', 'KeyC'], none)?.key).toBe('shortcuts.errors.keyEmpty');
    expect(en.shortcuts.errors.keyEmpty).toBe('Key cannot be empty');
  });

  it('refuses keys the device cannot press', () => {
    expect(validateShortcut(['ControlLeft', 'Fn'], none)?.key).toBe('shortcuts.errors.unknownKey');
  });

  it('no duplicate keys', () => {
    expect(validateShortcut(['ControlLeft', 'ControlLeft'], none)?.key).toBe(
      'shortcuts.errors.duplicateKey',
    );
    expect(validateShortcut(['ControlLeft', 'KeyC', 'KeyC'], none)?.key).toBe(
      'shortcuts.errors.duplicateKey',
    );
  });

  it('2 to 4 keys each', () => {
    const one = validateShortcut(['KeyC'], none);
    expect(one).toEqual({ key: 'shortcuts.errors.keyCount', values: { min: 2, max: 4 } });
    const five = validateShortcut(
      ['ControlLeft', 'ShiftLeft', 'AltLeft', 'MetaLeft', 'KeyC'],
      none,
    );
    expect(five?.key).toBe('shortcuts.errors.keyCount');
  });

  it('at most 30 shortcuts', () => {
    const keys = ['F1', 'F2', 'F3', 'F4', 'F5', 'F6', 'F7', 'F8', 'F9', 'F10', 'F11', 'F12'];
    const thirty: Shortcut[] = Array.from({ length: 30 }, (_, i) => ({
      keys: ['ControlLeft', keys[i % 12] ?? 'F1', ...(i >= 12 ? ['ShiftLeft'] : [])],
    }));
    const twentyNine = thirty.slice(0, 29);
    expect(validateShortcut(['AltLeft', 'KeyX'], twentyNine)).toBeNull();
    expect(validateShortcut(['AltLeft', 'KeyX'], thirty)).toEqual({
      key: 'shortcuts.errors.limit',
      values: { max: 30 },
    });
  });

  it('not a duplicate of a saved or built-in shortcut, in any order', () => {
    const saved: Shortcut[] = [{ keys: ['ControlLeft', 'KeyC'] }];
    expect(validateShortcut(['ControlLeft', 'KeyC'], saved)?.key).toBe('shortcuts.errors.exists');
    expect(validateShortcut(['KeyC', 'ControlLeft'], saved)?.key).toBe('shortcuts.errors.exists');
    expect(validateShortcut(['AltLeft', 'ControlLeft', 'Delete'], none)?.key).toBe(
      'shortcuts.errors.exists',
    );
  });

  it('what it accepts, the shared config schema accepts', () => {
    let list: Shortcut[] = [];
    list = withShortcut(list, ['ControlLeft', 'KeyC'], ' copy ');
    list = withShortcut(list, ['ControlLeft', 'KeyV']);
    expect(list).toEqual([
      { keys: ['ControlLeft', 'KeyC'], label: 'copy' },
      { keys: ['ControlLeft', 'KeyV'] },
    ]);
    expect(checkUserConfig({ shortcuts: list })).toEqual([]);
    expect(withoutShortcut(list, 0)).toEqual([{ keys: ['ControlLeft', 'KeyV'] }]);
  });

  it('every message key exists in en.json', () => {
    const errors = en.shortcuts.errors as Record<string, string>;
    for (const key of ['keyEmpty', 'unknownKey', 'duplicateKey', 'keyCount', 'limit', 'exists']) {
      expect(errors[key], key).toBeTruthy();
    }
  });
});

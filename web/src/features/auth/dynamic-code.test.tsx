/**
 * SPEC 3's browser key `dynamic_code`: the 2FA code this browser just had accepted. The server
 * refuses a used code like a wrong one (and counts it towards the lock); the console says so
 * instead of sending it, for as long as the code could be valid (90 s).
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { STORAGE_KEYS } from '@kvm/protocol/constants';
import {
  DYNAMIC_CODE_VALID_MS,
  forgetUsedCode,
  rememberUsedCode,
  wasCodeJustUsed,
} from './dynamic-code';
// Turning 2FA off with a used code: web/src/features/settings/TwoFaSettings.test.tsx

beforeEach(() => localStorage.clear());

describe('dynamic_code', () => {
  it('remembers an accepted code under dynamic_code for 90 s', () => {
    rememberUsedCode('123456', 1_000);
    expect(JSON.parse(localStorage.getItem(STORAGE_KEYS.dynamicCode)!)).toEqual({
      code: '123456',
      at: 1_000,
    });
    expect(wasCodeJustUsed('123456', 1_000 + DYNAMIC_CODE_VALID_MS - 1)).toBe(true);
    expect(wasCodeJustUsed('654321', 2_000)).toBe(false);
    expect(wasCodeJustUsed('123456', 1_000 + DYNAMIC_CODE_VALID_MS)).toBe(false);
    // An expired entry is dropped.
    expect(localStorage.getItem(STORAGE_KEYS.dynamicCode)).toBeNull();
  });

  it('ignores a damaged entry and forgets on request', () => {
    localStorage.setItem(STORAGE_KEYS.dynamicCode, '{not json');
    expect(wasCodeJustUsed('123456')).toBe(false);
    rememberUsedCode('123456');
    forgetUsedCode();
    expect(wasCodeJustUsed('123456')).toBe(false);
  });
});

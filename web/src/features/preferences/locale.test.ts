/**
 * SPEC 1: "the default language is English, and the locale initially reads Chinese": texts in
 * English, dates and numbers formatted zh-CN until a language is chosen, then by that choice.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { STORAGE_KEYS } from '@kvm/protocol/constants';

const WHEN = new Date(2026, 10, 28, 9, 15, 47); // local time

async function freshStore() {
  vi.resetModules();
  return import('./preferences-store');
}

beforeEach(() => localStorage.clear());
afterEach(() => localStorage.clear());

describe('language and locale', () => {
  it('starts with English texts and the Chinese locale when nothing was chosen', async () => {
    const { usePreferences, formatDateTime } = await freshStore();
    expect(usePreferences.getState().language).toBe('en');
    expect(usePreferences.getState().formatLocale).toBe('zh-CN');
    expect(formatDateTime(WHEN)).toBe(WHEN.toLocaleString('zh-CN'));
    expect(formatDateTime(WHEN)).toMatch(/^2026\/11\/28 09:15:47$/);
    expect(document.documentElement.lang).toBe('en');
  });

  it('follows the language once one is chosen', async () => {
    const { applyLanguage, usePreferences, formatDateTime } = await freshStore();
    applyLanguage('en');
    expect(usePreferences.getState().formatLocale).toBe('en-US');
    expect(formatDateTime(WHEN)).toBe(WHEN.toLocaleString('en-US'));
    expect(formatDateTime(WHEN)).toMatch(/^11\/28\/2026, 9:15:47\sAM$/);
    applyLanguage('zh');
    expect(usePreferences.getState().formatLocale).toBe('zh-CN');
    expect(document.documentElement.lang).toBe('zh-CN');
  });

  it('keeps a choice remembered in this browser', async () => {
    localStorage.setItem(STORAGE_KEYS.language, 'en');
    const { usePreferences } = await freshStore();
    expect(usePreferences.getState().formatLocale).toBe('en-US');
  });
});

/**
 * Language and color mode as applied in this browser. Both are remembered in local storage
 * (SPEC 3, prefixed keys) and, once logged in, in the server config (features/settings).
 *
 * SPEC 1: "the default language is English, and the locale initially reads Chinese". Two
 * things: the language of the texts is English until one is chosen; the locale that formats
 * dates, times and numbers starts as zh-CN (year first, 24-hour: `2026/11/28 09:15:47`, the
 * same in every browser) and follows the language from the moment one is chosen or a chosen
 * one is remembered (zh → zh-CN, en → en-US). docs/console.md "Language and locale".
 */
import { create } from 'zustand';
import { STORAGE_KEYS } from '@kvm/protocol/constants';
import { DEFAULT_LANGUAGE, type Language, type ThemeMode } from '@kvm/protocol/enums';
import { i18n, isLanguage } from '../../i18n';
import { readStorage, writeStorage } from '../../lib/storage';

export interface PreferencesState {
  language: Language;
  /** BCP 47 locale of dates and numbers (Intl). */
  formatLocale: string;
  /** SPEC 3: 0 light, 1 dark. */
  themeMode: ThemeMode;
}

export function storedLanguage(): Language {
  const stored = readStorage(STORAGE_KEYS.language);
  return isLanguage(stored) ? stored : DEFAULT_LANGUAGE;
}

/** SPEC 1: the locale before any language was chosen. */
export const INITIAL_FORMAT_LOCALE = 'zh-CN';

export function formatLocaleFor(language: Language): string {
  return language === 'zh' ? 'zh-CN' : 'en-US';
}

/** The remembered choice's locale, or SPEC 1's initial one when nothing was chosen yet. */
export function initialFormatLocale(): string {
  const stored = readStorage(STORAGE_KEYS.language);
  return isLanguage(stored) ? formatLocaleFor(stored) : INITIAL_FORMAT_LOCALE;
}

export function storedThemeMode(): ThemeMode {
  return readStorage(STORAGE_KEYS.themeMode) === '1' ? 1 : 0;
}

export const usePreferences = create<PreferencesState>(() => ({
  language: storedLanguage(),
  formatLocale: initialFormatLocale(),
  themeMode: storedThemeMode(),
}));

/** A date and time in the current format locale (`toLocaleString` of that locale). */
export function formatDateTime(date: Date | number): string {
  return new Date(date).toLocaleString(usePreferences.getState().formatLocale);
}

/** React: re-renders when the format locale changes; returns the formatter. */
export function useDateTimeFormat(): (date: Date | number) => string {
  const locale = usePreferences((s) => s.formatLocale);
  return (date) => new Date(date).toLocaleString(locale);
}

function setDocumentLanguage(language: Language): void {
  if (typeof document !== 'undefined') {
    document.documentElement.lang = language === 'zh' ? 'zh-CN' : 'en';
  }
}

export function applyLanguage(language: Language): void {
  writeStorage(STORAGE_KEYS.language, language);
  setDocumentLanguage(language);
  // Before initI18n (tests, early calls) the stored value is what init will pick up.
  if (i18n.isInitialized && i18n.language !== language) void i18n.changeLanguage(language);
  usePreferences.setState({ language, formatLocale: formatLocaleFor(language) });
}

export function applyThemeMode(themeMode: ThemeMode): void {
  writeStorage(STORAGE_KEYS.themeMode, String(themeMode));
  usePreferences.setState({ themeMode });
}

setDocumentLanguage(usePreferences.getState().language);

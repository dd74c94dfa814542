/**
 * Language and color mode as applied in this browser. Both are remembered in local storage
 * (SPEC 3, prefixed keys) and, once logged in, in the server config (features/settings).
 */
import { create } from 'zustand';
import { STORAGE_KEYS } from '@kvm/protocol/constants';
import { DEFAULT_LANGUAGE, type Language, type ThemeMode } from '@kvm/protocol/enums';
import { i18n, isLanguage } from '../../i18n';
import { readStorage, writeStorage } from '../../lib/storage';

export interface PreferencesState {
  language: Language;
  /** SPEC 3: 0 light, 1 dark. */
  themeMode: ThemeMode;
}

export function storedLanguage(): Language {
  const stored = readStorage(STORAGE_KEYS.language);
  return isLanguage(stored) ? stored : DEFAULT_LANGUAGE;
}

export function storedThemeMode(): ThemeMode {
  return readStorage(STORAGE_KEYS.themeMode) === '1' ? 1 : 0;
}

export const usePreferences = create<PreferencesState>(() => ({
  language: storedLanguage(),
  themeMode: storedThemeMode(),
}));

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
  usePreferences.setState({ language });
}

export function applyThemeMode(themeMode: ThemeMode): void {
  writeStorage(STORAGE_KEYS.themeMode, String(themeMode));
  usePreferences.setState({ themeMode });
}

setDocumentLanguage(usePreferences.getState().language);

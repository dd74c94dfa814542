/**
 * i18next setup. English is the default (SPEC 1); the language is remembered in local storage
 * (STORAGE_KEYS.language) and in the server config (`language`). Both dictionaries are small,
 * so they ship with the entry chunk and switching is instant.
 */
import i18n from 'i18next';
import { initReactI18next } from 'react-i18next';
import { DEFAULT_LANGUAGE, LANGUAGES, type Language } from '@kvm/protocol/enums';
import en from './en.json';
import zh from './zh.json';

export const resources = {
  en: { translation: en },
  zh: { translation: zh },
} as const;

export function isLanguage(value: unknown): value is Language {
  return typeof value === 'string' && (LANGUAGES as readonly string[]).includes(value);
}

export function initI18n(language: Language = DEFAULT_LANGUAGE): typeof i18n {
  if (!i18n.isInitialized) {
    void i18n.use(initReactI18next).init({
      resources,
      lng: language,
      fallbackLng: DEFAULT_LANGUAGE,
      supportedLngs: [...LANGUAGES],
      interpolation: { escapeValue: false }, // React escapes.
      returnNull: false,
      initAsync: false, // Resources are inline: be ready before the first render.
    });
  }
  return i18n;
}

export { i18n };

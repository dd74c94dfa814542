/**
 * The fleet console's texts (en.json is the source of the key type; zh.json has exactly its keys,
 * i18n.test.ts). Its own i18next instance and dictionaries: the device's console (web/src/i18n)
 * carries none of these. The language comes from the browser, then the user's choice (kept in
 * local storage).
 */
import i18next from 'i18next';
import { useSyncExternalStore } from 'react';
import type { Leaves } from '../../i18n/keys';
import en from './en.json';
import zh from './zh.json';

export type FleetLanguage = 'en' | 'zh';
export type FleetKey = Leaves<typeof en>;
export type FleetT = (key: FleetKey, vars?: Record<string, string | number>) => string;

const STORAGE_KEY = 'fleet_language';

function initialLanguage(): FleetLanguage {
  try {
    const kept = localStorage.getItem(STORAGE_KEY);
    if (kept === 'en' || kept === 'zh') return kept;
  } catch {
    // storage blocked: the browser's language
  }
  return typeof navigator !== 'undefined' && /^zh\b/i.test(navigator.language) ? 'zh' : 'en';
}

const instance = i18next.createInstance();
void instance.init({
  resources: { en: { translation: en }, zh: { translation: zh } },
  lng: initialLanguage(),
  fallbackLng: 'en',
  interpolation: { escapeValue: false }, // React escapes.
  returnNull: false,
  initAsync: false,
});

const listeners = new Set<() => void>();

/** Not a React hook: for plain code and tests. */
export const fleetT: FleetT = (key, vars) =>
  (instance.t as unknown as (k: string, v?: object) => string)(key, vars);

export function fleetLanguage(): FleetLanguage {
  return instance.language === 'zh' ? 'zh' : 'en';
}

export function setFleetLanguage(lang: FleetLanguage): void {
  void instance.changeLanguage(lang);
  try {
    localStorage.setItem(STORAGE_KEY, lang);
  } catch {
    // not kept: fine
  }
  document.documentElement.lang = lang;
  for (const fn of listeners) fn();
}

function subscribe(fn: () => void): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

/** The current language; components re-render when it changes. */
export function useFleetLanguage(): FleetLanguage {
  return useSyncExternalStore(subscribe, fleetLanguage);
}

/** t() of the current language. */
export function useT(): FleetT {
  useFleetLanguage();
  return fleetT;
}

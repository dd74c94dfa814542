/**
 * localStorage access that never throws: Safari private mode and sandboxed iframes (the console
 * can run embedded, SPEC 1) throw on access instead of returning null.
 *
 * Under a fleet path (lib/base.ts) every key is the device's own (`/d/<id>/auth_token`): two
 * devices open in two tabs of one fleet origin share no token and no setting.
 */
import { STORAGE_KEYS } from '@kvm/protocol/constants';
import { storageKey } from './base';

function backend(): Storage | null {
  try {
    return globalThis.localStorage ?? null;
  } catch {
    return null;
  }
}

export function readStorage(key: string): string | null {
  try {
    return backend()?.getItem(storageKey(key)) ?? null;
  } catch {
    return null;
  }
}

export function writeStorage(key: string, value: string): void {
  try {
    backend()?.setItem(storageKey(key), value);
  } catch {
    // Quota or access error: the value simply is not remembered.
  }
}

export function removeStorage(key: string): void {
  try {
    backend()?.removeItem(storageKey(key));
  } catch {
    // See writeStorage.
  }
}

/** SPEC 3: the session token lives in local storage under `auth_token`. */
export function getAuthToken(): string | null {
  const token = readStorage(STORAGE_KEYS.authToken);
  return token ? token : null;
}

export function setAuthToken(token: string): void {
  writeStorage(STORAGE_KEYS.authToken, token);
}

export function clearAuthToken(): void {
  removeStorage(STORAGE_KEYS.authToken);
}

/**
 * SPEC 3's browser key `dynamic_code`: the last one-time code (动态码, the 2FA code) this
 * browser had accepted, and when. The server takes a TOTP code once (RFC 6238 5.2: its step and
 * every earlier one are refused afterwards) and answers a reused one like a wrong one, counting
 * it towards the login lock. A code is valid for its 30 s step and one either side, so for 90 s
 * after a success the console knows the same code would be refused: it says so and does not
 * send it (typical: logging in with a code, then turning 2FA off with the code still shown).
 * A used code opens nothing, so keeping it in local storage gives nothing away.
 * GL's console keeps its cloud-binding code under this key; that binding is not built here.
 */
import { STORAGE_KEYS } from '@kvm/protocol/constants';
import { readStorage, removeStorage, writeStorage } from '../../lib/storage';

/** 30 s steps, one step either side accepted: a code can be valid for 90 s at most. */
export const DYNAMIC_CODE_VALID_MS = 90_000;

interface UsedCode {
  code: string;
  at: number;
}

function read(): UsedCode | null {
  const raw = readStorage(STORAGE_KEYS.dynamicCode);
  if (!raw) return null;
  try {
    const value = JSON.parse(raw) as Partial<UsedCode>;
    return typeof value.code === 'string' && typeof value.at === 'number'
      ? { code: value.code, at: value.at }
      : null;
  } catch {
    return null;
  }
}

/** After the server accepted `code` (2FA login, enabling 2FA). */
export function rememberUsedCode(code: string, now: number = Date.now()): void {
  writeStorage(STORAGE_KEYS.dynamicCode, JSON.stringify({ code, at: now }));
}

/** Whether `code` was accepted here so recently that the server would refuse it again. */
export function wasCodeJustUsed(code: string, now: number = Date.now()): boolean {
  const used = read();
  if (!used) return false;
  const age = now - used.at;
  if (age < 0 || age >= DYNAMIC_CODE_VALID_MS) {
    forgetUsedCode();
    return false;
  }
  return used.code === code;
}

/** 2FA turned off: a new secret starts afresh. */
export function forgetUsedCode(): void {
  removeStorage(STORAGE_KEYS.dynamicCode);
}

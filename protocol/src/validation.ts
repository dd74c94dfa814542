/** Validation rules of SPEC.md section 5 shared by the console forms and the server. */
import { ADMIN_PASSWORD_MAX, ADMIN_PASSWORD_MIN } from './constants';

/** kvmd's password alphabet: printable ASCII (wire-protocol.md 1.2). */
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/** SPEC 5: admin password of 5 to 63 printable characters. */
export function isValidAdminPassword(password: string): boolean {
  return (
    password.length >= ADMIN_PASSWORD_MIN &&
    password.length <= ADMIN_PASSWORD_MAX &&
    PRINTABLE_ASCII.test(password)
  );
}

/** SPEC 5: a 2FA code is exactly six digits. */
export function isValidTwoFaCode(code: string): boolean {
  return /^\d{6}$/.test(code);
}

/** wire-protocol 1.2: session tokens are exactly 64 lowercase hex characters. */
export function isValidToken(token: string): boolean {
  return /^[0-9a-f]{64}$/.test(token);
}

/** SPEC 5: a numeric check accepts a finite number. */
export function isFiniteNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

/**
 * A WPA key (IEEE 802.11i): a passphrase of 8 to 63 printable ASCII characters (0x20-0x7e), or
 * the pre-shared key itself as 64 hex digits. Anything else (a line break, a control character,
 * a non-ASCII letter) is a key no radio takes.
 */
export function isValidWpaKey(key: string): boolean {
  if (/^[0-9a-fA-F]{64}$/.test(key)) return true;
  return key.length >= 8 && key.length <= 63 && PRINTABLE_ASCII.test(key);
}

/**
 * Why an SSID cannot be joined, or null. On air an SSID is any 1 to 32 bytes (IEEE 802.11), so
 * `--help` or `"; id; "` are names like others; what cannot be is an empty or longer name, a
 * NUL (no command line or C string carries it) and a lone UTF-16 surrogate (no UTF-8 bytes).
 */
export function wifiSsidProblem(ssid: string): 'empty' | 'long' | 'nul' | 'unpaired' | null {
  if (ssid.length === 0) return 'empty';
  if (ssid.includes('\u0000')) return 'nul';
  if (/[\uD800-\uDFFF]/u.test(ssid)) return 'unpaired';
  let bytes = 0;
  for (const char of ssid) {
    const cp = char.codePointAt(0) ?? 0;
    bytes += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
  }
  return bytes > 32 ? 'long' : null;
}

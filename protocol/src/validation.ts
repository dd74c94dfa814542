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

/** A decimal number as text: sign, digits, fraction, exponent (no hex, no Infinity, no `_`). */
const DECIMAL_TEXT = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

/**
 * SPEC 5's numeric check for text off a form or a query: the finite number `text` spells
 * (surrounding blanks ignored), or null. `Number()` alone would take `''`, `0x1f`, `1e999`
 * (Infinity) or `Infinity` itself; this takes decimals only, and only finite ones.
 */
export function parseFiniteNumber(text: unknown): number | null {
  if (typeof text === 'number') return isFiniteNumber(text) ? text : null;
  if (typeof text !== 'string') return null;
  const trimmed = text.trim();
  if (!DECIMAL_TEXT.test(trimmed)) return null;
  const value = Number(trimmed);
  return isFiniteNumber(value) ? value : null;
}

/**
 * SPEC 5's text pattern: ASCII letters, digits, the space and `. , _ - + @ : / ( ) #`. For free
 * text that reaches a device file or a message someone else reads (USB function names, SCSI
 * vendor, support contact): no quotes, no shell or markup characters, no control characters.
 */
export const PLAIN_TEXT_PATTERN = /^[A-Za-z0-9 .,_\-+@:/()#]*$/;
/** The punctuation PLAIN_TEXT_PATTERN allows, for messages. */
export const PLAIN_TEXT_PUNCTUATION = '. , _ - + @ : / ( ) #';

/** SPEC 5: `text` is a string of PLAIN_TEXT_PATTERN characters, at most `max` long. */
export function isPlainText(text: unknown, max = Number.POSITIVE_INFINITY): text is string {
  return typeof text === 'string' && text.length <= max && PLAIN_TEXT_PATTERN.test(text);
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

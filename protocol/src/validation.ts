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

/**
 * TOTP of RFC 6238 over HOTP of RFC 4226: HMAC-SHA1, 6 digits, 30 s steps, verified within one
 * step either side (kvmd uses pyotp's valid_window=1). Secrets are RFC 4648 base32.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { safeEqual } from './passwords';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
export const TOTP_STEP_S = 30;
export const TOTP_DIGITS = 6;

export function base32Encode(data: Uint8Array): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of data) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(value << (5 - bits)) & 31];
  return out;
}

/** Decodes base32 (case-insensitive, spaces and padding ignored); null when invalid. */
export function base32Decode(text: string): Buffer | null {
  const clean = text.replace(/[\s=]/g, '').toUpperCase();
  if (clean.length === 0) return null;
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const ch of clean) {
    const idx = ALPHABET.indexOf(ch);
    if (idx < 0) return null;
    value = (value << 5) | idx;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

export function hotp(key: Uint8Array, counter: number, digits = TOTP_DIGITS): string {
  const msg = Buffer.alloc(8);
  msg.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac('sha1', key).update(msg).digest();
  const offset = (mac[mac.length - 1] ?? 0) & 0x0f;
  const code = (mac.readUInt32BE(offset) & 0x7fffffff) % 10 ** digits;
  return code.toString().padStart(digits, '0');
}

export function totp(secret: string, nowMs = Date.now()): string {
  const key = base32Decode(secret);
  if (!key) throw new Error('invalid base32 secret');
  return hotp(key, Math.floor(nowMs / 1000 / TOTP_STEP_S));
}

/**
 * The time step whose code `code` is (the current one or one either side), or null. Every
 * candidate is compared, without an early exit.
 */
export function matchTotpStep(secret: string, code: string, nowMs = Date.now()): number | null {
  const key = base32Decode(secret);
  if (!key || !/^\d{6}$/.test(code)) return null;
  const step = Math.floor(nowMs / 1000 / TOTP_STEP_S);
  let matched: number | null = null;
  for (const delta of [-1, 0, 1]) {
    if (safeEqual(hotp(key, step + delta), code)) matched = step + delta;
  }
  return matched;
}

/** True when `code` is the code of the current step or one step either side. */
export function verifyTotp(secret: string, code: string, nowMs = Date.now()): boolean {
  return matchTotpStep(secret, code, nowMs) !== null;
}

/** 160-bit secret, the size RFC 4226 recommends. */
export function newTotpSecret(): string {
  return base32Encode(randomBytes(20));
}

export function totpUri(secret: string, issuer: string, account: string): string {
  const label = `${encodeURIComponent(issuer)}:${encodeURIComponent(account)}`;
  return `otpauth://totp/${label}?secret=${secret}&issuer=${encodeURIComponent(issuer)}&algorithm=SHA1&digits=6&period=30`;
}

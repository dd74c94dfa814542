/**
 * Masking for everything that leaves the device in a log bundle (wire-protocol.md §5.13, as GL
 * does): secret values become `xxxx`, a public IPv4 address loses its last octet and a public
 * IPv6 address everything after its first two groups. Private, loopback and link-local
 * addresses stay: they help support and identify nobody.
 */
import { isIPv4, isIPv6 } from 'node:net';

export const MASK = 'xxxx';

/** Key names whose values are secrets, in `k=v`, `k: v` and JSON `"k":"v"` forms. */
const SECRET_KEYS =
  'auth_token|access_token|refresh_token|token|password|passwd|passphrase|psk|secret|totp_secret|cookie|key|authorization|session|hash';
const SECRET_VALUE = new RegExp(
  `(\\b(?:${SECRET_KEYS})\\b"?\\s*[:=]\\s*)("(?:[^"\\\\]|\\\\.)*"|'[^']*'|[^\\s&,;}\\]"']+)`,
  'gi',
);
/** A hex run as long as a SHA-256 (session hashes, tokens) anywhere in a log line. */
const LONG_HEX = /\b[0-9a-f]{32,}\b/gi;
const IPV4 = /(?<![\d.])(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?![\d.])/g;
const IPV6 = /(?<![\w:.])[0-9a-f]{0,4}(?::[0-9a-f]{0,4}){2,7}(?![\w:])/gi;

export function isPrivateIPv4(ip: string): boolean {
  const [a, b] = ip.split('.').map(Number) as [number, number];
  return (
    a === 10 ||
    a === 127 ||
    a === 0 ||
    a >= 224 ||
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    (a === 169 && b === 254) ||
    (a === 100 && b >= 64 && b <= 127)
  );
}

export function isPrivateIPv6(ip: string): boolean {
  const low = ip.toLowerCase();
  if (low === '::' || low === '::1') return true;
  const first = parseInt(low.split(':')[0] || '0', 16);
  return (
    (first & 0xffc0) === 0xfe80 || // link-local
    (first & 0xfe00) === 0xfc00 || // unique local
    (first & 0xff00) === 0xff00 || // multicast
    low.startsWith('::ffff:') ||
    first === 0
  );
}

export function maskText(text: string): string {
  return text
    .replace(SECRET_VALUE, (_m, key: string, value: string) => {
      const q = value.startsWith('"') ? '"' : value.startsWith("'") ? "'" : '';
      return `${key}${q}${MASK}${q}`;
    })
    .replace(LONG_HEX, MASK)
    .replace(IPV4, (m, a: string, b: string, c: string) =>
      isIPv4(m) && !isPrivateIPv4(m) ? `${a}.${b}.${c}.x` : m,
    )
    .replace(IPV6, (m) => {
      if (!m.includes(':') || !isIPv6(m) || isPrivateIPv6(m)) return m;
      const groups = m.split(':');
      return `${groups[0]}:${groups[1] || '0'}:x:x:x:x:x:x`;
    });
}

/** A JSON-able value with masked strings and secret-named keys' values replaced. */
export function maskValue(value: unknown, key = ''): unknown {
  if (new RegExp(`^(?:${SECRET_KEYS})$`, 'i').test(key) && value != null && value !== '')
    return MASK;
  if (typeof value === 'string') return maskText(value);
  if (Array.isArray(value)) return value.map((v) => maskValue(v));
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, maskValue(v, k)]));
  return value;
}

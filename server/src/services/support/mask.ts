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
  'auth_token|access_token|refresh_token|token|password|passwd|passphrase|psk|secret|totp_secret|cookie|key|authorization|session|hash|authtoken|x-zt1-auth';
const SECRET_VALUE = new RegExp(
  `(\\b(?:${SECRET_KEYS})\\b"?\\s*[:=]\\s*)("(?:[^"\\\\]|\\\\.)*"|'[^']*'|[^\\s&,;}\\]"']+)`,
  'gi',
);
/**
 * The private-network apps' secrets (docs/apps.md, docs/security.md): a WireGuard private or
 * preshared key (`PrivateKey = …` as wg-quick writes it, `private_key=…` as wg's UAPI does, a key
 * after `private key:`), a Tailscale auth key after `--auth-key`/`--authkey`/`TS_AUTHKEY=`, a
 * NetBird setup key after `--setup-key`/`setup_key`/`NB_SETUP_KEY=`. The name may be glued to a
 * prefix (`NB_SETUP_KEY`) or camel-cased (`setupKey`); after `:`/`=` any value goes, after a
 * bare space only one that looks like a key (16+ key characters), so prose keeps its words.
 */
const APP_SECRET_NAME = '(?:private|preshared|pre-shared|setup|auth)[ _-]?keys?';
const APP_SECRET = new RegExp(
  `(${APP_SECRET_NAME}\\b(?:\\\\?["'])?\\s*[:=]\\s*)(?!(?:true|false|null)\\b)(\\\\"[^"\\\\]*\\\\"|"(?:[^"\\\\]|\\\\.)*"|'[^']*'|[^\\s&,;}\\]"'\\\\]+)` +
    `|(${APP_SECRET_NAME}\\b["']?\\s+)([A-Za-z0-9+/=_.-]{16,})`,
  'gi',
);
const APP_SECRET_KEY_NAME = new RegExp(`^(?:\\w*[_-])?${APP_SECRET_NAME}$`, 'i');
/**
 * A Tailscale key (`tskey-auth-…`, `tskey-client-…`, `tskey-api-…`) or a headscale one
 * (`hskey-auth-…`) wherever it is written.
 */
const TAILSCALE_KEY = /\b(?:ts|hs)key-[A-Za-z0-9_-]+/g;
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
    .replace(
      APP_SECRET,
      (_m, key: string | undefined, value: string | undefined, spaced: string | undefined) => {
        if (key === undefined) return `${spaced ?? ''}${MASK}`;
        const q = value?.startsWith('\\"')
          ? '\\"'
          : value?.startsWith('"')
            ? '"'
            : value?.startsWith("'")
              ? "'"
              : '';
        return `${key}${q}${MASK}${q}`;
      },
    )
    .replace(TAILSCALE_KEY, MASK)
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
  // An app's secret by its name (`privateKey`, `preshared_key`, `setupKey`, `NB_SETUP_KEY`);
  // only text is a secret there: `has_preshared_key: true` says nothing.
  if (APP_SECRET_KEY_NAME.test(key) && typeof value === 'string' && value !== '') return MASK;
  if (typeof value === 'string') return maskText(value);
  if (Array.isArray(value)) return value.map((v) => maskValue(v));
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, maskValue(v, k)]));
  return value;
}

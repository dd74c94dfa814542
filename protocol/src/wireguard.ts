/**
 * The WireGuard app (issue 27, docs/apps.md "WireGuard"): a wg-quick configuration the admin
 * pastes, uploads or scans as a QR code brings the device into a WireGuard network. Parsing and
 * checking are here so the console says what is wrong before it sends, and the device checks
 * again (its answer is the one that counts).
 *
 * Secrets: `PrivateKey` and `PresharedKey` go from the browser to the device once and are never
 * sent back, logged or exported; what the device answers is `WgPublicConfig`.
 */
import type { AppState } from './apps';

/** The largest configuration accepted (bytes of UTF-8 text). */
export const WG_CONFIG_MAX_BYTES = 64 * 1024;
export const WG_PEERS_MAX = 64;
/** Addresses and allowed IPs, all peers together. */
export const WG_PREFIXES_MAX = 256;
/** DNS servers and search domains (kept and shown, never applied). */
export const WG_DNS_MAX = 16;

export interface WgEndpoint {
  /** An IPv4 or IPv6 address, or a DNS name (resolved by the device when the tunnel starts). */
  host: string;
  port: number;
}

export interface WgInterface {
  /** Base64 of 32 bytes. */
  privateKey: string;
  /** The device's addresses in the tunnel, CIDR (`10.77.0.2/24`, `fd00::2/64`). */
  addresses: string[];
  listenPort: number | null;
  mtu: number | null;
  /** Kept and shown, never applied: the device's own DNS stays (docs/apps.md). */
  dns: string[];
}

export interface WgPeer {
  publicKey: string;
  presharedKey: string | null;
  /** CIDR, normalised (host bits cleared). */
  allowedIps: string[];
  endpoint: WgEndpoint | null;
  /** Seconds, 1 to 65535; null = off. */
  persistentKeepalive: number | null;
}

export interface WgConfig {
  interface: WgInterface;
  peers: WgPeer[];
}

/** What the device answers about its configuration: no secret in it. */
export interface WgPublicConfig {
  /** Derived by the device from the private key. */
  public_key: string;
  addresses: string[];
  listen_port: number | null;
  mtu: number | null;
  dns: string[];
  peers: {
    public_key: string;
    has_preshared_key: boolean;
    allowed_ips: string[];
    endpoint: string | null;
    persistent_keepalive: number | null;
  }[];
}

/** One peer as the running tunnel reports it (`wg show <if> dump`). */
export interface WgPeerStatus {
  public_key: string;
  endpoint: string | null;
  allowed_ips: string[];
  /** Unix seconds of the latest handshake; 0 = none yet. */
  latest_handshake: number;
  rx_bytes: number;
  tx_bytes: number;
  persistent_keepalive: number | null;
}

/** `GET /api/wireguard/status`. */
export interface WgStatus {
  installed: boolean;
  /** The tunnel is up. */
  running: boolean;
  state: AppState;
  detail: string | null;
  /** A configuration is saved (the app is bound). */
  configured: boolean;
  /** The tunnel's interface name on the device, when running. */
  interface: string | null;
  public_key: string | null;
  addresses: string[];
  listen_port: number | null;
  peers: WgPeerStatus[];
}

/** A configuration that cannot be used; `line` is 1-based, `field` as written in the file. Never carries a key. */
export class WgConfigError extends Error {
  readonly line: number | null;
  readonly field: string | null;
  constructor(message: string, line: number | null = null, field: string | null = null) {
    super(message);
    this.name = 'WgConfigError';
    this.line = line;
    this.field = field;
  }
}

// ---------------------------------------------------------------------------------------------
// Addresses and prefixes (IPv4 and IPv6, as numbers so containment is exact)
// ---------------------------------------------------------------------------------------------

interface Prefix {
  v: 4 | 6;
  /** The address as a number (32 or 128 bits). */
  n: bigint;
  len: number;
}

const V4_BITS = 32;
const V6_BITS = 128;
const bitsOf = (v: 4 | 6): number => (v === 4 ? V4_BITS : V6_BITS);

function parseV4(s: string): bigint | null {
  const parts = s.split('.');
  if (parts.length !== 4) return null;
  let n = 0n;
  for (const p of parts) {
    if (!/^(?:0|[1-9]\d{0,2})$/.test(p)) return null;
    const x = Number(p);
    if (x > 255) return null;
    n = (n << 8n) | BigInt(x);
  }
  return n;
}

function parseV6(s: string): bigint | null {
  if (s.length > 45 || !/^[0-9A-Fa-f:.]+$/.test(s)) return null;
  let text = s;
  let low4: bigint | null = null;
  if (s.includes('.')) {
    const at = s.lastIndexOf(':');
    if (at < 0) return null;
    low4 = parseV4(s.slice(at + 1));
    if (low4 === null) return null;
    text = `${s.slice(0, at + 1)}0:0`;
    if (text.endsWith(':::0:0')) return null;
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const head = halves[0] ? halves[0].split(':') : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(':') : [];
  if (halves.length === 1 && head.length !== 8) return null;
  if (halves.length === 2 && head.length + tail.length > 7) return null;
  const groups = [...head, ...new Array<string>(8 - head.length - tail.length).fill('0'), ...tail];
  let n = 0n;
  for (const g of groups) {
    if (!/^[0-9A-Fa-f]{1,4}$/.test(g)) return null;
    n = (n << 16n) | BigInt(parseInt(g, 16));
  }
  if (low4 !== null) n = (n & ~0xffffffffn) | low4;
  return n;
}

function parseIp(s: string): { v: 4 | 6; n: bigint } | null {
  const v4 = parseV4(s);
  if (v4 !== null) return { v: 4, n: v4 };
  const v6 = s.includes(':') ? parseV6(s) : null;
  return v6 === null ? null : { v: 6, n: v6 };
}

function formatIp(v: 4 | 6, n: bigint): string {
  if (v === 4) return [24n, 16n, 8n, 0n].map((s) => String((n >> s) & 0xffn)).join('.');
  const groups: number[] = [];
  for (let i = 7; i >= 0; i--) groups.push(Number((n >> BigInt(i * 16)) & 0xffffn));
  // RFC 5952: the longest run (two or more) of zero groups, the first one on a tie, becomes `::`.
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best < 0) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
}

/** `a.b.c.d[/len]` or an IPv6 address `[/len]`; a bare address is a host prefix (/32, /128). */
function parsePrefix(s: string): Prefix | null {
  const slash = s.indexOf('/');
  const ip = parseIp(slash < 0 ? s : s.slice(0, slash));
  if (!ip) return null;
  let len = bitsOf(ip.v);
  if (slash >= 0) {
    const l = s.slice(slash + 1);
    if (!/^(?:0|[1-9]\d{0,2})$/.test(l) || Number(l) > len) return null;
    len = Number(l);
  }
  return { v: ip.v, n: ip.n, len };
}

function maskOf(v: 4 | 6, len: number): bigint {
  const bits = BigInt(bitsOf(v));
  const all = (1n << bits) - 1n;
  return (all >> BigInt(len)) ^ all;
}

function networkOf(p: Prefix): Prefix {
  return { v: p.v, n: p.n & maskOf(p.v, p.len), len: p.len };
}

function formatPrefix(p: Prefix): string {
  return `${formatIp(p.v, p.n)}/${p.len}`;
}

/** `outer` contains every address of `inner` (same family). */
function contains(outer: Prefix, inner: Prefix): boolean {
  if (outer.v !== inner.v || outer.len > inner.len) return false;
  const m = maskOf(outer.v, outer.len);
  return (outer.n & m) === (inner.n & m);
}

/** A prefix written canonically with its host bits cleared (`10.0.0.7/24` -> `10.0.0.0/24`); null if not a prefix. */
export function normaliseWgPrefix(text: string): string | null {
  const p = parsePrefix(text.trim());
  return p ? formatPrefix(networkOf(p)) : null;
}

/** `ip` (an address) is inside one of `prefixes` (CIDR strings; unreadable ones are skipped). */
export function wgRoutesCover(prefixes: readonly string[], ip: string): boolean {
  const addr = parsePrefix(ip.trim());
  if (!addr) return false;
  return prefixes.some((r) => {
    const p = parsePrefix(r);
    return p !== null && contains(p, { ...addr, len: bitsOf(addr.v) });
  });
}

// ---------------------------------------------------------------------------------------------
// Keys, endpoints, numbers
// ---------------------------------------------------------------------------------------------

/** Base64 of exactly 32 bytes, as wg(8) writes it: 43 characters, the last one's two spare bits zero, then `=`. */
const KEY_RE = /^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/;
const ZERO_KEY = `${'A'.repeat(43)}=`;

/** A WireGuard key (base64 of 32 bytes, not all zero). */
export function isWgKey(value: string): boolean {
  return KEY_RE.test(value) && value !== ZERO_KEY;
}

const LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?';
const DNS_NAME_RE = new RegExp(`^(?=.{1,253}\\.?$)${LABEL}(?:\\.${LABEL})*\\.?$`);

/** An endpoint as wg(8) writes it: `host:port`, `[v6]:port`. */
export function wgEndpointString(ep: WgEndpoint): string {
  return ep.host.includes(':') ? `[${ep.host}]:${ep.port}` : `${ep.host}:${ep.port}`;
}

// ---------------------------------------------------------------------------------------------
// The public key of a private key (X25519, RFC 7748), so a configuration can be checked and its
// public key shown before it is sent. Plain BigInt arithmetic: not constant-time, which is fine
// for deriving a key once on the machine that holds it, not for a handshake.
// ---------------------------------------------------------------------------------------------

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

function keyBytes(key: string): Uint8Array {
  const out = new Uint8Array(32);
  let acc = 0;
  let bits = 0;
  let o = 0;
  for (const ch of key.slice(0, 43)) {
    acc = (acc << 6) | B64.indexOf(ch);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (acc >> bits) & 0xff;
    }
  }
  return out;
}

function keyText(bytes: Uint8Array): string {
  let out = '';
  for (let i = 0; i < bytes.length; i += 3) {
    const n = ((bytes[i] ?? 0) << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    const left = bytes.length - i;
    out += B64[(n >> 18) & 63]! + B64[(n >> 12) & 63]!;
    out += left > 1 ? B64[(n >> 6) & 63]! : '=';
    out += left > 2 ? B64[n & 63]! : '=';
  }
  return out;
}

const P25519 = 2n ** 255n - 19n;

function modP(a: bigint): bigint {
  const r = a % P25519;
  return r >= 0n ? r : r + P25519;
}

function powP(base: bigint, exp: bigint): bigint {
  let r = 1n;
  let b = modP(base);
  for (let e = exp; e > 0n; e >>= 1n) {
    if (e & 1n) r = (r * b) % P25519;
    b = (b * b) % P25519;
  }
  return r;
}

/** X25519(scalar, 9): the Montgomery ladder of RFC 7748 section 5. */
function x25519Base(scalarBytes: Uint8Array): Uint8Array {
  const k = Uint8Array.from(scalarBytes);
  k[0]! &= 248;
  k[31]! &= 127;
  k[31]! |= 64;
  let scalar = 0n;
  for (let i = 31; i >= 0; i--) scalar = (scalar << 8n) | BigInt(k[i]!);
  const x1 = 9n;
  let [x2, z2, x3, z3] = [1n, 0n, x1, 1n];
  let swap = 0n;
  for (let t = 254n; t >= 0n; t--) {
    const kt = (scalar >> t) & 1n;
    if (swap ^ kt) [x2, x3, z2, z3] = [x3, x2, z3, z2];
    swap = kt;
    const a = x2 + z2;
    const aa = (a * a) % P25519;
    const b = x2 - z2;
    const bb = modP(b * b);
    const e = modP(aa - bb);
    const c = x3 + z3;
    const d = x3 - z3;
    const da = modP(d * a);
    const cb = modP(c * b);
    x3 = modP((da + cb) ** 2n);
    z3 = modP(x1 * modP((da - cb) ** 2n));
    x2 = (aa * bb) % P25519;
    z2 = modP(e * (aa + 121665n * e));
  }
  if (swap) [x2, z2] = [x3, z3];
  let u = modP(x2 * powP(z2, P25519 - 2n));
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) {
    out[i] = Number(u & 0xffn);
    u >>= 8n;
  }
  return out;
}

/** The public key of a WireGuard private key (what `wg pubkey` prints); null if `privateKey` is not a key. */
export function wgPublicKey(privateKey: string): string | null {
  if (!isWgKey(privateKey)) return null;
  return keyText(x25519Base(keyBytes(privateKey)));
}

// ---------------------------------------------------------------------------------------------
// wg-quick(8) parsing
// ---------------------------------------------------------------------------------------------

/** The wg-quick keys that run commands or touch the device's own routing: never accepted. */
const REFUSED_KEYS: Readonly<Record<string, string>> = {
  preup: 'the device never runs commands from a configuration',
  postup: 'the device never runs commands from a configuration',
  predown: 'the device never runs commands from a configuration',
  postdown: 'the device never runs commands from a configuration',
  saveconfig: 'the device keeps the configuration as you gave it and never rewrites it',
  table: 'the device sets the tunnel routes itself so its local network stays reachable',
  fwmark: 'the device sets the tunnel routes itself so its local network stays reachable',
};

const INTERFACE_KEYS: Readonly<Record<string, string>> = {
  privatekey: 'PrivateKey',
  address: 'Address',
  listenport: 'ListenPort',
  mtu: 'MTU',
  dns: 'DNS',
};
const PEER_KEYS: Readonly<Record<string, string>> = {
  publickey: 'PublicKey',
  presharedkey: 'PresharedKey',
  allowedips: 'AllowedIPs',
  endpoint: 'Endpoint',
  persistentkeepalive: 'PersistentKeepalive',
};

/** C0 controls other than tab, DEL and C1 controls: a pasted configuration never has them. */
// eslint-disable-next-line no-control-regex
const CONTROL_RE = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/;

function utf8Length(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 4;
        i++;
      } else n += 3;
    } else n += 3;
  }
  return n;
}

/**
 * A key name as written, only when it cannot be a secret (letters, short): an error may name it.
 * A pasted key or a line of garbage before `=` is never echoed.
 */
function safeName(name: string): string | null {
  return /^[A-Za-z]{1,20}$/.test(name) ? name : null;
}

function splitList(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

interface Section {
  kind: 'interface' | 'peer';
  line: number;
  seen: Map<string, number>;
}

/**
 * Parses a wg-quick(8) configuration: `[Interface]` (PrivateKey, Address, ListenPort, MTU, DNS)
 * and one or more `[Peer]` (PublicKey, PresharedKey, AllowedIPs, Endpoint, PersistentKeepalive).
 * Keys and section names are case-insensitive; `#` starts a comment; blank lines, CRLF and a
 * UTF-8 BOM are fine; Address, AllowedIPs and DNS take comma lists and may repeat.
 *
 * Throws WgConfigError with the 1-based line and the field; its message never quotes a key or
 * the raw line. Refused: PreUp/PostUp/PreDown/PostDown/SaveConfig/Table/FwMark, unknown keys,
 * keys outside a section, zero or several [Interface], no [Peer], a key given twice where one
 * value makes sense, duplicate peers, keys that are not base64 of 32 bytes, ports outside
 * 1-65535, MTU outside 1280-9000, keepalive outside 0-65535 (`off` and 0 mean off), bad
 * prefixes, an AllowedIP given to two peers, control characters, and more than
 * WG_CONFIG_MAX_BYTES / WG_PEERS_MAX / WG_PREFIXES_MAX.
 *
 * AllowedIPs come back normalised (host bits cleared, IPv6 compressed, duplicates dropped);
 * Address keeps its host bits (a bare address gets /32 or /128).
 */
export function parseWgQuick(text: string): WgConfig {
  if (typeof text !== 'string') throw new WgConfigError('the configuration is not text');
  const bytes = utf8Length(text);
  if (bytes > WG_CONFIG_MAX_BYTES)
    throw new WgConfigError(
      `the configuration is ${bytes} bytes; at most ${WG_CONFIG_MAX_BYTES} are accepted`,
    );
  const body = text.startsWith('\uFEFF') ? text.slice(1) : text;
  const lines = body.split('\n');

  let iface: (WgInterface & { line: number; hasKey: boolean }) | null = null;
  const peers: (WgPeer & { line: number; hasKey: boolean; keyLine: number })[] = [];
  const peerKeyLine = new Map<string, number>();
  const allowedLine = new Map<string, number>();
  let prefixes = 0;
  let section: Section | null = null;

  const fail = (msg: string, line: number | null, field: string | null = null): never => {
    throw new WgConfigError(line === null ? msg : `line ${line}: ${msg}`, line, field);
  };
  const countPrefix = (line: number, field: string): void => {
    prefixes += 1;
    if (prefixes > WG_PREFIXES_MAX)
      fail(
        `more than ${WG_PREFIXES_MAX} addresses and allowed IPs in all (the device's limit)`,
        line,
        field,
      );
  };
  const port = (value: string, line: number, field: string): number => {
    const n = /^\d{1,5}$/.test(value) ? Number(value) : NaN;
    if (!(n >= 1 && n <= 65535))
      fail(`${field} must be a port number from 1 to 65535`, line, field);
    return n;
  };

  for (let i = 0; i < lines.length; i++) {
    const no = i + 1;
    let raw = lines[i] as string;
    if (raw.endsWith('\r')) raw = raw.slice(0, -1);
    if (CONTROL_RE.test(raw)) fail('contains a control character', no);
    const hash = raw.indexOf('#');
    const line = (hash < 0 ? raw : raw.slice(0, hash)).trim();
    if (line === '') continue;

    if (line.startsWith('[')) {
      const m = /^\[\s*([A-Za-z]+)\s*\]$/.exec(line);
      const name = m?.[1]?.toLowerCase();
      if (name === 'interface') {
        if (iface) fail(`a second [Interface] section (the first is on line ${iface.line})`, no);
        iface = {
          line: no,
          hasKey: false,
          privateKey: '',
          addresses: [],
          listenPort: null,
          mtu: null,
          dns: [],
        };
        section = { kind: 'interface', line: no, seen: new Map() };
      } else if (name === 'peer') {
        if (peers.length >= WG_PEERS_MAX)
          fail(`more than ${WG_PEERS_MAX} peers (the device's limit)`, no);
        peers.push({
          line: no,
          hasKey: false,
          keyLine: no,
          publicKey: '',
          presharedKey: null,
          allowedIps: [],
          endpoint: null,
          persistentKeepalive: null,
        });
        section = { kind: 'peer', line: no, seen: new Map() };
      } else {
        const shown = m?.[1] && safeName(m[1]);
        fail(
          shown
            ? `unknown section [${shown}]: only [Interface] and [Peer] are accepted`
            : 'not a section header: only [Interface] and [Peer] are accepted',
          no,
        );
      }
      continue;
    }

    const eq = line.indexOf('=');
    if (eq < 0) fail('is not `Key = value` (nor an [Interface] or [Peer] header)', no);
    const written = line.slice(0, eq).trim();
    const value = line.slice(eq + 1).trim();
    const lower = written.toLowerCase();
    const shown = safeName(written);
    const refused = REFUSED_KEYS[lower];
    if (refused) fail(`${shown ?? 'this key'} is not accepted: ${refused}`, no, shown);
    if (!section) {
      fail(`${shown ?? 'a key'} before any [Interface] or [Peer] section`, no, shown);
      continue;
    }
    const keys = section.kind === 'interface' ? INTERFACE_KEYS : PEER_KEYS;
    const field = keys[lower];
    if (!field) {
      const other = section.kind === 'interface' ? PEER_KEYS[lower] : INTERFACE_KEYS[lower];
      if (other)
        fail(
          `${other} belongs in ${section.kind === 'interface' ? 'a [Peer]' : 'the [Interface]'} section`,
          no,
          other,
        );
      fail(
        shown
          ? `unknown key ${shown} in [${section.kind === 'interface' ? 'Interface' : 'Peer'}]`
          : 'an unknown key',
        no,
        shown,
      );
      continue;
    }
    const lists = field === 'Address' || field === 'DNS' || field === 'AllowedIPs';
    const first = section.seen.get(field);
    if (!lists && first !== undefined)
      fail(`${field} is given twice in this section (first on line ${first})`, no, field);
    section.seen.set(field, no);
    if (value === '' && field !== 'AllowedIPs') fail(`${field} has no value`, no, field);

    if (section.kind === 'interface' && iface) {
      switch (field) {
        case 'PrivateKey':
          if (!isWgKey(value))
            fail(
              'PrivateKey must be a WireGuard key: base64 of 32 bytes (44 characters ending in =)',
              no,
              field,
            );
          iface.privateKey = value;
          iface.hasKey = true;
          break;
        case 'Address': {
          const items = splitList(value);
          items.forEach((item, k) => {
            const p = parsePrefix(item);
            if (!p)
              fail(
                `Address entry ${k + 1} is not an IPv4 or IPv6 address with a prefix (like 10.0.0.2/24 or fd00::2/64)`,
                no,
                field,
              );
            else if (p.len === 0)
              fail(`Address entry ${k + 1} has prefix /0: it would take every route`, no, field);
            else {
              countPrefix(no, field);
              const s = formatPrefix(p);
              if (!iface!.addresses.includes(s)) iface!.addresses.push(s);
            }
          });
          break;
        }
        case 'ListenPort':
          iface.listenPort = port(value, no, field);
          break;
        case 'MTU': {
          const n = /^\d{1,5}$/.test(value) ? Number(value) : NaN;
          if (!(n >= 1280 && n <= 9000))
            fail('MTU must be from 1280 (the IPv6 minimum) to 9000', no, field);
          iface.mtu = n;
          break;
        }
        case 'DNS':
          splitList(value).forEach((item, k) => {
            if (iface!.dns.length >= WG_DNS_MAX)
              fail(`more than ${WG_DNS_MAX} DNS servers and search domains`, no, field);
            const ip = parseIp(item);
            if (ip) iface!.dns.push(formatIp(ip.v, ip.n));
            else if (DNS_NAME_RE.test(item)) iface!.dns.push(item.toLowerCase());
            else fail(`DNS entry ${k + 1} is neither an IP address nor a search domain`, no, field);
          });
          break;
      }
    } else {
      const peer = peers[peers.length - 1]!;
      switch (field) {
        case 'PublicKey': {
          if (!isWgKey(value))
            fail(
              'PublicKey must be a WireGuard key: base64 of 32 bytes (44 characters ending in =)',
              no,
              field,
            );
          const before = peerKeyLine.get(value);
          if (before !== undefined)
            fail(`this peer's PublicKey is the same as the peer's on line ${before}`, no, field);
          peerKeyLine.set(value, no);
          peer.publicKey = value;
          peer.hasKey = true;
          peer.keyLine = no;
          break;
        }
        case 'PresharedKey':
          if (!KEY_RE.test(value))
            fail(
              'PresharedKey must be a WireGuard key: base64 of 32 bytes (44 characters ending in =)',
              no,
              field,
            );
          peer.presharedKey = value;
          break;
        case 'AllowedIPs':
          splitList(value).forEach((item, k) => {
            const p = parsePrefix(item);
            if (!p)
              fail(
                `AllowedIPs entry ${k + 1} is not an IPv4 or IPv6 prefix (like 10.0.0.0/24 or fd00::/64)`,
                no,
                field,
              );
            const s = formatPrefix(networkOf(p!));
            if (peer.allowedIps.includes(s)) return;
            const other = allowedLine.get(s);
            if (other !== undefined)
              fail(`AllowedIPs ${s} is also given to the peer on line ${other}`, no, field);
            countPrefix(no, field);
            allowedLine.set(s, no);
            peer.allowedIps.push(s);
          });
          break;
        case 'Endpoint':
          peer.endpoint = parseEndpoint(value, no);
          break;
        case 'PersistentKeepalive': {
          if (value.toLowerCase() === 'off' || value === '0') {
            peer.persistentKeepalive = null;
            break;
          }
          const n = /^\d{1,5}$/.test(value) ? Number(value) : NaN;
          if (!(n >= 1 && n <= 65535))
            fail('PersistentKeepalive must be off or seconds from 1 to 65535', no, field);
          peer.persistentKeepalive = n;
          break;
        }
      }
    }
  }

  if (!iface) return fail('no [Interface] section', null);
  if (!iface.hasKey) fail('the [Interface] section has no PrivateKey', iface.line, 'PrivateKey');
  if (peers.length === 0) fail('no [Peer] section: the tunnel needs at least one peer', null);
  for (const p of peers)
    if (!p.hasKey) fail('this [Peer] section has no PublicKey', p.line, 'PublicKey');
  const own = wgPublicKey(iface.privateKey);
  for (const p of peers)
    if (p.publicKey === own)
      fail(
        "this peer's PublicKey is the device's own (the one its PrivateKey gives): the [Peer] sections name the other ends",
        p.keyLine,
        'PublicKey',
      );

  return {
    interface: {
      privateKey: iface.privateKey,
      addresses: iface.addresses,
      listenPort: iface.listenPort,
      mtu: iface.mtu,
      dns: iface.dns,
    },
    peers: peers.map((p) => ({
      publicKey: p.publicKey,
      presharedKey: p.presharedKey,
      allowedIps: p.allowedIps,
      endpoint: p.endpoint,
      persistentKeepalive: p.persistentKeepalive,
    })),
  };
}

function parseEndpoint(value: string, line: number): WgEndpoint {
  const bad = (why: string): never => {
    throw new WgConfigError(`line ${line}: Endpoint ${why}`, line, 'Endpoint');
  };
  let host: string;
  let portText: string;
  if (value.startsWith('[')) {
    const m = /^\[([^\]]*)\]:([^:]*)$/.exec(value);
    if (!m) return bad('must be host:port, [IPv6]:port or name:port');
    const v6 = parseV6(m[1]!);
    if (v6 === null) return bad('has brackets but no IPv6 address in them');
    host = formatIp(6, v6);
    portText = m[2]!;
  } else {
    const at = value.lastIndexOf(':');
    if (at < 0) return bad('has no port (host:port)');
    const h = value.slice(0, at);
    portText = value.slice(at + 1);
    if (h.includes(':')) return bad('with an IPv6 address is written in brackets: [fd00::1]:51820');
    if (/^[\d.]+$/.test(h)) {
      if (parseV4(h) === null) return bad('is not a valid IPv4 address');
      host = h;
    } else if (DNS_NAME_RE.test(h)) host = h.toLowerCase();
    else return bad('host is neither an IP address nor a DNS name');
  }
  const n = /^\d{1,5}$/.test(portText) ? Number(portText) : NaN;
  if (!(n >= 1 && n <= 65535)) bad('port must be from 1 to 65535');
  return { host, port: n };
}

// ---------------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------------

function peerLines(p: WgPeer): string[] {
  const out = ['[Peer]', `PublicKey = ${p.publicKey}`];
  if (p.presharedKey) out.push(`PresharedKey = ${p.presharedKey}`);
  if (p.allowedIps.length) out.push(`AllowedIPs = ${p.allowedIps.join(', ')}`);
  if (p.endpoint) out.push(`Endpoint = ${wgEndpointString(p.endpoint)}`);
  if (p.persistentKeepalive !== null) out.push(`PersistentKeepalive = ${p.persistentKeepalive}`);
  return out;
}

/**
 * The configuration as `wg setconf` reads it: only the keys wg(8) accepts (PrivateKey, ListenPort;
 * the peers' keys). Address, MTU and DNS are wg-quick's and the device applies them itself
 * (Address, MTU) or not at all (DNS). Contains the private key: write it to a 0600 file only.
 */
export function renderWgSetconf(cfg: WgConfig): string {
  const out = ['[Interface]', `PrivateKey = ${cfg.interface.privateKey}`];
  if (cfg.interface.listenPort !== null) out.push(`ListenPort = ${cfg.interface.listenPort}`);
  for (const p of cfg.peers) out.push('', ...peerLines(p));
  return `${out.join('\n')}\n`;
}

/** The configuration in wg-quick(8) form; `parseWgQuick(renderWgQuick(c))` deep-equals `c`. */
export function renderWgQuick(cfg: WgConfig): string {
  const i = cfg.interface;
  const out = ['[Interface]', `PrivateKey = ${i.privateKey}`];
  if (i.addresses.length) out.push(`Address = ${i.addresses.join(', ')}`);
  if (i.listenPort !== null) out.push(`ListenPort = ${i.listenPort}`);
  if (i.mtu !== null) out.push(`MTU = ${i.mtu}`);
  if (i.dns.length) out.push(`DNS = ${i.dns.join(', ')}`);
  for (const p of cfg.peers) out.push('', ...peerLines(p));
  return `${out.join('\n')}\n`;
}

/** What the device may answer about a configuration: the keys that are secrets are left out. */
export function wgPublicView(cfg: WgConfig, publicKey: string): WgPublicConfig {
  return {
    public_key: publicKey,
    addresses: [...cfg.interface.addresses],
    listen_port: cfg.interface.listenPort,
    mtu: cfg.interface.mtu,
    dns: [...cfg.interface.dns],
    peers: cfg.peers.map((p) => ({
      public_key: p.publicKey,
      has_preshared_key: p.presharedKey !== null,
      allowed_ips: [...p.allowedIps],
      endpoint: p.endpoint ? wgEndpointString(p.endpoint) : null,
      persistent_keepalive: p.persistentKeepalive,
    })),
  };
}

// ---------------------------------------------------------------------------------------------
// Routes: the device's local network stays untouched
// ---------------------------------------------------------------------------------------------

/** The routes the device adds for a tunnel (planWgRoutes). */
export interface WgRoutePlan {
  /**
   * Prefixes to route through the tunnel interface (`ip route add <p> dev <if>`), normalised and
   * without duplicates, in the order the peers give them. A default route is never among them:
   * 0.0.0.0/0 becomes 0.0.0.0/1 + 128.0.0.0/1 and ::/0 becomes ::/1 + 8000::/1, so the LAN's
   * connected route and its default gateway stay in the table and win for what they cover.
   */
  routes: string[];
  /** A peer allows 0.0.0.0/0 (the IPv4 halves are in `routes`). */
  splitDefault4: boolean;
  /** A peer allows ::/0 (the IPv6 halves are in `routes`). */
  splitDefault6: boolean;
  /**
   * Peer endpoints (IP addresses) that `routes` would swallow: the tunnel's own packets to them
   * must not enter the tunnel, so each needs a host route (/32 or /128) via the device's current
   * default gateway, added before the tunnel routes. Endpoints inside a local prefix are never
   * here (the connected route already wins).
   */
  endpointsNeedingHostRoute: string[];
  /**
   * Peer endpoints given as DNS names: resolve them when the tunnel starts, then give each
   * address the same host route if `wgRoutesCover(plan.routes, address)` and it is not local.
   */
  endpointNames: string[];
}

function parseLocal(localPrefixes: readonly string[]): Prefix[] {
  const out: Prefix[] = [];
  for (const s of localPrefixes) {
    const p = parsePrefix(s.trim());
    if (!p) throw new TypeError(`not a local prefix: ${s}`);
    out.push(networkOf(p));
  }
  return out;
}

/**
 * Why this configuration would cut the device off its local network, or null. `localPrefixes`
 * are the device's connected networks where the tunnel runs (`192.168.8.0/24`, host bits allowed).
 * The rule: a tunnel prefix (a peer's AllowedIPs, or the network of an Address) that is a local
 * network or inside one, i.e. as specific as the LAN's own route or more, would take the LAN's
 * traffic (the console's replies included) into the tunnel: refused. A wider prefix that contains
 * the local network is fine (the longer, local route wins), and a default route is split
 * (planWgRoutes).
 */
export function wgRouteProblem(
  cfg: WgConfig,
  localPrefixes: readonly string[],
): WgConfigError | null {
  const locals = parseLocal(localPrefixes);
  const check = (field: string, shown: string, p: Prefix): WgConfigError | null => {
    const net = networkOf(p);
    if (net.len === 0) return null;
    for (const l of locals)
      if (contains(l, net))
        return new WgConfigError(
          `${field} ${shown} overlaps the device's local network ${formatPrefix(l)}: the console would be cut off locally`,
          null,
          field,
        );
    return null;
  };
  for (const a of cfg.interface.addresses) {
    const p = parsePrefix(a);
    const e = p && check('Address', a, p);
    if (e) return e;
  }
  for (const peer of cfg.peers)
    for (const a of peer.allowedIps) {
      const p = parsePrefix(a);
      const e = p && check('AllowedIPs', a, p);
      if (e) return e;
    }
  return null;
}

const HALVES: Readonly<Record<4 | 6, [string, string]>> = {
  4: ['0.0.0.0/1', '128.0.0.0/1'],
  6: ['::/1', '8000::/1'],
};

/**
 * The routes for this configuration on a device whose connected networks are `localPrefixes`;
 * throws wgRouteProblem's WgConfigError when the tunnel would cut the local network off.
 */
export function planWgRoutes(cfg: WgConfig, localPrefixes: readonly string[]): WgRoutePlan {
  const problem = wgRouteProblem(cfg, localPrefixes);
  if (problem) throw problem;
  const locals = parseLocal(localPrefixes);
  const routes: string[] = [];
  let splitDefault4 = false;
  let splitDefault6 = false;
  const add = (s: string): void => {
    if (!routes.includes(s)) routes.push(s);
  };
  for (const peer of cfg.peers)
    for (const a of peer.allowedIps) {
      const p = parsePrefix(a);
      if (!p) continue;
      if (p.len === 0) {
        if (p.v === 4) splitDefault4 = true;
        else splitDefault6 = true;
        HALVES[p.v].forEach(add);
      } else add(formatPrefix(networkOf(p)));
    }
  const endpointsNeedingHostRoute: string[] = [];
  const endpointNames: string[] = [];
  for (const peer of cfg.peers) {
    const ep = peer.endpoint;
    if (!ep) continue;
    const ip = parseIp(ep.host);
    if (!ip) {
      if (!endpointNames.includes(ep.host)) endpointNames.push(ep.host);
      continue;
    }
    const host: Prefix = { v: ip.v, n: ip.n, len: bitsOf(ip.v) };
    const local = locals.some((l) => contains(l, host));
    const swallowed = routes.some((r) => {
      const p = parsePrefix(r);
      return p !== null && contains(p, host);
    });
    const s = formatIp(ip.v, ip.n);
    if (swallowed && !local && !endpointsNeedingHostRoute.includes(s))
      endpointsNeedingHostRoute.push(s);
  }
  return { routes, splitDefault4, splitDefault6, endpointsNeedingHostRoute, endpointNames };
}

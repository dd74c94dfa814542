/**
 * Where `write_remote` may fetch from. The body of a download can be read back with
 * `/api/msd/read`, so a device that fetched any URL would be a proxy into its own loopback
 * services and its LAN (SSRF with read-back). Refused, always: loopback, unspecified,
 * link-local, multicast, broadcast and reserved ranges, and every address of the device's own
 * interfaces; by default also the private LAN ranges (RFC 1918, CGNAT 100.64/10, IPv6 ULA and
 * site-local), which `msd.remote.allow_lan` opens for a LAN mirror. IPv4 inside IPv6
 * (`::ffff:a.b.c.d`, `::a.b.c.d`, NAT64 `64:ff9b::/96`) is judged as the IPv4 address.
 *
 * The check runs on every hop (redirects included) and on the address that is connected: a
 * host name goes through `guardedLookup`, the `lookup` of the request itself, so the answer
 * that is checked is the answer that is used (no second resolve an attacker's DNS could change).
 *
 * `msd.remote.allow_hosts` names hosts (`host` or `host:port`, as written in the URL) that are
 * fetched from whatever they resolve to: an admin's explicit choice, and how tests reach a
 * loopback server.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { networkInterfaces } from 'node:os';
import { MsdRemoteRefusedError } from './msd-errors';

export interface RemotePolicy {
  /** Private LAN ranges may be fetched from (a LAN mirror). */
  allowLan: boolean;
  /** `host` (any port) or `host:port` entries fetched from whatever they resolve to. */
  allowHosts: readonly string[];
}

export const DEFAULT_REMOTE_POLICY: RemotePolicy = { allowLan: false, allowHosts: [] };

function blockList(v4: [string, number][], v6: [string, number][]): BlockList {
  const list = new BlockList();
  for (const [net, bits] of v4) list.addSubnet(net, bits, 'ipv4');
  for (const [net, bits] of v6) list.addSubnet(net, bits, 'ipv6');
  return list;
}

/** Never fetched from (unless allow-listed by host), with the reason an admin reads. */
const NEVER: [string, BlockList][] = [
  ['loopback', blockList([['127.0.0.0', 8]], [['::1', 128]])],
  ['unspecified', blockList([['0.0.0.0', 8]], [['::', 128]])],
  ['link-local', blockList([['169.254.0.0', 16]], [['fe80::', 10]])],
  ['multicast', blockList([['224.0.0.0', 4]], [['ff00::', 8]])],
  ['reserved or broadcast', blockList([['240.0.0.0', 4]], [])],
];

const LAN = blockList(
  [
    ['10.0.0.0', 8],
    ['172.16.0.0', 12],
    ['192.168.0.0', 16],
    ['100.64.0.0', 10],
  ],
  [
    ['fc00::', 7],
    ['fec0::', 10],
  ],
);

/** The 16 bytes of an IPv6 address (zone id dropped), or null if it is not one. */
function ipv6Bytes(text: string): number[] | null {
  let addr = text.split('%')[0] ?? '';
  if (isIP(addr) !== 6) return null;
  const bytes: number[] = [];
  // a trailing dotted IPv4 becomes two hextets
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(addr);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split('.').map(Number) as [number, number, number, number];
    addr = `${addr.slice(0, -dotted[1]!.length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = addr.includes('::') ? addr.split('::') : [addr, undefined];
  const h = head ? head.split(':') : [];
  const t = tail !== undefined && tail !== '' ? tail.split(':') : [];
  const groups =
    tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  for (const g of groups) {
    const n = parseInt(g, 16);
    bytes.push(n >> 8, n & 0xff);
  }
  return bytes.length === 16 ? bytes : null;
}

/** The IPv4 address an IPv6 address carries (mapped, compatible, NAT64), or null. */
export function embeddedIpv4(address: string): string | null {
  const b = ipv6Bytes(address);
  if (!b) return null;
  const zeros = (from: number, to: number): boolean => b.slice(from, to).every((x) => x === 0);
  const v4 = b.slice(12).join('.');
  if (zeros(0, 10) && b[10] === 0xff && b[11] === 0xff) return v4; // ::ffff:a.b.c.d
  // ::a.b.c.d, but not :: and ::1 (judged as themselves)
  if (zeros(0, 12) && !zeros(12, 15)) return v4;
  const nat64 = [0, 0x64, 0xff, 0x9b];
  if (nat64.every((x, i) => b[i] === x) && zeros(4, 12)) return v4; // 64:ff9b::a.b.c.d
  return null;
}

/** The device's own interface addresses (read each time: DHCP may change them). */
function ownAddresses(): Set<string> {
  const own = new Set<string>();
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) own.add(a.address.split('%')[0]!.toLowerCase());
  }
  return own;
}

/** Why `address` may not be fetched from, or null if it may. */
export function addressRefusal(address: string, policy: RemotePolicy): string | null {
  const plain = address.split('%')[0]!.toLowerCase();
  const v4 = isIP(plain) === 4 ? plain : embeddedIpv4(plain);
  const [addr, type] = v4 !== null ? [v4, 'ipv4' as const] : [plain, 'ipv6' as const];
  if (isIP(addr) === 0) return 'not an IP address';
  for (const [why, list] of NEVER) if (list.check(addr, type)) return why;
  const own = ownAddresses();
  if (own.has(plain) || own.has(addr)) return "one of the device's own addresses";
  if (!policy.allowLan && LAN.check(addr, type)) return 'a private LAN address';
  return null;
}

/** The URL's host without IPv6 brackets, lower case. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
}

function portOf(url: URL): string {
  return url.port || (url.protocol === 'https:' ? '443' : '80');
}

/** Whether `url`'s host (and port) is one of `allowHosts`. */
export function hostAllowed(url: URL, policy: RemotePolicy): boolean {
  const host = hostOf(url);
  const port = portOf(url);
  return policy.allowHosts.some((entry) => {
    const e = entry.trim().toLowerCase();
    const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(e) ?? /^([^:]+)(?::(\d+))?$/.exec(e);
    // a bare IPv6 address (colons, no brackets) names the host, any port
    const [h, p] = m ? [m[1], m[2]] : [e, undefined];
    return h === host && (p === undefined || p === port);
  });
}

function refused(host: string, address: string, why: string): MsdRemoteRefusedError {
  const of = host === address ? address : `${address} (${host})`;
  return new MsdRemoteRefusedError(
    `Refusing to download from ${of}: it is ${why} (see msd.remote in the config)`,
  );
}

/** The refusal of a URL whose host is an IP literal, or null (names are checked on lookup). */
export function literalRefusal(url: URL, policy: RemotePolicy): MsdRemoteRefusedError | null {
  const host = hostOf(url);
  if (hostAllowed(url, policy) || isIP(host) === 0) return null;
  const why = addressRefusal(host, policy);
  return why ? refused(host, host, why) : null;
}

/**
 * A `lookup` for http.request: resolves like the system does, keeps only the addresses the
 * policy allows, and fails with MsdRemoteRefusedError if none is left.
 */
export function guardedLookup(policy: RemotePolicy): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) {
        callback(err, '', 4);
        return;
      }
      let first: string | null = null;
      const ok = addresses.filter((a) => {
        const why = addressRefusal(a.address, policy);
        first ??= why === null ? null : `${a.address}|${why}`;
        return why === null;
      });
      if (ok.length === 0) {
        const [address, why] = (first ?? `${hostname}|not resolved`).split('|') as [string, string];
        callback(refused(hostname, address, why), '', 4);
        return;
      }
      if (options.all) callback(null, ok);
      else callback(null, ok[0]!.address, ok[0]!.family);
    });
  };
}

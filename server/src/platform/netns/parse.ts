/**
 * Pure parsers of what the system says: our lease script's lines, `ip -j` output and
 * resolv.conf. Unit-tested with recorded output (parse.test.ts). Addresses and netmasks are
 * read by protocol/src/network.ts, the one IPv4 module (inet_pton's rule).
 */
import { isIpv4 } from '@kvm/protocol';

export interface Lease {
  ip: string;
  prefix: number;
  /** '' when the server sent no router. */
  router: string;
  dns: string[];
  leaseS: number;
}

export type LeaseEvent =
  | { kind: 'bound'; lease: Lease }
  | { kind: 'deconfig' }
  | { kind: 'leasefail' }
  | { kind: 'nak' }
  | { kind: 'error'; message: string };

const PREFIX = 'kvm-lease ';

/** One line of udhcpc's stdout: a lease event of our script, or null (udhcpc's own chatter). */
export function parseLeaseLine(line: string): LeaseEvent | null {
  if (!line.startsWith(PREFIX)) return null;
  const rest = line.slice(PREFIX.length).trim();
  const [kind = '', ...fields] = rest.split(/\s+/);
  switch (kind) {
    case 'deconfig':
    case 'leasefail':
    case 'nak':
      return { kind };
    case 'error':
      return { kind: 'error', message: rest.slice('error'.length).trim() };
    case 'bound': {
      const f = new Map<string, string>();
      for (const field of fields) {
        const eq = field.indexOf('=');
        if (eq > 0) f.set(field.slice(0, eq), field.slice(eq + 1));
      }
      const ip = f.get('ip') ?? '';
      const prefix = Number(f.get('mask'));
      const router = f.get('router') ?? '';
      const dns = (f.get('dns') ?? '').split(',').filter(isIpv4);
      const leaseS = Number(f.get('lease') ?? 0);
      if (!isIpv4(ip) || !Number.isInteger(prefix) || prefix < 0 || prefix > 32) return null;
      if (router !== '' && !isIpv4(router)) return null;
      return {
        kind: 'bound',
        lease: { ip, prefix, router, dns, leaseS: Number.isFinite(leaseS) ? leaseS : 0 },
      };
    }
    default:
      return null;
  }
}

export interface InterfaceState {
  mac: string;
  link: 'up' | 'down';
  /** The first IPv4 address, or ''. */
  ip: string;
  prefix: number | null;
}

interface IpAddrJson {
  ifname?: string;
  address?: string;
  operstate?: string;
  flags?: string[];
  addr_info?: { family?: string; local?: string; prefixlen?: number }[];
}

/** `ip -j addr show dev X` → the interface's MAC, link and IPv4 address. */
export function parseAddrShow(json: string): InterfaceState {
  const list = JSON.parse(json || '[]') as IpAddrJson[];
  const dev = list[0];
  if (!dev) return { mac: '', link: 'down', ip: '', prefix: null };
  const flags = dev.flags ?? [];
  // Carrier: veth has it when both ends are up (LOWER_UP); operstate says the same.
  const up = flags.includes('LOWER_UP') || dev.operstate === 'UP';
  const inet = (dev.addr_info ?? []).find((a) => a.family === 'inet' && a.local);
  return {
    mac: dev.address ?? '',
    link: up ? 'up' : 'down',
    ip: inet?.local ?? '',
    prefix: inet?.prefixlen ?? null,
  };
}

/** `ip -j route show default` → the default gateway, or ''. */
export function parseDefaultGateway(json: string): string {
  const list = JSON.parse(json || '[]') as { dst?: string; gateway?: string }[];
  return list.find((r) => r.dst === 'default' && r.gateway)?.gateway ?? '';
}

/** The `nameserver` lines of a resolv.conf. */
export function parseResolvConf(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const m = /^\s*nameserver\s+(\S+)/.exec(line);
    if (m?.[1]) out.push(m[1]);
  }
  return out;
}

export function resolvConf(servers: readonly string[]): string {
  return `# Written by the KVM server's netns driver.\n${servers.map((s) => `nameserver ${s}\n`).join('')}`;
}

/** A host name as one RFC 1123 label (what udhcpc sends, `-x hostname:<name>`). */
export function isHostLabel(name: string): boolean {
  return /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/.test(name);
}

/**
 * Why settings cannot reach `ip` or resolv.conf, or null: every address, gateway and name server
 * is a dotted quad, so none can read as an `ip` option or add a line to resolv.conf. The service
 * checks first (network-service.ts); this is the driver not trusting what it is handed.
 */
export function settingsProblem(s: {
  mode: string;
  ip_address?: string;
  netmask?: string;
  gateway?: string;
  dns_servers: readonly string[] | null;
}): string | null {
  if (s.mode !== 'dhcp' && s.mode !== 'static') return `mode must be dhcp or static`;
  for (const dns of s.dns_servers ?? []) {
    if (!isIpv4(dns)) return `dns_servers: not an IPv4 address: ${JSON.stringify(dns)}`;
  }
  if (s.mode === 'dhcp') return null;
  if (!isIpv4(s.ip_address ?? '')) {
    return `ip_address: not an IPv4 address: ${JSON.stringify(s.ip_address)}`;
  }
  if (!isIpv4(s.netmask ?? '')) return `netmask: not a netmask: ${JSON.stringify(s.netmask)}`;
  if (s.gateway && !isIpv4(s.gateway)) {
    return `gateway: not an IPv4 address: ${JSON.stringify(s.gateway)}`;
  }
  return null;
}

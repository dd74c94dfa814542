/**
 * The network routes' arguments (GL §5.13 on the wire, SPEC 5's address rules): the route parses
 * and validates the raw query here and hands NetworkService typed settings. Messages are GL's,
 * each naming its argument; addresses follow protocol/src/network.ts (inet_pton's rule).
 */
import {
  forbiddenAddressReason,
  isValidHostname,
  netmaskToPrefix,
  networkFormErrors,
  parseIpv4,
} from '@kvm/protocol';
import { BadRequestError } from '../../errors';
import type { EthernetSettings } from '../../drivers/network/types';

/** resolv.conf reads at most three name servers (MAXNS). */
export const DNS_SERVERS_MAX = 3;

/** Query values as Fastify hands them over (strings, or arrays for repeated keys). */
export type RawQuery = Record<string, unknown>;

/**
 * What `set_network_config` asks for: the settings to apply, except that an absent
 * `dns_servers` (undefined) keeps the current ones (see `withCurrentDns`).
 */
export type EthernetRequest = Omit<EthernetSettings, 'dns_servers'> & {
  dns_servers: string[] | null | undefined;
};

function queryString(query: RawQuery, name: string): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new BadRequestError(`${name} parameter must be given once`);
  return value;
}

/**
 * GL's `set_network_config` query → the requested settings, with GL's messages (wire-protocol
 * §5.13) and then SPEC 5's forbidden addresses, each naming its argument.
 */
export function parseNetworkQuery(query: RawQuery): EthernetRequest {
  const mode = queryString(query, 'mode')?.trim();
  if (mode !== 'dhcp' && mode !== 'static') {
    throw new BadRequestError("mode parameter is required, must be 'dhcp' or 'static'");
  }
  const dnsText = queryString(query, 'dns_servers');
  let dns: string[] | null | undefined;
  if (dnsText === undefined) dns = undefined;
  else if (dnsText.trim() === '') dns = null;
  else {
    dns = dnsText.split(',').map((s) => s.trim());
    for (const server of dns) {
      const value = parseIpv4(server);
      if (value === null) throw new BadRequestError(`Invalid DNS server address format: ${server}`);
      const reason = forbiddenAddressReason(value);
      if (reason) throw new BadRequestError(`dns_servers cannot be ${server} (${reason} address)`);
    }
    if (dns.length > DNS_SERVERS_MAX) {
      throw new BadRequestError(`dns_servers takes at most ${DNS_SERVERS_MAX} addresses`);
    }
  }
  if (mode === 'dhcp') return { mode, dns_servers: dns };
  const ip = queryString(query, 'ip_address')?.trim();
  const netmask = queryString(query, 'netmask')?.trim();
  const gateway = queryString(query, 'gateway')?.trim();
  if (!ip || !netmask || !gateway) {
    throw new BadRequestError('Static IP mode requires ip_address, netmask and gateway parameters');
  }
  if (parseIpv4(ip) === null) throw new BadRequestError('ip_address format is invalid');
  if (netmaskToPrefix(netmask) === null) throw new BadRequestError('netmask format is invalid');
  if (parseIpv4(gateway) === null) throw new BadRequestError('gateway format is invalid');
  // SPEC 5's rules beyond GL's: forbidden addresses, prefix bounds, gateway inside the subnet.
  // (DNS was checked above: GL allows a static address without name servers.)
  const problem = networkFormErrors({ mode, ip_address: ip, netmask, gateway }).find(
    (e) => e.field !== 'dns_server1' && e.field !== 'dns_server2',
  );
  if (problem) throw new BadRequestError(problem.message);
  return { mode, ip_address: ip, netmask, gateway, dns_servers: dns };
}

/** The settings to apply: an absent `dns_servers` is `current`'s (absent = unchanged). */
export function withCurrentDns(
  request: EthernetRequest,
  current: EthernetSettings,
): EthernetSettings {
  const dns_servers =
    request.dns_servers !== undefined
      ? request.dns_servers
      : current.dns_servers
        ? [...current.dns_servers]
        : null;
  return { ...request, dns_servers };
}

/** `set_hostname`'s `hostname`: an RFC 1123 label. */
export function parseHostname(query: RawQuery): string {
  const name = queryString(query, 'hostname')?.trim();
  if (!name) throw new BadRequestError('hostname parameter is required');
  if (!isValidHostname(name)) {
    throw new BadRequestError(
      'hostname is invalid: 1 to 63 letters, digits and hyphens, not beginning or ending with a hyphen',
    );
  }
  return name;
}

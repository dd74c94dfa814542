/**
 * IPv4 and host name rules of SPEC 5 ("Network: IP, netmask, gateway and DNS must be valid. IP
 * cannot be ..."), shared by the console's network form and the server (issue 11). The forbidden
 * addresses are ours to decide (issue 11): 0.0.0.0/8, loopback 127/8, multicast 224/4, reserved
 * 240/4 (255.255.255.255 included) and, for the device and its gateway, the subnet's own network
 * and broadcast address.
 *
 * The one module for IPv4 text: the console's form, the routes and the network drivers (netns,
 * nmcli) all read addresses and netmasks here. The rule is `inet_pton`'s, which NetworkManager
 * (libnm) and kvmd (Python's `ipaddress`) apply too: four decimal parts 0 to 255, no leading
 * zeros (`010.0.0.1` and `255.255.255.000` are refused: `inet_aton` would read `010` as octal 8),
 * nothing around them (callers trim).
 */
import { HOSTNAME_MAX, type NetworkMode } from './system';

/** A dotted quad as an unsigned 32-bit number, or null (inet_pton's rule: no leading zeros). */
export function parseIpv4(text: string): number | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  let value = 0;
  for (const part of parts) {
    if (!/^(0|[1-9]\d{0,2})$/.test(part)) return null;
    const octet = Number(part);
    if (octet > 255) return null;
    value = value * 256 + octet;
  }
  return value;
}

/** Whether `text` is a dotted-quad IPv4 address (parseIpv4's rule). */
export function isIpv4(text: string): boolean {
  return parseIpv4(text) !== null;
}

/** A socket address as IPv4 when it is an IPv4-mapped IPv6 one (`::ffff:1.2.3.4` → `1.2.3.4`). */
export function unmapIpv4(address: string): string {
  return address.startsWith('::ffff:') ? address.slice(7) : address;
}

export function formatIpv4(value: number): string {
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join('.');
}

/** The prefix length of a contiguous netmask (`255.255.255.0` → 24), or null. */
export function netmaskToPrefix(netmask: string): number | null {
  const value = parseIpv4(netmask);
  if (value === null) return null;
  const inverted = ~value >>> 0;
  // Contiguous: the host part is all ones from the right (x & (x + 1) === 0).
  if ((inverted & (inverted + 1)) !== 0) return null;
  // The host part's width is 32 - clz32; the prefix is what is left (clz32(0) = 32).
  return Math.clz32(inverted);
}

/** A prefix length 0 to 32 → dotted netmask (`24` → `255.255.255.0`); '' for anything else. */
export function prefixToNetmask(prefix: number): string {
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > 32) return '';
  return formatIpv4(prefixToMask(prefix));
}

/** Why an address can never be a host's, DNS server's or gateway's, or null. */
export function forbiddenAddressReason(address: number): string | null {
  const first = address >>> 24;
  if (first === 0) return 'unspecified';
  if (first === 127) return 'loopback';
  if (first >= 224 && first < 240) return 'multicast';
  if (address === 0xffffffff) return 'broadcast';
  if (first >= 240) return 'reserved';
  return null;
}

/** Prefixes a device address may use: /31 and /32 leave no room for a gateway. */
export const NETMASK_PREFIX_MIN = 1;
export const NETMASK_PREFIX_MAX = 30;

export type NetworkFormField =
  'mode' | 'ip_address' | 'netmask' | 'gateway' | 'dns_server1' | 'dns_server2';

/** The console translates by `field` + `code`; `message` is the English text (and the server's). */
export type NetworkFormCode = 'invalid' | 'forbidden' | 'outside_subnet' | 'required';

export interface NetworkFormError {
  field: NetworkFormField;
  code: NetworkFormCode;
  message: string;
}

/** The network form (SPEC 3 "Network config"); empty strings are unset fields. */
export interface NetworkForm {
  mode: NetworkMode | string;
  ip_address?: string;
  netmask?: string;
  gateway?: string;
  dns_server1?: string;
  dns_server2?: string;
}

function fail(field: NetworkFormField, code: NetworkFormCode, message: string): NetworkFormError {
  return { field, code, message };
}

/** One address field: valid IPv4 and not a forbidden address. */
function checkAddress(field: NetworkFormField, text: string): NetworkFormError | number {
  const value = parseIpv4(text);
  if (value === null) return fail(field, 'invalid', `${field} format is invalid`);
  const reason = forbiddenAddressReason(value);
  if (reason) return fail(field, 'forbidden', `${field} cannot be ${text} (${reason} address)`);
  return value;
}

/**
 * Every problem of the form, at most one per field, in the form's order. DHCP mode checks only
 * the DNS servers. DNS: in static mode dns_server1 is required (no DHCP server hands one out);
 * in DHCP mode an empty dns_server1 means the DHCP server's. dns_server2 is optional.
 */
export function networkFormErrors(form: NetworkForm): NetworkFormError[] {
  const errors: NetworkFormError[] = [];
  if (form.mode !== 'dhcp' && form.mode !== 'static') {
    return [fail('mode', 'invalid', "mode must be 'dhcp' or 'static'")];
  }
  if (form.mode === 'static') {
    const ipText = form.ip_address?.trim() ?? '';
    const maskText = form.netmask?.trim() ?? '';
    const gatewayText = form.gateway?.trim() ?? '';
    let ip: number | null = null;
    let prefix: number | null = null;
    if (!ipText) errors.push(fail('ip_address', 'required', 'ip_address is required'));
    else {
      const checked = checkAddress('ip_address', ipText);
      if (typeof checked === 'number') ip = checked;
      else errors.push(checked);
    }
    if (!maskText) errors.push(fail('netmask', 'required', 'netmask is required'));
    else {
      prefix = netmaskToPrefix(maskText);
      if (prefix === null || prefix < NETMASK_PREFIX_MIN || prefix > NETMASK_PREFIX_MAX) {
        prefix = null;
        errors.push(fail('netmask', 'invalid', 'netmask format is invalid'));
      }
    }
    // The subnet's own network and broadcast address are nobody's.
    const hostProblem = (field: NetworkFormField, value: number, text: string) => {
      if (ip === null || prefix === null) return null;
      const mask = prefixToMask(prefix);
      const network = (ip & mask) >>> 0;
      const broadcast = (network | ~mask) >>> 0;
      const cidr = `${formatIpv4(network)}/${prefix}`;
      if ((value & mask) >>> 0 !== network) {
        return fail(field, 'outside_subnet', `${field} ${text} is outside the subnet ${cidr}`);
      }
      if (value === network) {
        return fail(field, 'forbidden', `${field} cannot be ${text} (network address of ${cidr})`);
      }
      if (value === broadcast) {
        return fail(
          field,
          'forbidden',
          `${field} cannot be ${text} (broadcast address of ${cidr})`,
        );
      }
      return null;
    };
    if (ip !== null) {
      const problem = hostProblem('ip_address', ip, ipText);
      if (problem) errors.push(problem);
    }
    if (!gatewayText) errors.push(fail('gateway', 'required', 'gateway is required'));
    else {
      const checked = checkAddress('gateway', gatewayText);
      if (typeof checked !== 'number') errors.push(checked);
      else if (ip !== null && checked === ip) {
        errors.push(fail('gateway', 'forbidden', 'gateway cannot be the device address itself'));
      } else {
        const problem = hostProblem('gateway', checked, gatewayText);
        if (problem) errors.push(problem);
      }
    }
  }
  const dns1 = form.dns_server1?.trim() ?? '';
  const dns2 = form.dns_server2?.trim() ?? '';
  if (dns1) {
    const checked = checkAddress('dns_server1', dns1);
    if (typeof checked !== 'number') errors.push(checked);
  } else if (form.mode === 'static' || dns2) {
    errors.push(fail('dns_server1', 'required', 'dns_server1 is required'));
  }
  if (dns2) {
    const checked = checkAddress('dns_server2', dns2);
    if (typeof checked !== 'number') errors.push(checked);
  }
  return errors;
}

/** The first problem of the form, or null when it may be sent. */
export function validateNetworkForm(form: NetworkForm): NetworkFormError | null {
  return networkFormErrors(form)[0] ?? null;
}

function prefixToMask(prefix: number): number {
  return prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
}

/** Whether `address` lies in `network`/`prefix`. */
export function ipv4InSubnet(address: number, network: number, prefix: number): boolean {
  const mask = prefixToMask(prefix);
  return (address & mask) >>> 0 === (network & mask) >>> 0;
}

/** RFC 1123 host label: 1 to 63 letters, digits and hyphens, no hyphen first or last. */
export function isValidHostname(name: string): boolean {
  return (
    name.length >= 1 &&
    name.length <= HOSTNAME_MAX &&
    /^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?$/.test(name)
  );
}

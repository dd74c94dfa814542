import { describe, expect, it } from 'vitest';
import { BadRequestError } from '../../errors';
import type { EthernetSettings } from '../../drivers/network/types';
import { parseHostname, parseNetworkQuery, withCurrentDns } from './network-input';
import { STATIC_QUERY } from './test-support';

describe('set_network_config arguments (GL §5.13 messages, SPEC 5 rules)', () => {
  const current: EthernetSettings = { mode: 'dhcp', dns_servers: ['8.8.8.8'] };
  it.each([
    [{}, "mode parameter is required, must be 'dhcp' or 'static'"],
    [{ mode: 'auto' }, "mode parameter is required, must be 'dhcp' or 'static'"],
    [
      { mode: 'static', ip_address: '10.0.0.2' },
      'Static IP mode requires ip_address, netmask and gateway parameters',
    ],
    [{ ...STATIC_QUERY, ip_address: '10.0.0' }, 'ip_address format is invalid'],
    [{ ...STATIC_QUERY, netmask: '255.0.255.0' }, 'netmask format is invalid'],
    [{ ...STATIC_QUERY, ip_address: '010.0.0.77' }, 'ip_address format is invalid'],
    [{ ...STATIC_QUERY, netmask: '255.255.255.000' }, 'netmask format is invalid'],
    [{ ...STATIC_QUERY, dns_servers: '1.1.1.01' }, 'Invalid DNS server address format: 1.1.1.01'],
    [{ ...STATIC_QUERY, gateway: 'gw' }, 'gateway format is invalid'],
    [{ ...STATIC_QUERY, dns_servers: '1.1.1.1,x' }, 'Invalid DNS server address format: x'],
    [
      { ...STATIC_QUERY, ip_address: '127.0.0.1' },
      'ip_address cannot be 127.0.0.1 (loopback address)',
    ],
    [
      { ...STATIC_QUERY, ip_address: '10.0.0.255' },
      'ip_address cannot be 10.0.0.255 (broadcast address of 10.0.0.0/24)',
    ],
    [
      { ...STATIC_QUERY, gateway: '10.1.0.1' },
      'gateway 10.1.0.1 is outside the subnet 10.0.0.0/24',
    ],
    [
      { ...STATIC_QUERY, dns_servers: '224.0.0.1' },
      'dns_servers cannot be 224.0.0.1 (multicast address)',
    ],
    [
      { mode: 'dhcp', dns_servers: '1.1.1.1,1.0.0.1,8.8.8.8,8.8.4.4' },
      'dns_servers takes at most 3 addresses',
    ],
  ])('%j → %s', (query, message) => {
    let error: unknown;
    try {
      parseNetworkQuery(query);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as Error).message).toBe(message);
  });

  it('dns_servers: absent keeps, "" means the DHCP server, a list sets', () => {
    expect(withCurrentDns(parseNetworkQuery({ mode: 'dhcp' }), current)).toEqual({
      mode: 'dhcp',
      dns_servers: ['8.8.8.8'],
    });
    expect(withCurrentDns(parseNetworkQuery({ mode: 'dhcp', dns_servers: '' }), current)).toEqual({
      mode: 'dhcp',
      dns_servers: null,
    });
    expect(withCurrentDns(parseNetworkQuery(STATIC_QUERY), current)).toEqual({
      mode: 'static',
      ip_address: '10.0.0.77',
      netmask: '255.255.255.0',
      gateway: '10.0.0.1',
      dns_servers: ['1.1.1.1', '9.9.9.9'],
    });
  });
});

describe('set_hostname arguments', () => {
  it('hostname: an RFC 1123 label, naming the argument', () => {
    expect(parseHostname({ hostname: ' desk-kvm ' })).toBe('desk-kvm');
    expect(() => parseHostname({})).toThrow('hostname parameter is required');
    expect(() => parseHostname({ hostname: ['a', 'b'] })).toThrow(
      'hostname parameter must be given once',
    );
    expect(() => parseHostname({ hostname: '-bad' })).toThrow(/^hostname is invalid/);
    expect(() => parseHostname({ hostname: 'a'.repeat(64) })).toThrow(/^hostname is invalid/);
  });
});

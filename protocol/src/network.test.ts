import { describe, expect, it } from 'vitest';
import {
  formatIpv4,
  isIpv4,
  isValidHostname,
  netmaskToPrefix,
  networkFormErrors,
  parseIpv4,
  prefixToNetmask,
  unmapIpv4,
  validateNetworkForm,
} from './network';

const okStatic = {
  mode: 'static',
  ip_address: '192.168.1.50',
  netmask: '255.255.255.0',
  gateway: '192.168.1.1',
  dns_server1: '1.1.1.1',
  dns_server2: '',
};

describe('IPv4 parsing', () => {
  it.each([
    ['0.0.0.0', 0],
    ['192.168.1.1', 0xc0a80101],
    ['255.255.255.255', 0xffffffff],
  ])('%s', (text, value) => {
    expect(parseIpv4(text)).toBe(value);
    expect(formatIpv4(value)).toBe(text);
  });
  it.each([
    '',
    '1.2.3',
    '1.2.3.4.5',
    '256.1.1.1',
    '01.2.3.4',
    '1.2.3.-1',
    'a.b.c.d',
    ' 1.2.3.4',
    '1..2.3',
  ])('rejects %j', (text) => expect(parseIpv4(text)).toBeNull());
});

describe('socket addresses', () => {
  it('reads an IPv4-mapped IPv6 address as IPv4 and leaves others alone', () => {
    expect(unmapIpv4('::ffff:10.0.0.77')).toBe('10.0.0.77');
    expect(unmapIpv4('10.0.0.77')).toBe('10.0.0.77');
    expect(unmapIpv4('::1')).toBe('::1');
    expect(unmapIpv4('fe80::ffff:1')).toBe('fe80::ffff:1');
  });
});

describe('netmasks', () => {
  it.each([
    ['255.255.255.0', 24],
    ['255.255.0.0', 16],
    ['255.255.255.252', 30],
    ['255.255.255.255', 32],
    ['0.0.0.0', 0],
    ['255.128.0.0', 9],
    ['255.255.248.0', 21],
    ['255.255.240.0', 20],
  ])('%s is /%i', (mask, prefix) => {
    expect(netmaskToPrefix(mask)).toBe(prefix);
    expect(prefixToNetmask(prefix)).toBe(mask);
  });
  it.each(['255.0.255.0', '255.255.255.1', '0.255.255.255', '255.255.256.0', 'x'])(
    'non-contiguous or not a mask %s',
    (mask) => expect(netmaskToPrefix(mask)).toBeNull(),
  );
});

describe('leading zeros and stray text (inet_pton, as NetworkManager and kvmd read them)', () => {
  it.each([
    ['010.0.0.1', null],
    ['1.2.3.04', null],
    ['00.1.1.1', null],
    ['0.0.0.0', 0],
    ['1.2.3.4 ', null],
    ['1.2.3', null],
    ['256.1.1.1', null],
    ['10.0.0.1', 0x0a000001],
  ])('address %j', (text, value) => {
    expect(parseIpv4(text)).toBe(value);
    expect(isIpv4(text)).toBe(value !== null);
  });

  it.each([
    ['255.255.255.000', null],
    ['255.255.255.00', null],
    ['0255.255.255.0', null],
    ['0.0.0.0', 0],
    ['255.255.255.0 ', null],
    ['255.255.255', null],
    ['256.0.0.0', null],
  ])('netmask %j', (text, prefix) => expect(netmaskToPrefix(text)).toBe(prefix));

  it.each([-1, 33, 24.5, Number.NaN])('prefix %d has no netmask', (prefix) =>
    expect(prefixToNetmask(prefix)).toBe(''),
  );
});

describe('the network form (SPEC 5)', () => {
  it('accepts a good static form and a DHCP form', () => {
    expect(validateNetworkForm(okStatic)).toBeNull();
    expect(validateNetworkForm({ mode: 'dhcp' })).toBeNull();
    expect(validateNetworkForm({ mode: 'dhcp', dns_server1: '9.9.9.9' })).toBeNull();
    expect(validateNetworkForm({ ...okStatic, dns_server2: '8.8.8.8' })).toBeNull();
  });

  it.each([
    [{ mode: 'auto' }, 'mode', 'invalid'],
    [{ ip_address: '' }, 'ip_address', 'required'],
    [{ ip_address: '192.168.1.300' }, 'ip_address', 'invalid'],
    [{ ip_address: '0.0.0.0' }, 'ip_address', 'forbidden'],
    [{ ip_address: '127.0.0.1' }, 'ip_address', 'forbidden'],
    [{ ip_address: '224.0.0.5' }, 'ip_address', 'forbidden'],
    [{ ip_address: '255.255.255.255' }, 'ip_address', 'forbidden'],
    [{ ip_address: '240.0.0.1' }, 'ip_address', 'forbidden'],
    [{ ip_address: '192.168.1.0' }, 'ip_address', 'forbidden'],
    [{ ip_address: '192.168.1.255' }, 'ip_address', 'forbidden'],
    [{ netmask: '255.0.255.0' }, 'netmask', 'invalid'],
    [{ netmask: '255.255.255.255' }, 'netmask', 'invalid'],
    [{ netmask: '' }, 'netmask', 'required'],
    [{ gateway: '10.0.0.1' }, 'gateway', 'outside_subnet'],
    [{ gateway: '192.168.1.50' }, 'gateway', 'forbidden'],
    [{ gateway: '192.168.1.255' }, 'gateway', 'forbidden'],
    [{ gateway: 'x' }, 'gateway', 'invalid'],
    [{ dns_server1: '' }, 'dns_server1', 'required'],
    [{ dns_server1: '1.1.1' }, 'dns_server1', 'invalid'],
    [{ dns_server1: '127.0.0.53' }, 'dns_server1', 'forbidden'],
    [{ dns_server2: '300.1.1.1' }, 'dns_server2', 'invalid'],
    [{ ip_address: '192.168.001.50' }, 'ip_address', 'invalid'],
    [{ netmask: '255.255.255.000' }, 'netmask', 'invalid'],
  ])('%j → %s %s', (change, field, code) => {
    const error = validateNetworkForm({ ...okStatic, ...change });
    expect(error).toMatchObject({ field, code });
    expect(error?.message).toContain(field === 'mode' ? 'mode' : field);
  });

  it('a wider subnet moves the gateway inside', () => {
    expect(
      validateNetworkForm({ ...okStatic, netmask: '255.255.0.0', gateway: '192.168.7.1' }),
    ).toBeNull();
  });

  it('DNS2 without DNS1 in DHCP mode asks for DNS1', () => {
    expect(validateNetworkForm({ mode: 'dhcp', dns_server2: '1.1.1.1' })).toMatchObject({
      field: 'dns_server1',
      code: 'required',
    });
  });

  it('lists one problem per field', () => {
    const errors = networkFormErrors({
      mode: 'static',
      ip_address: 'x',
      netmask: 'y',
      gateway: '',
    });
    expect(errors.map((e) => e.field)).toEqual(['ip_address', 'netmask', 'gateway', 'dns_server1']);
  });
});

describe('host names (RFC 1123 label)', () => {
  it.each(['kvm', 'KVM-01', 'a', '0', 'a'.repeat(63)])('accepts %s', (name) =>
    expect(isValidHostname(name)).toBe(true),
  );
  it.each(['', '-kvm', 'kvm-', 'kvm.local', 'kvm_1', 'a'.repeat(64), 'kvm 1', 'ĸvm'])(
    'rejects %j',
    (name) => expect(isValidHostname(name)).toBe(false),
  );
});

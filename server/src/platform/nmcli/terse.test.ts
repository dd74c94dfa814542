import { describe, expect, it } from 'vitest';
import { field, fields, parseRecords, parseTable, splitCidr, splitList, splitTerse } from './terse';
import { fixture } from './test-support';

describe('tabular terse output', () => {
  it('splits at unescaped colons and unescapes \\: and \\\\', () => {
    expect(splitTerse('*:24\\:DE\\:C6\\:C5\\:0B\\:24:Office:6:67:WPA2 WPA3')).toEqual([
      '*',
      '24:DE:C6:C5:0B:24',
      'Office',
      '6',
      '67',
      'WPA2 WPA3',
    ]);
    expect(splitTerse('a\\\\:b')).toEqual(['a\\', 'b']);
    expect(splitTerse('::')).toEqual(['', '', '']);
    // a backslash before anything else stays as it is
    expect(splitTerse('a\\q:b\\')).toEqual(['a\\q', 'b\\']);
  });

  it('reads the Wi-Fi list with escaped BSSIDs, a colon in an SSID and empty fields', () => {
    const rows = parseTable(fixture('wifi-list.txt'), 6);
    expect(rows).toHaveLength(7);
    expect(rows[0]).toEqual([' ', '58:52:8A:10:F3:E7', 'Home:5G', '36', '84', 'WPA2']);
    expect(rows[2]).toEqual([' ', '24:DE:C6:C5:0B:23', 'Guest', '6', '70', '']);
    expect(rows[4]?.[2]).toBe(''); // hidden network
    expect(rows[5]?.[2]).toBe('back\\slash net');
  });

  it('reads the device list', () => {
    expect(parseTable(fixture('device-list.txt'), 3)[3]).toEqual([
      'lo',
      'loopback',
      'connected (externally)',
    ]);
  });
});

describe('multiline terse output', () => {
  it('splits at the first colon only, collects numbered fields, treats -- as unset', () => {
    const [dev] = parseRecords(fixture('device-show-eth0-static.txt'));
    expect(field(dev, 'GENERAL.HWADDR')).toBe('DC:A6:32:1B:4C:7E');
    expect(fields(dev, 'IP4.DNS')).toEqual(['1.1.1.1', '9.9.9.9']);
    const [con] = parseRecords(fixture('connection-show-eth0-dhcp.txt'));
    expect(field(con, 'ipv4.gateway')).toBe('');
    expect(field(con, 'ipv4.method')).toBe('auto');
    const [wifi] = parseRecords(fixture('connection-show-wifi-home.txt'));
    expect(field(wifi, '802-11-wireless.ssid')).toBe('Home:5G');
  });

  it('separates objects at empty lines', () => {
    const recs = parseRecords(
      'GENERAL.DEVICE:eth0\nIP4.ADDRESS[1]:1.2.3.4/8\n\nGENERAL.DEVICE:lo\n',
    );
    expect(recs.map((r) => field(r, 'GENERAL.DEVICE'))).toEqual(['eth0', 'lo']);
  });
});

describe('addresses', () => {
  it('splits an address with its prefix (netmasks: protocol/src/network.test.ts)', () => {
    expect(splitCidr('10.20.30.40/21')).toEqual({ ip: '10.20.30.40', netmask: '255.255.248.0' });
    expect(splitCidr('10.20.30.40/33')).toEqual({ ip: '10.20.30.40', netmask: '' });
    expect(splitCidr('10.20.30.40')).toEqual({ ip: '10.20.30.40', netmask: '' });
  });

  it('reads property lists in both spellings', () => {
    expect(splitList('1.1.1.1,9.9.9.9')).toEqual(['1.1.1.1', '9.9.9.9']);
    expect(splitList('10.0.0.2/8, 192.168.1.5/24')).toEqual(['10.0.0.2/8', '192.168.1.5/24']);
    expect(splitList('--')).toEqual([]);
  });
});

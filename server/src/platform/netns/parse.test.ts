import { describe, expect, it } from 'vitest';
import {
  parseAddrShow,
  parseDefaultGateway,
  parseLeaseLine,
  parseResolvConf,
  resolvConf,
} from './parse';

// Recorded here: `ip -j -n <ns> addr show dev eth0` and `ip -j -n <ns> route show default`.
const ADDR_UP = JSON.stringify([
  {
    ifindex: 2,
    link_index: 2,
    ifname: 'eth0',
    flags: ['BROADCAST', 'MULTICAST', 'UP', 'LOWER_UP'],
    mtu: 1500,
    qdisc: 'noqueue',
    operstate: 'UP',
    group: 'default',
    txqlen: 1000,
    link_type: 'ether',
    address: '02:4b:11:22:33:44',
    broadcast: 'ff:ff:ff:ff:ff:ff',
    link_netnsid: 0,
    addr_info: [
      { family: 'inet', local: '192.168.8.116', prefixlen: 24, broadcast: '192.168.8.255' },
      { family: 'inet6', local: 'fe80::4b:11ff:fe22:3344', prefixlen: 64 },
    ],
  },
]);
const ADDR_DOWN =
  '[{"ifindex":2,"link_index":2,"ifname":"eth0","flags":["NO-CARRIER","BROADCAST","MULTICAST","UP"],"mtu":1500,"qdisc":"noqueue","operstate":"DOWN","group":"default","txqlen":1000,"link_type":"ether","address":"02:4b:11:22:33:44","broadcast":"ff:ff:ff:ff:ff:ff","link_netnsid":0,"addr_info":[]}]';
const ROUTE = '[{"dst":"default","gateway":"192.168.8.1","dev":"eth0","flags":["linkdown"]}]';

describe('parseLeaseLine', () => {
  it('reads a bound lease', () => {
    expect(
      parseLeaseLine(
        'kvm-lease bound ip=192.168.8.116 mask=24 router=192.168.8.1 dns=192.168.8.1,1.1.1.1 lease=43200',
      ),
    ).toEqual({
      kind: 'bound',
      lease: {
        ip: '192.168.8.116',
        prefix: 24,
        router: '192.168.8.1',
        dns: ['192.168.8.1', '1.1.1.1'],
        leaseS: 43200,
      },
    });
  });

  it('takes a lease without router or DNS', () => {
    expect(parseLeaseLine('kvm-lease bound ip=10.0.0.5 mask=8 router= dns= lease=60')).toEqual({
      kind: 'bound',
      lease: { ip: '10.0.0.5', prefix: 8, router: '', dns: [], leaseS: 60 },
    });
  });

  it('reads deconfig, leasefail, nak and errors', () => {
    expect(parseLeaseLine('kvm-lease deconfig')).toEqual({ kind: 'deconfig' });
    expect(parseLeaseLine('kvm-lease leasefail')).toEqual({ kind: 'leasefail' });
    expect(parseLeaseLine('kvm-lease nak')).toEqual({ kind: 'nak' });
    expect(parseLeaseLine('kvm-lease error addr add: RTNETLINK answers: File exists')).toEqual({
      kind: 'error',
      message: 'addr add: RTNETLINK answers: File exists',
    });
  });

  it("ignores udhcpc's own lines and malformed leases", () => {
    expect(parseLeaseLine('udhcpc: broadcasting discover')).toBeNull();
    expect(parseLeaseLine('kvm-lease bound ip=300.1.1.1 mask=24 router= dns= lease=1')).toBeNull();
    expect(parseLeaseLine('kvm-lease bound ip=10.0.0.1 mask=33 router= dns= lease=1')).toBeNull();
    expect(parseLeaseLine('kvm-lease bound ip=10.0.0.1 mask=8 router=x dns= lease=1')).toBeNull();
    expect(parseLeaseLine('kvm-lease whatever')).toBeNull();
  });

  it('drops DNS entries that are not addresses', () => {
    const ev = parseLeaseLine(
      'kvm-lease bound ip=10.0.0.5 mask=8 router= dns=1.1.1.1,;rm,8.8.8.8 lease=1',
    );
    expect(ev?.kind === 'bound' && ev.lease.dns).toEqual(['1.1.1.1', '8.8.8.8']);
  });
});

describe('ip -j output', () => {
  it('reads MAC, link and address', () => {
    expect(parseAddrShow(ADDR_UP)).toEqual({
      mac: '02:4b:11:22:33:44',
      link: 'up',
      ip: '192.168.8.116',
      prefix: 24,
    });
  });

  it('reads a link without carrier and no address', () => {
    expect(parseAddrShow(ADDR_DOWN)).toEqual({
      mac: '02:4b:11:22:33:44',
      link: 'down',
      ip: '',
      prefix: null,
    });
    expect(parseAddrShow('[]')).toEqual({ mac: '', link: 'down', ip: '', prefix: null });
  });

  it('reads the default gateway', () => {
    expect(parseDefaultGateway(ROUTE)).toBe('192.168.8.1');
    expect(parseDefaultGateway('[]')).toBe('');
    expect(parseDefaultGateway('')).toBe('');
  });
});

describe('resolv.conf', () => {
  it('round-trips the nameservers', () => {
    const text = resolvConf(['192.168.8.1', '9.9.9.9']);
    expect(parseResolvConf(text)).toEqual(['192.168.8.1', '9.9.9.9']);
    expect(parseResolvConf('search lan\n# nameserver 1.1.1.1\nnameserver 8.8.8.8 \n')).toEqual([
      '8.8.8.8',
    ]);
    expect(parseResolvConf(resolvConf([]))).toEqual([]);
  });
});

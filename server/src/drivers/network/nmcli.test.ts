import { describe, expect, it } from 'vitest';
import { SystemFeatureUnavailableError } from '../types';
import { NetworkApplyError } from './netns';
import { modifyArgs, NmcliHostnameError, NmcliNetwork } from './nmcli';
import { fail, fakeRunner, fixture, type Reply } from '../../platform/nmcli/test-support';

const UUID = '7f43423d-bd9c-38ca-ada1-efe4923c7c5b';
const SHOW_FIELDS = 'GENERAL.HWADDR,GENERAL.STATE,GENERAL.CON-UUID,IP4.ADDRESS,IP4.GATEWAY,IP4.DNS';
const PROFILE_FIELDS = 'ipv4.method,ipv4.addresses,ipv4.gateway,ipv4.dns,ipv4.ignore-auto-dns';

/** A NetworkManager holding eth0 on `profile` (dhcp or static fixtures). */
function nm(
  opts: {
    profile?: 'dhcp' | 'static';
    up?: Reply[];
    modify?: Reply[];
    hostnameStuck?: boolean;
  } = {},
) {
  let profile = opts.profile ?? 'dhcp';
  const ups = [...(opts.up ?? [])];
  const modifies = [...(opts.modify ?? [])];
  let hostname = 'kvm-desk';
  return fakeRunner((argv) => {
    const a = argv.slice(1).join(' ');
    if (a === '-t -f DEVICE,TYPE,STATE device') return fixture('device-list.txt');
    if (a === `-t -f ${SHOW_FIELDS} device show eth0`) {
      return fixture(`device-show-eth0-${profile}.txt`);
    }
    if (a === '-t -f GENERAL.CON-UUID device show eth0') return `GENERAL.CON-UUID:${UUID}\n`;
    if (a === '-t -f GENERAL.HWADDR device show eth0')
      return 'GENERAL.HWADDR:DC\\:A6\\:32\\:1B\\:4C\\:7E\n';
    if (a === `-t -f ${PROFILE_FIELDS} connection show uuid ${UUID}`) {
      return fixture(`connection-show-eth0-${profile}.txt`);
    }
    if (a.startsWith(`connection modify uuid ${UUID}`)) {
      const r = modifies.shift() ?? '';
      if (typeof r === 'string') profile = a.includes('ipv4.method manual') ? 'static' : 'dhcp';
      return r;
    }
    if (a === `--wait 30 connection up uuid ${UUID}`) {
      return (
        ups.shift() ??
        `Connection successfully activated (D-Bus active path: /org/freedesktop/NetworkManager/ActiveConnection/7)\n`
      );
    }
    if (a === 'general hostname') return `${hostname}\n`;
    if (a.startsWith('general hostname ')) {
      // nmcli: a bare argument that is a prefix of "help" prints the usage and exits 0
      const name = argv[3] ?? '';
      if ('help'.startsWith(name.replace(/^--?/, '')))
        return 'Usage: nmcli general hostname { ARGUMENTS | help }\n';
      if (!opts.hostnameStuck) hostname = name;
      return '';
    }
    return undefined;
  });
}

async function started(fake: ReturnType<typeof nm>, iface?: string): Promise<NmcliNetwork> {
  const d = new NmcliNetwork({
    runner: fake.run,
    monitor: null,
    ...(iface ? { interface: iface } : {}),
  });
  await d.init();
  return d;
}

describe('NmcliNetwork', () => {
  it("reads the hardware address alone, unescaped and lower case; '' while unavailable", async () => {
    const fake = nm();
    const d = await started(fake);
    fake.calls.length = 0;
    expect(await d.macAddress()).toBe('dc:a6:32:1b:4c:7e');
    expect(fake.lines()).toEqual(['nmcli -t -f GENERAL.HWADDR device show eth0']);
    const missing = await started(nm(), 'eth9');
    expect(await missing.macAddress()).toBe('');
  });

  it('picks the first managed Ethernet device and reads a DHCP status', async () => {
    const fake = nm();
    const d = await started(fake);
    expect(d.availability()).toEqual({ available: true, reason: null });
    expect(d.interfaceName).toBe('eth0');
    expect(await d.status()).toEqual({
      interface: 'eth0',
      mac_address: 'dc:a6:32:1b:4c:7e',
      link: 'up',
      mode: 'dhcp',
      ip_address: '192.168.8.123',
      netmask: '255.255.255.0',
      gateway: '192.168.8.1',
      dns_servers: ['192.168.8.1'],
      dns_manual: false,
    });
  });

  it('reads a static profile: prefix to netmask, several DNS servers, manual DNS', async () => {
    const d = await started(nm({ profile: 'static' }));
    expect(await d.status()).toMatchObject({
      mode: 'static',
      ip_address: '10.20.30.40',
      netmask: '255.255.248.0',
      gateway: '10.20.24.1',
      dns_servers: ['1.1.1.1', '9.9.9.9'],
      dns_manual: true,
    });
  });

  it('says the link is down and holds no address when the cable is out', async () => {
    const fake = fakeRunner((argv) => {
      const a = argv.slice(1).join(' ');
      if (a === '-t -f DEVICE,TYPE,STATE device') return fixture('device-list.txt');
      if (a.endsWith('device show eth0')) return fixture('device-show-eth0-unplugged.txt');
      return undefined;
    });
    const d = await started(fake);
    expect(await d.status()).toMatchObject({
      link: 'down',
      ip_address: '',
      gateway: '',
      dns_servers: [],
    });
    // no active profile: nothing else was asked
    expect(fake.calls).toHaveLength(2);
  });

  it('applies a static address with manual DNS with exactly these commands', async () => {
    const fake = nm();
    const d = await started(fake);
    await d.apply({
      mode: 'static',
      ip_address: '192.168.8.50',
      netmask: '255.255.255.0',
      gateway: '192.168.8.1',
      dns_servers: ['1.1.1.1', '8.8.8.8'],
    });
    expect(fake.lines().slice(1)).toEqual([
      'nmcli -t -f GENERAL.CON-UUID device show eth0',
      `nmcli -t -f ${PROFILE_FIELDS} connection show uuid ${UUID}`,
      `nmcli connection modify uuid ${UUID} ipv4.method manual ipv4.addresses 192.168.8.50/24 ipv4.gateway 192.168.8.1 ipv4.dns 1.1.1.1,8.8.8.8 ipv4.ignore-auto-dns yes`,
      `nmcli --wait 30 connection up uuid ${UUID}`,
    ]);
  });

  it('applies DHCP clearing address and gateway; DHCP DNS or manual DNS', async () => {
    const fake = nm({ profile: 'static' });
    const d = await started(fake);
    await d.apply({ mode: 'dhcp', dns_servers: null });
    await d.apply({ mode: 'dhcp', dns_servers: ['9.9.9.9'] });
    const modifies = fake.calls.filter((c) => c[2] === 'modify');
    expect(modifies.map((c) => c.slice(5))).toEqual([
      [
        'ipv4.method',
        'auto',
        'ipv4.addresses',
        '',
        'ipv4.gateway',
        '',
        'ipv4.dns',
        '',
        'ipv4.ignore-auto-dns',
        'no',
      ],
      [
        'ipv4.method',
        'auto',
        'ipv4.addresses',
        '',
        'ipv4.gateway',
        '',
        'ipv4.dns',
        '9.9.9.9',
        'ipv4.ignore-auto-dns',
        'yes',
      ],
    ]);
  });

  it('puts the previous profile back when connection up fails, and says which step failed', async () => {
    const fake = nm({
      profile: 'static',
      up: [fail(fixture('err-connection-up-ip-config.txt'))],
    });
    const d = await started(fake);
    const err = await d.apply({ mode: 'dhcp', dns_servers: null }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(NetworkApplyError);
    expect((err as Error).message).toBe(
      'nmcli connection up failed: Error: Connection activation failed: IP configuration could not be reserved (no available address, timeout, etc.) (the previous settings are back in force)',
    );
    const tail = fake.lines().slice(-4);
    expect(tail).toEqual([
      `nmcli connection modify uuid ${UUID} ipv4.method auto ipv4.addresses  ipv4.gateway  ipv4.dns  ipv4.ignore-auto-dns no`,
      `nmcli --wait 30 connection up uuid ${UUID}`,
      // the restore: the static profile as it was captured
      `nmcli connection modify uuid ${UUID} ipv4.method manual ipv4.addresses 10.20.30.40/21 ipv4.gateway 10.20.24.1 ipv4.dns 1.1.1.1,9.9.9.9 ipv4.ignore-auto-dns yes`,
      `nmcli --wait 30 connection up uuid ${UUID}`,
    ]);
    expect(await d.status()).toMatchObject({ mode: 'static', ip_address: '10.20.30.40' });
  });

  it('says so when the restore fails too', async () => {
    const bad = fail(
      'Error: Connection activation failed: The device could not be readied for configuration',
    );
    const d = await started(nm({ up: [bad, bad] }));
    await expect(
      d.apply({
        mode: 'static',
        ip_address: '10.0.0.2',
        netmask: '255.0.0.0',
        gateway: '10.0.0.1',
        dns_servers: null,
      }),
    ).rejects.toThrow(/connection up failed: .*restoring the previous settings failed too/);
  });

  it('a refused modify changes nothing and names the step', async () => {
    const fake = nm({
      modify: [
        fail(
          "Error: Failed to modify connection 'Wired connection 1': ipv4.gateway: gateway is invalid",
        ),
      ],
    });
    const d = await started(fake);
    await expect(
      d.apply({
        mode: 'static',
        ip_address: '10.0.0.2',
        netmask: '255.0.0.0',
        gateway: '10.0.0.1',
        dns_servers: null,
      }),
    ).rejects.toThrow(/^nmcli connection modify failed: Error: Failed to modify connection/);
    expect(fake.lines().some((l) => l.includes('connection up'))).toBe(false);
  });

  it('gets and sets the hostname', async () => {
    const fake = nm();
    const d = await started(fake);
    expect(await d.hostname()).toBe('kvm-desk');
    await d.setHostname('glkvm-lab');
    expect(fake.lines()).toContain('nmcli general hostname glkvm-lab');
    expect(await d.hostname()).toBe('glkvm-lab');
  });

  it('refuses a host name nmcli would read as a help request, and checks what nmcli set', async () => {
    const fake = nm();
    const d = await started(fake);
    for (const name of ['help', 'h', 'hel']) {
      await expect(d.setHostname(name)).rejects.toBeInstanceOf(NmcliHostnameError);
    }
    expect(fake.lines().filter((l) => l.startsWith('nmcli general hostname '))).toEqual([]);
    expect(await d.hostname()).toBe('kvm-desk');
    // "helpdesk" is no prefix of help: nmcli takes it as a name
    await d.setHostname('helpdesk');
    expect(await d.hostname()).toBe('helpdesk');

    const stuck = new NmcliNetwork({
      runner: nm({ hostnameStuck: true }).run,
      monitor: null,
      hostnameSettleMs: 300,
    });
    await stuck.init();
    await expect(stuck.setHostname('glkvm-lab')).rejects.toThrow(
      "nmcli general hostname left the host name 'kvm-desk', not 'glkvm-lab'",
    );
  });

  it('puts nothing but dotted quads where nmcli reads addresses', () => {
    for (const bad of ['-1', '1.2.3.4\n', '1.2.3.4,5.6.7.8', '+ipv4.dns']) {
      expect(() => modifyArgs(UUID, { mode: 'dhcp', dns_servers: [bad] })).toThrow(
        /not an IPv4 address/,
      );
      expect(() =>
        modifyArgs(UUID, {
          mode: 'static',
          ip_address: bad,
          netmask: '255.255.255.0',
          gateway: '192.168.1.1',
          dns_servers: null,
        }),
      ).toThrow(/not an IPv4 address/);
    }
  });

  it('reads netmasks by the one IPv4 rule: no leading zeros (inet_pton, as NetworkManager)', () => {
    const settings = {
      mode: 'static' as const,
      ip_address: '192.168.1.50',
      gateway: '192.168.1.1',
      dns_servers: null,
    };
    expect(modifyArgs(UUID, { ...settings, netmask: '255.255.255.0' })).toContain(
      '192.168.1.50/24',
    );
    for (const netmask of ['255.255.255.000', '255.255.255.00', '0255.255.255.0']) {
      expect(() => modifyArgs(UUID, { ...settings, netmask }), netmask).toThrow(
        'A static address needs ip_address and a valid netmask',
      );
    }
    expect(() =>
      modifyArgs(UUID, { ...settings, ip_address: '192.168.001.50', netmask: '255.255.255.0' }),
    ).toThrow(/not an IPv4 address/);
  });

  it('tells listeners after a change', async () => {
    const d = await started(nm());
    let n = 0;
    const off = d.onChange(() => n++);
    await d.setHostname('x');
    expect(n).toBe(1);
    off();
  });

  it('is unavailable, with the reason, without NetworkManager or without Ethernet', async () => {
    const missing = fakeRunner(() => fail('', 'ENOENT'));
    const a = await started(missing);
    expect(a.availability()).toEqual({
      available: false,
      reason: 'NetworkManager (nmcli) is not installed',
    });
    await expect(a.status()).rejects.toBeInstanceOf(SystemFeatureUnavailableError);

    const down = await started(fakeRunner(() => fail(fixture('err-not-running.txt'), 8)));
    expect(down.availability().reason).toBe('NetworkManager is not running');

    const other = await started(nm(), 'eth7');
    expect(other.availability().reason).toBe(
      'NetworkManager does not manage the Ethernet interface eth7',
    );

    const noEth = await started(
      fakeRunner(() => 'wlan0:wifi:disconnected\nlo:loopback:unmanaged\n'),
    );
    expect(noEth.availability().reason).toBe('NetworkManager manages no Ethernet interface');
  });
});

import { describe, expect, it } from 'vitest';
import { SystemFeatureUnavailableError } from '../types';
import { fail, fakeRunner, fixture, type Reply } from '../../platform/nmcli/test-support';
import { encryptionOf, NmcliWifi, qualityToDbm, wifiFailType } from './nmcli';

const HOME = '0d5b1c6e-3a8f-4c2b-9e1d-2f6a7b8c9d01';
const OFFICE = '5e6f7a8b-1c2d-4e3f-8a9b-0c1d2e3f4a5b';
const NEW = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d';

/**
 * A NetworkManager with wlan0 and two saved networks. `connection add` makes profile NEW from
 * its property values (unless `add` fails it); `connection up` answers the join (`connect`).
 */
function nm(
  opts: { connect?: Reply; add?: Reply; connected?: boolean; radio?: string; scan?: string } = {},
) {
  const profiles = new Map<string, string>([
    [HOME, fixture('connection-show-wifi-home.txt')],
    [OFFICE, fixture('connection-show-wifi-office.txt')],
  ]);
  let radio = opts.radio ?? 'enabled';
  return fakeRunner((argv) => {
    const a = argv.slice(1).join(' ');
    if (a === '-t -f DEVICE,TYPE,STATE device') return fixture('device-list.txt');
    if (a === 'radio wifi') return `${radio}\n`;
    if (a.startsWith('radio wifi ')) {
      radio = argv[3] === 'on' ? 'enabled' : 'disabled';
      return '';
    }
    if (a.startsWith('-t -f GENERAL.STATE,GENERAL.CONNECTION,IP4.ADDRESS')) {
      return fixture(`device-show-wlan0-${opts.connected ? 'connected' : 'disconnected'}.txt`);
    }
    if (a.startsWith('-t -f IN-USE,BSSID,SSID,CHAN,SIGNAL')) {
      return fixture(opts.scan ?? 'wifi-list.txt');
    }
    if (a === '-t -f UUID,TYPE connection show') {
      const own = [...profiles.keys()].map((u) => `${u}:802-11-wireless`).join('\n');
      return `7f43423d-bd9c-38ca-ada1-efe4923c7c5b:802-3-ethernet\n${own}\n`;
    }
    if (
      a.startsWith(
        '-t -f 802-11-wireless.ssid,802-11-wireless-security.key-mgmt connection show uuid ',
      )
    ) {
      return profiles.get(argv.at(-1) ?? '');
    }
    if (argv[1] === 'connection' && argv[2] === 'add') {
      if (opts.add) return opts.add;
      const props = addProperties(argv);
      profiles.set(
        NEW,
        `802-11-wireless.ssid:${props.get('802-11-wireless.ssid') ?? ''}\n` +
          `802-11-wireless-security.key-mgmt:${props.get('802-11-wireless-security.key-mgmt') ?? ''}\n`,
      );
      return `Connection '${props.get('connection.id') ?? ''}' (${NEW}) successfully added.\n`;
    }
    if (a.startsWith('--wait 45 connection up uuid ')) {
      return (
        opts.connect ??
        'Connection successfully activated (D-Bus active path: /org/freedesktop/NetworkManager/ActiveConnection/7)\n'
      );
    }
    if (a.startsWith('connection delete')) {
      for (let i = 4; i < argv.length; i += 2) profiles.delete(argv[i] ?? '');
      return '';
    }
    if (a === 'device disconnect wlan0') return fail(fixture('err-disconnect-not-active.txt'), 6);
    return undefined;
  });
}

/** The property names a join may set: nmcli takes the argument after each as its value. */
const PROPERTY_NAMES = new Set([
  'connection.type',
  'connection.id',
  'connection.autoconnect',
  '802-11-wireless.ssid',
  '802-11-wireless.hidden',
  '802-11-wireless.bssid',
  '802-11-wireless-security.key-mgmt',
  '802-11-wireless-security.psk',
  '802-11-wireless-security.wep-key0',
]);

/**
 * `nmcli connection add` argv → its properties, as nmcli reads them (src/nmcli/connections.c:
 * after `add`, arguments pair up as `<setting>.<property> <value>`). Fails the test when a name
 * position holds anything but a known property name.
 */
function addProperties(argv: string[]): Map<string, string> {
  expect(argv.slice(0, 3)).toEqual(['nmcli', 'connection', 'add']);
  const rest = argv.slice(3);
  expect(rest.length % 2).toBe(0);
  const props = new Map<string, string>();
  for (let i = 0; i < rest.length; i += 2) {
    const name = rest[i] ?? '';
    expect(PROPERTY_NAMES.has(name), `a property name, not ${JSON.stringify(name)}`).toBe(true);
    props.set(name, rest[i + 1] ?? '');
  }
  return props;
}

async function started(fake: ReturnType<typeof nm>): Promise<NmcliWifi> {
  const d = new NmcliWifi({ runner: fake.run, monitor: null });
  await d.init();
  return d;
}

describe('NmcliWifi', () => {
  it('scans with --rescan yes: escaped BSSIDs, colons in SSIDs, hidden networks left out', async () => {
    const fake = nm();
    const d = await started(fake);
    const list = await d.scan();
    expect(fake.lines().at(-1)).toBe(
      'nmcli -t -f IN-USE,BSSID,SSID,CHAN,SIGNAL,SECURITY device wifi list --rescan yes ifname wlan0',
    );
    expect(list.map((n) => n.ssid)).toEqual([
      'Home:5G',
      'Office',
      'Guest',
      'Corp',
      'back\\slash net',
      'Cafe',
    ]);
    expect(list[0]).toEqual({
      ssid: 'Home:5G',
      bssid: '58:52:8a:10:f3:e7',
      channel: 36,
      signal: -50,
      quality: 84,
      secure: true,
      encryption: 'wpa2-psk',
    });
    expect(list.map((n) => [n.encryption, n.secure])).toEqual([
      ['wpa2-psk', true],
      ['wpa2-psk', true],
      ['none', false],
      ['wpa2-eap', true],
      ['wpa2-psk', true],
      ['owe', false],
    ]);
  });

  it('lists saved networks from the wireless profiles', async () => {
    const d = await started(nm());
    expect(await d.saved()).toEqual([
      { ssid: 'Home:5G', encryption: 'wpa2-psk' },
      { ssid: 'Office', encryption: 'wpa3-sae' },
    ]);
  });

  it('reports the connected network, its access point and address', async () => {
    const d = await started(nm({ connected: true }));
    expect(await d.status()).toEqual({
      state: 2,
      ssid: 'Office',
      bssid: '24:de:c6:c5:0b:24',
      channel: 6,
      signal: qualityToDbm(67),
      fail_type: null,
      ipv4: { ip: '192.168.50.23', dns: ['192.168.50.1', '8.8.4.4'], gateway: '192.168.50.1' },
      enabled: true,
      adapter: 'nmcli',
      adapter_label: 'wlan0',
    });
  });

  it('joins by adding a profile with the values as properties, then bringing it up', async () => {
    const fake = nm();
    const d = await started(fake);
    await d.scan();
    const out = await d.connect({
      ssid: 'Guest Net',
      key: 'correct horse',
      bssid: '24:DE:C6:C5:0B:23',
    });
    expect(out.ok).toBe(true);
    expect(fake.calls.find((c) => c[2] === 'add')).toEqual([
      'nmcli',
      'connection',
      'add',
      'connection.type',
      '802-11-wireless',
      'connection.id',
      'Guest Net',
      'connection.autoconnect',
      'yes',
      '802-11-wireless.ssid',
      'Guest Net',
      '802-11-wireless.bssid',
      '24:DE:C6:C5:0B:23',
      '802-11-wireless-security.key-mgmt',
      'wpa-psk',
      '802-11-wireless-security.psk',
      'correct horse',
    ]);
    expect(fake.lines()).toContain(`nmcli --wait 45 connection up uuid ${NEW} ifname wlan0`);
    expect(fake.lines().some((l) => l.includes('device wifi connect'))).toBe(false);
    expect((await d.saved()).map((s) => s.ssid)).toContain('Guest Net');
  });

  it('hands SSIDs and keys that look like options or hold line breaks to nmcli only as values', async () => {
    const cases: { ssid: string; key?: string; hidden?: boolean }[] = [
      { ssid: '--help', hidden: true },
      { ssid: 'KVM-Lab\nX', hidden: true, key: '-aaaaaaaaaa' },
      { ssid: '"; id; "', key: '--show-secrets' },
      { ssid: '-a', key: 'password' },
      { ssid: 'h', hidden: true },
      { ssid: 'aa:bb:cc:dd:ee:ff', hidden: true, key: 'ifname eth0' },
    ];
    for (const c of cases) {
      const fake = nm();
      const d = await started(fake);
      const out = await d.connect({ ...c });
      expect(out.ok, JSON.stringify(c)).toBe(true);
      const add = fake.calls.find((call) => call[2] === 'add');
      expect(add, JSON.stringify(c)).toBeDefined();
      const props = addProperties(add!);
      expect(props.get('802-11-wireless.ssid')).toBe(c.ssid);
      expect(props.get('802-11-wireless.hidden')).toBe(c.hidden ? 'yes' : undefined);
      expect(props.get('802-11-wireless-security.psk')).toBe(c.key);
      expect(props.get('connection.id')).not.toMatch(/\n/);
      // what nmcli reads bare (or as a keyword's value) never holds a client's value
      for (const call of fake.calls.filter((x) => x !== add)) {
        for (const value of [c.ssid, c.key].filter((v) => v !== undefined)) {
          expect(call, JSON.stringify(c)).not.toContain(value);
        }
      }
      expect(fake.lines()).toContain(`nmcli --wait 45 connection up uuid ${NEW} ifname wlan0`);
      // the exact SSID comes back (a line break too) and is forgotten by it
      expect((await d.saved()).map((s) => s.ssid)).toContain(c.ssid);
      expect(await d.forget(c.ssid)).toBe(true);
      expect(fake.lines().at(-1)).toBe(`nmcli connection delete uuid ${NEW}`);
    }
  });

  it('scans SSIDs with line breaks and option-like names, and joins them with the scanned security', async () => {
    const fake = nm({ scan: 'wifi-list-odd-ssids.txt' });
    const d = await started(fake);
    const list = await d.scan();
    expect(list.map((n) => [n.ssid, n.bssid, n.channel, n.encryption])).toEqual([
      ['--help', '02:11:22:33:44:01', 1, 'wpa2-psk'],
      ['KVM-Lab\nX', '02:11:22:33:44:02', 6, 'wpa3-sae'],
      ['"; id; "', '02:11:22:33:44:03', 11, 'none'],
      ['a:b\\c', '02:11:22:33:44:04', 36, 'wpa2-psk'],
    ]);
    expect((await d.connect({ ssid: 'KVM-Lab\nX', key: 'kvm-lab-pass' })).ok).toBe(true);
    const props = addProperties(fake.calls.find((c) => c[2] === 'add')!);
    expect(props.get('802-11-wireless.ssid')).toBe('KVM-Lab\nX');
    expect(props.get('802-11-wireless-security.key-mgmt')).toBe('sae');
  });

  it('rejoins a saved network by its profile, and a new key replaces the saved profile', async () => {
    const fake = nm();
    const d = await started(fake);
    expect((await d.connect({ ssid: 'Home:5G' })).ok).toBe(true);
    expect(fake.calls.some((c) => c[2] === 'add')).toBe(false);
    expect(fake.lines()).toContain(`nmcli --wait 45 connection up uuid ${HOME} ifname wlan0`);
    expect((await d.connect({ ssid: 'Home:5G', key: 'the-new-key' })).ok).toBe(true);
    expect(fake.lines()).toContain(`nmcli connection delete uuid ${HOME}`);
    expect(await d.saved()).toEqual([
      { ssid: 'Office', encryption: 'wpa3-sae' },
      { ssid: 'Home:5G', encryption: 'wpa2-psk' },
    ]);
  });

  it('refuses an interface name nmcli would read as help or an option', async () => {
    for (const name of ['help', 'h', '-w']) {
      const fake = fakeRunner((argv) =>
        argv.slice(1).join(' ') === '-t -f DEVICE,TYPE,STATE device'
          ? `${name.replace(/:/g, '\\:')}:wifi:disconnected\n`
          : undefined,
      );
      const d = new NmcliWifi({ runner: fake.run, monitor: null });
      await d.init();
      expect(d.availability().available, name).toBe(false);
      expect(d.availability().reason).toMatch(/cannot be given to nmcli/);
      await expect(d.scan()).rejects.toBeInstanceOf(SystemFeatureUnavailableError);
      expect(fake.calls).toHaveLength(1);
    }
  });

  it('maps a refused key to fail_type key and removes the profile the attempt left', async () => {
    const fake = nm({ connect: fail(fixture('err-wifi-secrets.txt')) });
    const d = await started(fake);
    const out = await d.connect({ ssid: 'Office2', key: 'wrong-key-1', hidden: true });
    expect(out).toEqual({
      ok: false,
      fail_type: 'key',
      message: 'Error: Connection activation failed: Secrets were required, but not provided.',
    });
    expect(fake.lines()).toContain(`nmcli connection delete uuid ${NEW}`);
    expect((await d.saved()).map((s) => s.ssid)).toEqual(['Home:5G', 'Office']);
    expect(await d.status()).toMatchObject({ state: 3, fail_type: 'key' });
  });

  it('answers a key nmcli refuses while adding the profile as the key’s fault', async () => {
    const fake = nm({
      add: fail('Error: failed to modify 802-11-wireless-security.psk: property is invalid.', 2),
    });
    const d = await started(fake);
    expect(await d.connect({ ssid: 'Office2', key: 'wrong-key-1', hidden: true })).toMatchObject({
      ok: false,
      fail_type: 'key',
    });
    expect(fake.lines().some((l) => l.includes('connection up'))).toBe(false);
  });

  it('maps a network that is not there to not-found', async () => {
    const d = await started(
      nm({
        connect: fail(
          'Error: Connection activation failed: No suitable device found for this connection (device wlan0 not available because profile is not compatible with device (no compatible access point found)).',
          4,
        ),
      }),
    );
    expect(await d.connect({ ssid: 'Nowhere', hidden: true })).toMatchObject({
      ok: false,
      fail_type: 'not-found',
    });
  });

  it('reads nmcli and NetworkManager failure messages', () => {
    expect(wifiFailType(fixture('err-wifi-supplicant-timeout.txt'), true)).toBe('key');
    expect(wifiFailType(fixture('err-wifi-no-network.txt'), true)).toBe('not-found');
    // after activation started: the network was seen, so with a key it is the key
    expect(wifiFailType(fixture('err-wifi-ssid-not-found.txt'), true)).toBe('key');
    expect(wifiFailType(fixture('err-wifi-ssid-not-found.txt'), false)).toBe('not-found');
    expect(wifiFailType('Error: 802-11-wireless-security.psk: property is invalid.', true)).toBe(
      'key',
    );
    expect(wifiFailType('Error: Timeout expired (45 seconds)', true)).toBeNull();
  });

  it('forgets the profiles of an SSID by UUID, radio on and off, disconnect when not active', async () => {
    const fake = nm();
    const d = await started(fake);
    expect(await d.forget('Home:5G')).toBe(true);
    expect(fake.lines().at(-1)).toBe(`nmcli connection delete uuid ${HOME}`);
    expect(await d.forget('Home:5G')).toBe(false);
    await d.setEnabled(false);
    expect(fake.lines().at(-1)).toBe('nmcli radio wifi off');
    expect((await d.status()).enabled).toBe(false);
    await d.disconnect();
    expect(fake.lines()).toContain('nmcli device disconnect wlan0');
  });

  it('removes a network joined with remember: false when disconnecting', async () => {
    const fake = nm();
    const d = await started(fake);
    await d.scan();
    await d.connect({ ssid: 'Cafe', remember: false });
    const props = addProperties(fake.calls.find((c) => c[2] === 'add')!);
    expect(props.get('802-11-wireless-security.psk')).toBeUndefined();
    expect(props.get('802-11-wireless-security.key-mgmt')).toBe('owe');
    expect(props.get('connection.autoconnect')).toBe('no');
    await d.disconnect();
    expect(fake.lines().at(-1)).toBe(`nmcli connection delete uuid ${NEW}`);
  });

  it('says "No Wi-Fi adapter" without a wifi device', async () => {
    const d = new NmcliWifi({
      runner: fakeRunner(() => fixture('device-list-no-wifi.txt')).run,
      monitor: null,
    });
    await d.init();
    expect(d.availability()).toEqual({ available: false, reason: 'No Wi-Fi adapter' });
    await expect(d.scan()).rejects.toBeInstanceOf(SystemFeatureUnavailableError);
    expect(await d.status()).toMatchObject({
      state: 0,
      adapter: 'none',
      adapter_label: 'No Wi-Fi adapter',
    });
    expect(await d.saved()).toEqual([]);
  });

  it('converts quality to dBm and security columns', () => {
    expect(qualityToDbm(100)).toBe(-40);
    expect(qualityToDbm(0)).toBe(-100);
    expect(encryptionOf('WPA3')).toEqual({ encryption: 'wpa3-sae', secure: true });
    expect(encryptionOf('WPA1')).toEqual({ encryption: 'wpa-psk', secure: true });
    expect(encryptionOf('WEP')).toEqual({ encryption: 'wep', secure: true });
    expect(encryptionOf('--')).toEqual({ encryption: 'none', secure: false });
  });
});

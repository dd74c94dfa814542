import { describe, expect, it } from 'vitest';
import { SystemFeatureUnavailableError } from '../system/none';
import { fail, fakeRunner, fixture, type Reply } from './test-support';
import { encryptionOf, NmcliWifi, qualityToDbm, wifiFailType } from './wifi';

const HOME = '0d5b1c6e-3a8f-4c2b-9e1d-2f6a7b8c9d01';
const OFFICE = '5e6f7a8b-1c2d-4e3f-8a9b-0c1d2e3f4a5b';
const NEW = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d';

/**
 * A NetworkManager with wlan0 and two saved networks. `connect` answers the join; a join that
 * succeeds (or fails: nmcli leaves the profile it made) adds profile NEW for that SSID.
 */
function nm(opts: { connect?: Reply; connected?: boolean; radio?: string } = {}) {
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
    if (a.startsWith('-t -f IN-USE,BSSID,SSID,CHAN,SIGNAL')) return fixture('wifi-list.txt');
    if (a === '-t -f NAME,UUID,TYPE,DEVICE connection show') {
      const own = [...profiles.keys()].map((u) => `x:${u}:802-11-wireless:`).join('\n');
      return `Wired connection 1:7f43423d-bd9c-38ca-ada1-efe4923c7c5b:802-3-ethernet:eth0\n${own}\n`;
    }
    if (
      a.startsWith(
        '-t -f 802-11-wireless.ssid,802-11-wireless-security.key-mgmt connection show uuid ',
      )
    ) {
      return profiles.get(argv.at(-1) ?? '');
    }
    if (a.startsWith('--wait 45 device wifi connect ')) {
      const ssid = argv[6] ?? '';
      if (!/^Error: No network/.test(typeof opts.connect === 'object' ? opts.connect.fail : '')) {
        profiles.set(
          NEW,
          `802-11-wireless.ssid:${ssid}\n802-11-wireless-security.key-mgmt:wpa-psk\n`,
        );
      }
      return opts.connect ?? `Device 'wlan0' successfully activated with '${NEW}'.\n`;
    }
    if (a.startsWith('connection delete')) {
      for (let i = 4; i < argv.length; i += 2) profiles.delete(argv[i] ?? '');
      return '';
    }
    if (a === 'device disconnect wlan0') return fail(fixture('err-disconnect-not-active.txt'), 6);
    return undefined;
  });
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

  it('joins with exactly this command and keeps the profile', async () => {
    const fake = nm();
    const d = await started(fake);
    const out = await d.connect({
      ssid: 'Guest Net',
      key: 'correct horse',
      bssid: '24:DE:C6:C5:0B:23',
    });
    expect(out.ok).toBe(true);
    expect(fake.calls.find((c) => c.includes('connect'))).toEqual([
      'nmcli',
      '--wait',
      '45',
      'device',
      'wifi',
      'connect',
      'Guest Net',
      'password',
      'correct horse',
      'ifname',
      'wlan0',
      'bssid',
      '24:DE:C6:C5:0B:23',
    ]);
    expect((await d.saved()).map((s) => s.ssid)).toContain('Guest Net');
  });

  it('maps a refused key to fail_type key and removes the profile the attempt left', async () => {
    const fake = nm({ connect: fail(fixture('err-wifi-secrets.txt')) });
    const d = await started(fake);
    const out = await d.connect({ ssid: 'Office2', key: 'wrong-key-1' });
    expect(out).toEqual({
      ok: false,
      fail_type: 'key',
      message: 'Error: Connection activation failed: Secrets were required, but not provided.',
    });
    expect(fake.lines()).toContain(`nmcli connection delete uuid ${NEW}`);
    expect((await d.saved()).map((s) => s.ssid)).toEqual(['Home:5G', 'Office']);
    expect(await d.status()).toMatchObject({ state: 3, fail_type: 'key' });
  });

  it('maps an unknown SSID to not-found', async () => {
    const d = await started(nm({ connect: fail(fixture('err-wifi-no-network.txt'), 10) }));
    expect(await d.connect({ ssid: 'Nowhere', key: 'whatever1' })).toMatchObject({
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
    await d.connect({ ssid: 'Cafe', remember: false });
    expect(fake.calls.find((c) => c.includes('connect'))).not.toContain('password');
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

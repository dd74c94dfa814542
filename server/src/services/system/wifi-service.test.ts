/**
 * The join's rules from the JSON body to nmcli's argv: the service over the nmcli driver, whose
 * runner serves the recorded fixtures and records every command (drivers/nmcli/test-support).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BadRequestError } from '../../errors';
import { SILENT_LOGGER } from '../../log';
import { NmcliWifi } from '../../drivers/wifi/nmcli';
import { fakeRunner, fixture, type FakeRunner } from '../../platform/nmcli/test-support';
import { SafeChanges } from './safe-change';
import { parseWifiJoin } from './wifi-input';
import { WifiIsBusyError, WifiService } from './wifi-service';

const NEW = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d';

let dir = '';
let safe: SafeChanges | null = null;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kvm-wifi-service-'));
});
afterEach(async () => {
  safe?.dispose();
  safe = null;
  await rm(dir, { recursive: true, force: true });
});

/** NetworkManager with wlan0, no saved network, the odd SSIDs in the air; every join works. */
function networkManager(): FakeRunner {
  let saved = '';
  return fakeRunner((argv) => {
    const a = argv.slice(1).join(' ');
    if (a === '-t -f DEVICE,TYPE,STATE device') return fixture('device-list.txt');
    if (a === 'radio wifi') return 'enabled\n';
    if (a.startsWith('-t -f GENERAL.STATE,GENERAL.CONNECTION')) {
      return fixture('device-show-wlan0-disconnected.txt');
    }
    if (a.startsWith('-t -f IN-USE,BSSID,SSID,CHAN,SIGNAL')) {
      return fixture('wifi-list-odd-ssids.txt');
    }
    if (a === '-t -f UUID,TYPE connection show') return saved ? `${NEW}:802-11-wireless\n` : '';
    if (a.startsWith('-t -f 802-11-wireless.ssid,')) return saved;
    if (argv[1] === 'connection' && argv[2] === 'add') {
      const ssid = argv[argv.indexOf('802-11-wireless.ssid') + 1] ?? '';
      saved = `802-11-wireless.ssid:${ssid}\n802-11-wireless-security.key-mgmt:wpa-psk\n`;
      return `Connection 'x' (${NEW}) successfully added.\n`;
    }
    if (a.startsWith('--wait 45 connection up uuid ')) return 'Connection successfully activated\n';
    if (a.startsWith('connection delete')) {
      saved = '';
      return '';
    }
    return undefined;
  });
}

async function service(fake: FakeRunner): Promise<WifiService> {
  const driver = new NmcliWifi({ runner: fake.run, monitor: null });
  await driver.init();
  safe = new SafeChanges({
    pendingPath: join(dir, 'network.pending.json'),
    timeoutS: 60,
    log: SILENT_LOGGER,
  });
  return new WifiService(driver, safe, SILENT_LOGGER);
}

/** A join as the route makes it: the body parsed, then handed to the service. */
async function joinParsed(wifi: WifiService, body: unknown) {
  return wifi.connect(parseWifiJoin(body));
}

/** The value nmcli reads after `name` in the recorded `connection add`, or undefined. */
function property(fake: FakeRunner, name: string): string | undefined {
  const add = fake.calls.find((c) => c[1] === 'connection' && c[2] === 'add');
  if (!add) return undefined;
  const at = add.indexOf(name);
  return at < 0 ? undefined : add[at + 1];
}

describe('WifiService join rules', () => {
  it('refuses keys no radio takes, before any nmcli command', async () => {
    const fake = networkManager();
    const wifi = await service(fake);
    const before = fake.calls.length;
    for (const key of [
      'line\nbreak-key',
      'tab\tkey-123',
      'caf\u00e9-password',
      'short',
      'x'.repeat(64),
      '0123456789abcdef'.repeat(4).slice(0, 63) + 'g',
      'nul\u0000key-123',
    ]) {
      const err = await joinParsed(wifi, { ssid: 'KVM-Lab', key, hidden: true }).catch(
        (e: unknown) => e,
      );
      expect(err, JSON.stringify(key)).toBeInstanceOf(BadRequestError);
      expect((err as Error).message).toBe(
        'key must be 8 to 63 printable ASCII characters or 64 hex digits',
      );
    }
    expect(fake.calls.length).toBe(before);
  });

  it('refuses SSIDs no radio or command line carries', async () => {
    const wifi = await service(networkManager());
    const refused: [string, string][] = [
      ['x'.repeat(33), 'ssid is longer than 32 bytes'],
      ['nul\u0000ssid', 'ssid cannot contain a NUL character'],
      ['lone \ud800 surrogate', 'ssid is not valid Unicode (an unpaired surrogate)'],
    ];
    for (const [ssid, message] of refused) {
      await expect(joinParsed(wifi, { ssid, hidden: true })).rejects.toThrow(message);
    }
  });

  it('joins SSIDs and keys that look like options or hold a line break, as they are', async () => {
    const cases: Record<string, unknown>[] = [
      { ssid: '--help', hidden: true },
      { ssid: 'KVM-Lab\nX', hidden: true, key: '-aaaaaaaaaa' },
      { ssid: '"; id; "', key: '--show-secrets' },
      { ssid: 'KVM-Lab\nX', key: ' spaces at both ends ' },
      { ssid: '--help', key: 'a'.repeat(64) },
    ];
    for (const body of cases) {
      const fake = networkManager();
      const wifi = await service(fake);
      await wifi.scan();
      expect(await joinParsed(wifi, body), JSON.stringify(body)).toMatchObject({
        result: 'success',
      });
      expect(property(fake, '802-11-wireless.ssid')).toBe(body['ssid']);
      expect(property(fake, '802-11-wireless.hidden')).toBe(body['hidden'] ? 'yes' : undefined);
      expect(property(fake, '802-11-wireless-security.psk')).toBe(body['key']);
      expect(fake.lines()).toContain(`nmcli --wait 45 connection up uuid ${NEW} ifname wlan0`);
      safe?.dispose();
    }
  });
});

describe('WifiService: one join at a time', () => {
  it('a second join while one runs answers WifiIsBusyError at once, and the first one goes on', async () => {
    const fake = networkManager();
    const wifi = await service(fake);
    const first = joinParsed(wifi, { ssid: '--help', hidden: true });
    const second = await joinParsed(wifi, { ssid: '--help', hidden: true }).catch(
      (e: unknown) => e,
    );
    expect(second).toBeInstanceOf(WifiIsBusyError);
    expect(second).toMatchObject({
      status: 409,
      message: 'Another Wi-Fi operation is in progress',
    });
    expect(await first).toMatchObject({ result: 'success' });
    // free again afterwards
    expect(await joinParsed(wifi, { ssid: '--help', hidden: true })).toMatchObject({
      result: 'success',
    });
  });
});

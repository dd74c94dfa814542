/**
 * Wi-Fi through NetworkManager (`nmcli`) on a real radio. docs/system.md "NetworkManager".
 *
 * Saved networks are NetworkManager's `802-11-wireless` connection profiles. A join that fails
 * answers an outcome (GL's `fail_type`), not an error, and removes the profile the attempt left
 * behind, so a wrong key is not kept as a saved network.
 *
 * A join is `nmcli connection add` of a profile whose SSID and key are property values
 * (`802-11-wireless.ssid <v>`, `802-11-wireless-security.psk <v>`), then `connection up uuid`:
 * nmcli takes a property's value as it is, so an SSID `--help` or `-a` joins that network. It
 * is never `device wifi connect <ssid>`, where nmcli reads a bare SSID as a help request, a
 * global option or a BSSID (args.ts).
 */
import type { WifiNetwork, WifiStatus } from '@kvm/protocol';
import type { Logger } from '../../log';
import { SystemFeatureUnavailableError } from '../types';
import type { Availability } from '../types';
import type { WifiConnectOutcome, WifiConnectRequest, WifiDriver } from './types';
import { isSafeIfname, isUuid } from '../../platform/nmcli/args';
import { DeviceWatch, spawnMonitor, type MonitorSpawner } from '../../platform/nmcli/monitor';
import { cLocaleRunner, failureText, said } from '../../platform/nmcli/command';
import { findDevices, NmcliError, unavailableReason } from '../../platform/nmcli/devices';
import { CommandError, type CommandRunner } from '../../process/run';
import { SerialQueue } from '../../sync/serial-queue';
import {
  deviceState,
  field,
  fields,
  parseRecords,
  parseTable,
  plain,
} from '../../platform/nmcli/terse';

export const NO_WIFI_DEVICE = 'No Wi-Fi adapter';

/** At most this many saved profiles are read (one `connection show` each). */
const MAX_SAVED = 32;

export interface NmcliWifiOptions {
  /** Default: the first Wi-Fi device NetworkManager manages. */
  interface?: string;
  runner?: CommandRunner;
  monitor?: MonitorSpawner | null;
  /** Seconds a join may take. Default 45. */
  connectWaitS?: number;
  log?: Logger;
}

/**
 * nmcli's SIGNAL is NetworkManager's 0-100 quality, made from dBm by a straight line from
 * -100 dBm (0) to -40 dBm (100) (libnm-core's level-to-quality); this is its inverse.
 */
export function qualityToDbm(quality: number): number {
  const q = Math.min(100, Math.max(0, quality));
  return Math.round(-100 + (q * 60) / 100);
}

/** nmcli's SECURITY column (`WPA1 WPA2`, `WPA3`, `WPA2 802.1X`, `WEP`, `OWE`, '') → ours. */
export function encryptionOf(security: string): { encryption: string; secure: boolean } {
  const t = new Set(
    security
      .trim()
      .split(/\s+/)
      .filter((s) => s !== '' && s !== '--'),
  );
  if (t.size === 0) return { encryption: 'none', secure: false };
  if (t.has('802.1X')) return { encryption: t.has('WPA3') ? 'wpa3-eap' : 'wpa2-eap', secure: true };
  if (t.has('WPA2')) return { encryption: 'wpa2-psk', secure: true };
  if (t.has('WPA3')) return { encryption: 'wpa3-sae', secure: true };
  if (t.has('WPA1')) return { encryption: 'wpa-psk', secure: true };
  if (t.has('WEP')) return { encryption: 'wep', secure: true };
  if (t.has('OWE')) return { encryption: 'owe', secure: false };
  return { encryption: [...t].join(' ').toLowerCase(), secure: true };
}

/** A profile's `802-11-wireless-security.key-mgmt` → ours. */
export function encryptionOfKeyMgmt(keyMgmt: string): string {
  switch (keyMgmt) {
    case '':
      return 'none';
    case 'none':
      return 'wep';
    case 'wpa-psk':
      return 'wpa2-psk';
    case 'sae':
      return 'wpa3-sae';
    case 'wpa-eap':
      return 'wpa2-eap';
    case 'owe':
      return 'owe';
    default:
      return keyMgmt;
  }
}

/**
 * What a failed `nmcli device wifi connect` means for the user (GL's `fail_type`): the network
 * is not there, or the key (or 802.1X credentials) was refused. Messages of nmcli and of
 * NetworkManager's device state reasons, in the C locale.
 *
 * "No network with SSID" is nmcli's own check against its scan list, before anything starts.
 * "The Wi-Fi network could not be found" comes after activation started, so the network was in
 * that list: NetworkManager reports a refused key this way too (it blocks the access point
 * after failed handshakes), hence a key given reads as the key's fault.
 */
export function wifiFailType(message: string, keyGiven: boolean): 'not-found' | 'key' | null {
  if (
    /No network with SSID|No access point with BSSID|no compatible access point|access point not found/i.test(
      message,
    )
  ) {
    return 'not-found';
  }
  if (
    /secrets were required|no valid secrets|802[.-]1x|psk|password|wep-key|key-mgmt/i.test(message)
  ) {
    return 'key';
  }
  if (/network could not be found|SSID not found/i.test(message)) {
    return keyGiven ? 'key' : 'not-found';
  }
  return null;
}

const SSID_FIELD = '802-11-wireless.ssid:';
const KEY_MGMT_LINE = '\n802-11-wireless-security.key-mgmt:';

/**
 * `nmcli -t -f 802-11-wireless.ssid,802-11-wireless-security.key-mgmt connection show uuid X`.
 * Multiline terse values are not escaped, and an SSID may hold a line break, so the SSID runs up
 * to the key-mgmt line (which no SSID can contain: that line alone is longer than 32 bytes).
 */
export function parseWifiProfile(stdout: string): { ssid: string; keyMgmt: string } {
  const text = stdout.replace(/\r?\n$/, '');
  if (!text.startsWith(SSID_FIELD)) return { ssid: '', keyMgmt: '' };
  const at = text.indexOf(KEY_MGMT_LINE);
  const ssid = at < 0 ? text.slice(SSID_FIELD.length) : text.slice(SSID_FIELD.length, at);
  const keyMgmt = at < 0 ? '' : (text.slice(at + KEY_MGMT_LINE.length).split('\n')[0] ?? '');
  return { ssid, keyMgmt: keyMgmt.trim() === '--' ? '' : keyMgmt.trim() };
}

/** The UUID in `connection add`'s "Connection 'NAME' (UUID) successfully added.". */
export function addedUuid(stdout: string): string | null {
  const m = /\(([0-9A-Fa-f-]{32,36})\) successfully added\.\s*$/.exec(stdout.trim());
  return m?.[1] && isUuid(m[1]) ? m[1] : null;
}

/** A profile's name: its SSID, control characters shown as `?` (the name is listed per line). */
export function profileName(ssid: string): string {
  // eslint-disable-next-line no-control-regex
  return ssid.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
}

/**
 * The `802-11-wireless-security.*` properties of a join, from what the last scan said of the
 * network (`encryption` as encryptionOf gives it; undefined for a hidden or unscanned one).
 * A string answers a network this form cannot join.
 */
export function securityProperties(
  encryption: string | undefined,
  key?: string,
): string[] | string {
  const sec = '802-11-wireless-security';
  if (encryption === 'wpa2-eap' || encryption === 'wpa3-eap') {
    return 'This is an 802.1X (enterprise) network: it needs an identity, not only a key';
  }
  if (encryption === 'owe') return [`${sec}.key-mgmt`, 'owe'];
  if (key === undefined) {
    // A secured network without a key: NetworkManager asks for one, and nobody answers.
    if (encryption && encryption !== 'none') return [`${sec}.key-mgmt`, 'wpa-psk'];
    return [];
  }
  if (encryption === 'wep') return [`${sec}.key-mgmt`, 'none', `${sec}.wep-key0`, key];
  if (encryption === 'wpa3-sae') return [`${sec}.key-mgmt`, 'sae', `${sec}.psk`, key];
  return [`${sec}.key-mgmt`, 'wpa-psk', `${sec}.psk`, key];
}

interface SavedProfile {
  uuid: string;
  ssid: string;
  encryption: string;
}

export class NmcliWifi implements WifiDriver {
  readonly name = 'nmcli';
  readonly adapter = 'nmcli' as const;
  private readonly run: CommandRunner;
  private readonly connectWaitS: number;
  private iface: string | null = null;
  private reason: string | null = 'NetworkManager has not been asked yet';
  private lastFail: 'not-found' | 'key' | null = null;
  private failed = false;
  /** SSID → encryption, from the last scan: which security a new profile gets. */
  private scanned = new Map<string, string>();
  /** Profiles joined with `remember: false`: removed on disconnect. */
  private readonly ephemeral = new Set<string>();
  private readonly watch: DeviceWatch;
  private readonly queue = new SerialQueue();

  constructor(private readonly opts: NmcliWifiOptions = {}) {
    this.run = opts.runner ?? cLocaleRunner;
    this.connectWaitS = opts.connectWaitS ?? 45;
    const spawner = opts.monitor === undefined ? spawnMonitor(opts.log) : opts.monitor;
    this.watch = new DeviceWatch(spawner, () =>
      this.iface ? ['device', 'monitor', this.iface] : null,
    );
  }

  availability(): Availability {
    return { available: this.reason === null, reason: this.reason };
  }

  async init(): Promise<void> {
    try {
      const devices = await findDevices(this.run, 'wifi');
      const wanted = this.opts.interface;
      const iface = wanted ? devices.find((d) => d === wanted) : devices[0];
      if (!iface) {
        this.reason = NO_WIFI_DEVICE;
        return;
      }
      if (!isSafeIfname(iface)) {
        this.reason = `The Wi-Fi interface name ${JSON.stringify(iface)} cannot be given to nmcli`;
        return;
      }
      this.iface = iface;
      this.reason = null;
    } catch (err) {
      this.reason = unavailableReason(err);
      this.opts.log?.warn({ reason: this.reason }, 'nmcli wifi unavailable');
    }
  }

  async dispose(): Promise<void> {
    this.watch.close();
  }

  onChange(listener: () => void): () => void {
    return this.watch.add(listener);
  }

  private device(): string {
    if (this.reason !== null || !this.iface) {
      throw new SystemFeatureUnavailableError(this.reason ?? NO_WIFI_DEVICE);
    }
    return this.iface;
  }

  async status(): Promise<WifiStatus> {
    const iface = this.iface;
    const base: WifiStatus = {
      state: 0,
      ssid: '',
      bssid: '',
      channel: 0,
      signal: 0,
      fail_type: this.lastFail,
      ipv4: { ip: '', dns: [], gateway: '' },
      enabled: false,
      adapter: 'nmcli',
      adapter_label: iface ?? NO_WIFI_DEVICE,
    };
    if (this.reason !== null || !iface) {
      // no radio to speak of: the console shows the reason, not an interface name
      return { ...base, adapter: 'none', adapter_label: this.reason ?? NO_WIFI_DEVICE };
    }
    const radio = await this.nmcli('radio wifi', ['radio', 'wifi']);
    base.enabled = radio.stdout.trim() === 'enabled';
    const shown = await this.nmcli('device show', [
      '-t',
      '-f',
      'GENERAL.STATE,GENERAL.CONNECTION,IP4.ADDRESS,IP4.GATEWAY,IP4.DNS',
      'device',
      'show',
      iface,
    ]);
    const dev = parseRecords(shown.stdout)[0];
    const state = deviceState(field(dev, 'GENERAL.STATE'));
    if (state === 100) base.state = 2;
    else if (state >= 40 && state < 100) base.state = 1;
    else base.state = this.failed ? 3 : 0;
    if (base.state === 2 || base.state === 1) {
      base.ssid = field(dev, 'GENERAL.CONNECTION');
      const list = await this.nmcli('device wifi list', [
        '-t',
        '-f',
        'IN-USE,BSSID,SSID,CHAN,SIGNAL',
        'device',
        'wifi',
        'list',
        '--rescan',
        'no',
        'ifname',
        iface,
      ]);
      const inUse = parseTable(list.stdout, 5).find(([use]) => use === '*');
      if (inUse) {
        const [, bssid = '', ssid = '', chan = '0', sig = '0'] = inUse;
        base.ssid = ssid || base.ssid;
        base.bssid = bssid.toLowerCase();
        base.channel = Number(chan) || 0;
        base.signal = qualityToDbm(Number(sig) || 0);
      }
    }
    if (base.state === 2) {
      base.ipv4 = {
        ip: plain(fields(dev, 'IP4.ADDRESS')[0] ?? '').split('/')[0] ?? '',
        dns: fields(dev, 'IP4.DNS').map(plain),
        gateway: plain(field(dev, 'IP4.GATEWAY')),
      };
    }
    return base;
  }

  async scan(): Promise<Omit<WifiNetwork, 'saved' | 'connected'>[]> {
    const iface = this.device();
    const { stdout } = await this.nmcli(
      'device wifi list',
      [
        '-t',
        '-f',
        'IN-USE,BSSID,SSID,CHAN,SIGNAL,SECURITY',
        'device',
        'wifi',
        'list',
        '--rescan',
        'yes',
        'ifname',
        iface,
      ],
      30_000,
    );
    const out: Omit<WifiNetwork, 'saved' | 'connected'>[] = [];
    const found = new Map<string, string>();
    for (const [, bssid = '', ssid = '', chan = '', sig = '', security = ''] of parseTable(
      stdout,
      6,
    )) {
      // hidden networks have no SSID to join by name
      if (ssid === '' || ssid === '--') continue;
      const quality = Math.min(100, Math.max(0, Number(sig) || 0));
      found.set(ssid, encryptionOf(security).encryption);
      out.push({
        ssid,
        bssid: bssid.toLowerCase(),
        channel: Number(chan) || 0,
        signal: qualityToDbm(quality),
        quality,
        ...encryptionOf(security),
      });
    }
    this.scanned = found;
    return out;
  }

  async saved(): Promise<{ ssid: string; encryption: string }[]> {
    if (this.reason !== null) return [];
    return (await this.profiles()).map(({ ssid, encryption }) => ({ ssid, encryption }));
  }

  private async profiles(): Promise<SavedProfile[]> {
    // No NAME column: a name may hold anything, a line break too.
    const { stdout } = await this.nmcli('connection show', [
      '-t',
      '-f',
      'UUID,TYPE',
      'connection',
      'show',
    ]);
    const uuids = parseTable(stdout, 2)
      .filter(([uuid = '', type]) => type === '802-11-wireless' && isUuid(uuid))
      .map(([uuid]) => uuid ?? '')
      .slice(0, MAX_SAVED);
    const out: SavedProfile[] = [];
    for (const uuid of uuids) {
      const shown = await this.nmcli('connection show', [
        '-t',
        '-f',
        '802-11-wireless.ssid,802-11-wireless-security.key-mgmt',
        'connection',
        'show',
        'uuid',
        uuid,
      ]);
      const { ssid, keyMgmt } = parseWifiProfile(shown.stdout);
      if (ssid) out.push({ uuid, ssid, encryption: encryptionOfKeyMgmt(keyMgmt) });
    }
    return out;
  }

  /**
   * A saved network without a new key, BSSID or hidden flag: its profile goes up. Otherwise a
   * new profile is added with every value a property value, and goes up; it replaces the older
   * profiles of that SSID when the join works, and is deleted when it does not.
   */
  connect(request: WifiConnectRequest): Promise<WifiConnectOutcome> {
    return this.exclusive(async () => {
      const iface = this.device();
      const saved = await this.profiles();
      const same = saved.filter((p) => p.ssid === request.ssid);
      const reuse =
        request.key === undefined && !request.hidden && !request.bssid ? same[0] : undefined;
      let uuid = reuse?.uuid ?? null;
      let added: string | null = null;
      let outcome: WifiConnectOutcome;
      try {
        if (!uuid) {
          const security = securityProperties(this.scanned.get(request.ssid), request.key);
          if (typeof security === 'string') throw new NmcliError(security);
          const before = new Set(saved.map((p) => p.uuid));
          uuid = added = await this.addProfile(request, security, before);
        }
        const { stdout } = await this.run(
          'nmcli',
          ['--wait', String(this.connectWaitS), 'connection', 'up', 'uuid', uuid, 'ifname', iface],
          { timeoutMs: (this.connectWaitS + 5) * 1000 },
        );
        outcome = { ok: true, fail_type: null, message: stdout.trim() };
      } catch (err) {
        const message =
          err instanceof CommandError
            ? failureText(err)
            : err instanceof Error
              ? err.message
              : String(err);
        outcome = { ok: false, fail_type: wifiFailType(message, !!request.key), message };
      }
      this.lastFail = outcome.fail_type;
      this.failed = !outcome.ok;
      if (added && !outcome.ok) {
        await this.deleteProfiles([added]).catch(() => undefined);
      } else if (added && request.remember === false) {
        this.ephemeral.add(added);
      } else if (added) {
        // the new key (or hidden flag, or BSSID) replaces what was saved for this SSID
        const older = same.map((p) => p.uuid).filter((u) => !this.ephemeral.has(u));
        await this.deleteProfiles(older).catch(() => undefined);
      }
      this.watch.changed();
      return outcome;
    });
  }

  /** `nmcli connection add` of a Wi-Fi profile: its UUID. Values only after property names. */
  private async addProfile(
    request: WifiConnectRequest,
    security: string[],
    before: Set<string>,
  ): Promise<string> {
    // prettier-ignore
    const args = [
      'connection', 'add',
      'connection.type', '802-11-wireless',
      'connection.id', profileName(request.ssid),
      'connection.autoconnect', request.remember === false ? 'no' : 'yes',
      '802-11-wireless.ssid', request.ssid,
      ...(request.hidden ? ['802-11-wireless.hidden', 'yes'] : []),
      ...(request.bssid ? ['802-11-wireless.bssid', request.bssid] : []),
      ...security,
    ];
    const { stdout } = await this.run('nmcli', args);
    const uuid = addedUuid(stdout);
    if (uuid) return uuid;
    // a version that words it otherwise: the profile of this SSID that was not there before
    const made = (await this.profiles()).find(
      (p) => !before.has(p.uuid) && p.ssid === request.ssid,
    );
    if (!made) throw new NmcliError(`nmcli connection add said no UUID: ${stdout.trim()}`);
    return made.uuid;
  }

  disconnect(): Promise<void> {
    return this.exclusive(async () => {
      const iface = this.device();
      try {
        await this.run('nmcli', ['device', 'disconnect', iface]);
      } catch (err) {
        // already disconnected is what was asked
        if (!(err instanceof CommandError && /not active/i.test(said(err)))) {
          throw stepError('device disconnect', err);
        }
      }
      this.lastFail = null;
      this.failed = false;
      const gone = [...this.ephemeral];
      this.ephemeral.clear();
      await this.deleteProfiles(gone).catch(() => undefined);
      this.watch.changed();
    });
  }

  setEnabled(enabled: boolean): Promise<void> {
    return this.exclusive(async () => {
      this.device();
      await this.nmcli('radio wifi', ['radio', 'wifi', enabled ? 'on' : 'off']);
      this.watch.changed();
    });
  }

  forget(ssid: string): Promise<boolean> {
    return this.exclusive(async () => {
      this.device();
      // by UUID: a profile's name need not be its SSID ("Home 1")
      const uuids = (await this.profiles()).filter((p) => p.ssid === ssid).map((p) => p.uuid);
      if (uuids.length === 0) return false;
      await this.deleteProfiles(uuids);
      for (const u of uuids) this.ephemeral.delete(u);
      this.watch.changed();
      return true;
    });
  }

  private async deleteProfiles(list: string[]): Promise<void> {
    const uuids = list.filter(isUuid);
    if (uuids.length === 0) return;
    await this.nmcli('connection delete', [
      'connection',
      'delete',
      ...uuids.flatMap((u) => ['uuid', u]),
    ]);
  }

  private async nmcli(
    step: string,
    args: string[],
    timeoutMs?: number,
  ): Promise<{ stdout: string }> {
    try {
      return await this.run('nmcli', args, timeoutMs ? { timeoutMs } : undefined);
    } catch (err) {
      throw stepError(step, err);
    }
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return this.queue.run(fn);
  }
}

function stepError(step: string, err: unknown): NmcliError {
  const text = err instanceof CommandError ? failureText(err) : String(err);
  return new NmcliError(`nmcli ${step} failed: ${text}`);
}

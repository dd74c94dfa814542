/**
 * Ethernet and hostname through NetworkManager (`nmcli`), the default network stack of
 * Raspberry Pi OS and Debian on SBCs. docs/system.md "NetworkManager" lists the commands.
 *
 * The settings live in the interface's connection profile (the active one, else the profile
 * bound to the interface): `apply()` modifies its `ipv4.*` properties and re-activates it. A
 * failing activation puts the captured previous properties back and activates again, so the
 * previous settings stay in force, then throws naming the step and what nmcli said.
 */
import { isIpv4, netmaskToPrefix } from '@kvm/protocol';
import type { Logger } from '../../log';
import { BadRequestError } from '../../errors';
import { SystemFeatureUnavailableError } from '../types';
import type { Availability } from '../types';
import { NetworkApplyError } from './types';
import type { EthernetSettings, EthernetStatus, NetworkDriver } from './types';
import { isSafeIfname, isUuid, nmcliReadsAsOption } from '../../platform/nmcli/args';
import { DeviceWatch, spawnMonitor, type MonitorSpawner } from '../../platform/nmcli/monitor';
import { cLocaleRunner, failureText } from '../../platform/nmcli/command';
import { findDevices, NmcliError, unavailableReason } from '../../platform/nmcli/devices';
import { CommandError, type CommandRunner } from '../../process/run';
import { SerialQueue } from '../../sync/serial-queue';
import {
  deviceState,
  field,
  fields,
  NM_DEVICE_STATE,
  parseRecords,
  parseTable,
  plain,
  splitCidr,
  splitList,
} from '../../platform/nmcli/terse';

/** A host name valid elsewhere that nmcli cannot set (it reads `help` as a help request). */
export class NmcliHostnameError extends BadRequestError {}

export interface NmcliOptions {
  /** The interface to manage; default: the first Ethernet device NetworkManager manages. */
  interface?: string;
  runner?: CommandRunner;
  /** `nmcli device monitor` for `onChange`; null: none (tests). */
  monitor?: MonitorSpawner | null;
  /** Seconds `connection up` may take (a DHCP lease included). Default 30. */
  upWaitS?: number;
  /** How long a new host name may take to show in `nmcli general hostname`. Default 3000 ms. */
  hostnameSettleMs?: number;
  log?: Logger;
}

/** The `ipv4.*` properties apply() changes, as `connection show` prints them. */
export interface Ipv4Profile {
  method: string;
  addresses: string[];
  gateway: string;
  dns: string[];
  ignoreAutoDns: boolean;
}

const PROFILE_FIELDS = [
  'ipv4.method',
  'ipv4.addresses',
  'ipv4.gateway',
  'ipv4.dns',
  'ipv4.ignore-auto-dns',
] as const;

export class NmcliNetwork implements NetworkDriver {
  readonly name = 'nmcli';
  private readonly run: CommandRunner;
  private readonly upWaitS: number;
  private iface: string | null = null;
  private reason: string | null = 'NetworkManager has not been asked yet';
  private readonly watch: DeviceWatch;
  /** Serialises apply and setHostname: one change at a time, whoever calls. */
  private readonly queue = new SerialQueue();

  constructor(private readonly opts: NmcliOptions = {}) {
    this.run = opts.runner ?? cLocaleRunner;
    this.upWaitS = opts.upWaitS ?? 30;
    const spawner = opts.monitor === undefined ? spawnMonitor(opts.log) : opts.monitor;
    this.watch = new DeviceWatch(spawner, () =>
      this.iface ? ['device', 'monitor', this.iface] : null,
    );
  }

  availability(): Availability {
    return { available: this.reason === null, reason: this.reason };
  }

  /** The interface managed (after init), or null. */
  get interfaceName(): string | null {
    return this.iface;
  }

  async init(): Promise<void> {
    try {
      const devices = await findDevices(this.run, 'ethernet');
      const wanted = this.opts.interface;
      if (wanted && !devices.includes(wanted)) {
        this.reason = `NetworkManager does not manage the Ethernet interface ${wanted}`;
        return;
      }
      const iface = wanted ?? devices[0];
      if (!iface) {
        this.reason = 'NetworkManager manages no Ethernet interface';
        return;
      }
      if (!isSafeIfname(iface)) {
        this.reason = `The Ethernet interface name ${JSON.stringify(iface)} cannot be given to nmcli`;
        return;
      }
      this.iface = iface;
      this.reason = null;
    } catch (err) {
      this.reason = unavailableReason(err);
      this.opts.log?.warn({ reason: this.reason }, 'nmcli network unavailable');
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
      throw new SystemFeatureUnavailableError(this.reason ?? 'No Ethernet interface');
    }
    return this.iface;
  }

  async status(): Promise<EthernetStatus> {
    const iface = this.device();
    const { stdout } = await this.nmcli('device show', [
      '-t',
      '-f',
      'GENERAL.HWADDR,GENERAL.STATE,GENERAL.CON-UUID,IP4.ADDRESS,IP4.GATEWAY,IP4.DNS',
      'device',
      'show',
      iface,
    ]);
    const dev = parseRecords(stdout)[0];
    const state = deviceState(field(dev, 'GENERAL.STATE'));
    const uuid = plain(field(dev, 'GENERAL.CON-UUID'));
    const profile = uuid ? await this.profile(uuid) : null;
    const { ip, netmask } = splitCidr(fields(dev, 'IP4.ADDRESS')[0] ?? '');
    return {
      interface: iface,
      mac_address: plain(field(dev, 'GENERAL.HWADDR')).toLowerCase(),
      // unavailable (20) and below: no carrier or not ready; disconnected (30) has a cable
      link: state >= NM_DEVICE_STATE.disconnected ? 'up' : 'down',
      mode: profile?.method === 'manual' ? 'static' : 'dhcp',
      ip_address: ip,
      netmask,
      gateway: plain(field(dev, 'IP4.GATEWAY')),
      dns_servers: fields(dev, 'IP4.DNS').map(plain),
      dns_manual: (profile?.dns.length ?? 0) > 0,
    };
  }

  /** GENERAL.HWADDR alone: one `device show`, without the profile status() reads too. */
  async macAddress(): Promise<string> {
    if (this.reason !== null || !this.iface) return '';
    const { stdout } = await this.nmcli('device show', [
      '-t',
      '-f',
      'GENERAL.HWADDR',
      'device',
      'show',
      this.iface,
    ]);
    return plain(field(parseRecords(stdout)[0], 'GENERAL.HWADDR')).toLowerCase();
  }

  /** The profile's `ipv4.*` properties. */
  async profile(uuid: string): Promise<Ipv4Profile> {
    const { stdout } = await this.nmcli('connection show', [
      '-t',
      '-f',
      PROFILE_FIELDS.join(','),
      'connection',
      'show',
      'uuid',
      uuid,
    ]);
    const rec = parseRecords(stdout)[0];
    return {
      method: field(rec, 'ipv4.method') || 'auto',
      addresses: splitList(fields(rec, 'ipv4.addresses').join(',')),
      gateway: plain(field(rec, 'ipv4.gateway')),
      dns: splitList(fields(rec, 'ipv4.dns').join(',')),
      ignoreAutoDns: field(rec, 'ipv4.ignore-auto-dns') === 'yes',
    };
  }

  /** The profile to change: the active one, else one bound to the interface. */
  private async connectionUuid(iface: string): Promise<string> {
    const shown = await this.nmcli('device show', [
      '-t',
      '-f',
      'GENERAL.CON-UUID',
      'device',
      'show',
      iface,
    ]);
    const active = plain(field(parseRecords(shown.stdout)[0], 'GENERAL.CON-UUID'));
    if (active && isUuid(active)) return active;
    const { stdout } = await this.nmcli('connection show', [
      '-t',
      '-f',
      'UUID,TYPE,DEVICE',
      'connection',
      'show',
    ]);
    const rows = parseTable(stdout, 3).filter(([, type]) => type === '802-3-ethernet');
    const own = rows.find(([, , dev]) => dev === iface) ?? rows[0];
    if (!own?.[0] || !isUuid(own[0])) {
      throw new NmcliError(`NetworkManager has no connection profile for ${iface}`);
    }
    return own[0];
  }

  apply(settings: EthernetSettings): Promise<void> {
    return this.exclusive(() => this.applyNow(settings));
  }

  private async applyNow(settings: EthernetSettings): Promise<void> {
    const iface = this.device();
    const uuid = await this.connectionUuid(iface);
    const previous = await this.profile(uuid);
    try {
      await this.run('nmcli', modifyArgs(uuid, settings));
    } catch (err) {
      // NetworkManager commits a modify whole or not at all: nothing to restore
      throw applyError('connection modify', err, null);
    }
    try {
      await this.up(uuid);
    } catch (err) {
      let restored: string | null = 'the previous settings are back in force';
      try {
        await this.nmcli('connection modify', restoreArgs(uuid, previous));
        await this.up(uuid);
      } catch (restoreErr) {
        restored = `restoring the previous settings failed too: ${said(restoreErr)}`;
      }
      this.watch.changed();
      throw applyError('connection up', err, restored);
    }
    this.watch.changed();
  }

  private async up(uuid: string): Promise<void> {
    await this.run('nmcli', ['--wait', String(this.upWaitS), 'connection', 'up', 'uuid', uuid], {
      timeoutMs: (this.upWaitS + 5) * 1000,
    });
  }

  async hostname(): Promise<string> {
    this.device();
    const { stdout } = await this.nmcli('general hostname', ['general', 'hostname']);
    return stdout.trim();
  }

  /**
   * `nmcli general hostname <name>` reads the name bare: `h`..`help` would print the usage and
   * exit 0 (args.ts), and no other nmcli command sets the host name, so those four are refused
   * here. What nmcli answers afterwards must be the name asked for.
   */
  setHostname(name: string): Promise<void> {
    return this.exclusive(async () => {
      this.device();
      if (nmcliReadsAsOption(name)) {
        throw new NmcliHostnameError(
          `nmcli reads the host name '${name}' as a request for help: choose another name`,
        );
      }
      try {
        await this.run('nmcli', ['general', 'hostname', name]);
      } catch (err) {
        throw stepError('general hostname', err, null);
      }
      this.watch.changed();
      // NetworkManager takes the new name over from hostnamed a moment later.
      const deadline = Date.now() + (this.opts.hostnameSettleMs ?? 3000);
      for (;;) {
        const now = (await this.nmcli('general hostname', ['general', 'hostname'])).stdout.trim();
        if (now === name) return;
        if (Date.now() >= deadline) {
          throw new NmcliError(`nmcli general hostname left the host name '${now}', not '${name}'`);
        }
        await new Promise((r) => setTimeout(r, 200));
      }
    });
  }

  /** A read: a failure becomes an NmcliError naming the command. */
  private async nmcli(step: string, args: string[]): Promise<{ stdout: string }> {
    try {
      return await this.run('nmcli', args);
    } catch (err) {
      throw stepError(step, err, null);
    }
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return this.queue.run(fn);
  }
}

/** `nmcli connection modify` argv for `settings`. */
export function modifyArgs(uuid: string, s: EthernetSettings): string[] {
  const dns = s.dns_servers && s.dns_servers.length > 0 ? s.dns_servers : null;
  // The service validated these; the driver still puts nothing but dotted quads on the line.
  for (const [what, value] of [
    ['ip_address', s.mode === 'static' ? s.ip_address : undefined],
    ['gateway', s.mode === 'static' ? s.gateway || undefined : undefined],
    ...(dns ?? []).map((d) => ['dns_servers', d] as const),
  ] as const) {
    if (value !== undefined && !isIpv4(value ?? '')) {
      throw new NmcliError(`${what} is not an IPv4 address: ${JSON.stringify(value)}`);
    }
  }
  const dnsArgs = [
    'ipv4.dns',
    dns ? dns.join(',') : '',
    'ipv4.ignore-auto-dns',
    dns ? 'yes' : 'no',
  ];
  if (s.mode === 'static') {
    const prefix = netmaskToPrefix(s.netmask ?? '');
    if (!s.ip_address || prefix === null) {
      // the service validates first; this is the driver refusing to guess
      throw new NmcliError('A static address needs ip_address and a valid netmask');
    }
    return [
      'connection',
      'modify',
      'uuid',
      uuid,
      'ipv4.method',
      'manual',
      'ipv4.addresses',
      `${s.ip_address}/${prefix}`,
      'ipv4.gateway',
      s.gateway ?? '',
      ...dnsArgs,
    ];
  }
  return [
    'connection',
    'modify',
    'uuid',
    uuid,
    'ipv4.method',
    'auto',
    'ipv4.addresses',
    '',
    'ipv4.gateway',
    '',
    ...dnsArgs,
  ];
}

/** `nmcli connection modify` argv that puts a captured profile back. */
export function restoreArgs(uuid: string, p: Ipv4Profile): string[] {
  return [
    'connection',
    'modify',
    'uuid',
    uuid,
    'ipv4.method',
    p.method,
    'ipv4.addresses',
    p.addresses.join(','),
    'ipv4.gateway',
    p.gateway,
    'ipv4.dns',
    p.dns.join(','),
    'ipv4.ignore-auto-dns',
    p.ignoreAutoDns ? 'yes' : 'no',
  ];
}

function said(err: unknown): string {
  if (err instanceof CommandError) return failureText(err);
  return err instanceof Error ? err.message : String(err);
}

/** A failed apply: the wire name netns uses too, so the console reads one error for both. */
function applyError(step: string, err: unknown, after: string | null): NetworkApplyError {
  const tail = after ? ` (${after})` : '';
  return new NetworkApplyError(`nmcli ${step} failed: ${said(err)}${tail}`);
}

function stepError(step: string, err: unknown, after: string | null): NmcliError {
  if (err instanceof NmcliError) return err;
  const tail = after ? ` (${after})` : '';
  return new NmcliError(`nmcli ${step} failed: ${said(err)}${tail}`);
}

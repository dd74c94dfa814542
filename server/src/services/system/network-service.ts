/**
 * Ethernet settings and the host name (GL §5.4 and §5.13 on the wire, SPEC 5's address rules):
 * takes what the route parsed (network-input.ts), applies it through the NetworkDriver, keeps risky
 * changes only once confirmed (safe-change.ts) and persists the kept settings atomically in
 * `<data_dir>/system/network.json`, applied again at every start when the file exists.
 */
import { join } from 'node:path';
import type { HostnameResult, NetworkConfigWire, SetNetworkConfigResult } from '@kvm/protocol';
import type { Logger } from '../../log';
import { JsonFile } from '../../storage/json-store';
import { SystemFeatureUnavailableError } from '../../drivers/types';
import type { EthernetSettings, EthernetStatus, NetworkDriver } from '../../drivers/network/types';
import { withCurrentDns, type EthernetRequest } from './network-input';
import { SafeChanges, type SafeChangeClock } from './safe-change';

/** Where the console is reached: the request's scheme and the listener's port. */
export interface RequestOrigin {
  protocol: string;
  port: number;
  localAddress?: string;
}

interface SavedNetwork {
  settings: EthernetSettings | null;
}

function parseSaved(raw: unknown): SavedNetwork {
  if (raw === undefined) return { settings: null };
  const s = (raw as { settings?: unknown } | null)?.settings;
  if (!s || typeof s !== 'object') throw new Error('no settings');
  const settings = s as EthernetSettings;
  if (settings.mode !== 'dhcp' && settings.mode !== 'static') throw new Error('bad mode');
  return { settings };
}

/** The settings `status` describes, as they would be applied again. */
export function settingsOf(status: EthernetStatus): EthernetSettings {
  return status.mode === 'static'
    ? {
        mode: 'static',
        ip_address: status.ip_address,
        netmask: status.netmask,
        gateway: status.gateway,
        dns_servers: status.dns_manual ? [...status.dns_servers] : null,
      }
    : { mode: 'dhcp', dns_servers: status.dns_manual ? [...status.dns_servers] : null };
}

/** Whether going from `a` to `b` can move the device away from its address or route. */
export function isRiskyChange(a: EthernetSettings, b: EthernetSettings): boolean {
  if (a.mode !== b.mode) return true;
  if (b.mode === 'dhcp') return false;
  return a.ip_address !== b.ip_address || a.netmask !== b.netmask || a.gateway !== b.gateway;
}

export class NetworkService {
  readonly safe: SafeChanges;
  private readonly saved: JsonFile<SavedNetwork>;
  private settings: EthernetSettings | null = null;
  /**
   * Why the kept settings could not be put back at this start, or null: the server tells the
   * launcher (main.ts READY), which does not keep an upgrade that starts like this (issue 21).
   */
  startProblem: string | null = null;

  constructor(
    readonly driver: NetworkDriver,
    private readonly opts: {
      dataDir: string;
      confirmTimeoutS: number;
      log: Logger;
      clock?: SafeChangeClock;
    },
  ) {
    const dir = join(opts.dataDir, 'system');
    this.saved = new JsonFile(join(dir, 'network.json'), parseSaved, { maxBytes: 64 * 1024 });
    this.safe = new SafeChanges({
      pendingPath: join(dir, 'network.pending.json'),
      timeoutS: opts.confirmTimeoutS,
      log: opts.log,
      ...(opts.clock ? { clock: opts.clock } : {}),
    });
  }

  /**
   * At start: the kept settings are applied again (only when saved); an Ethernet change left
   * pending by a restart is reverted to them. Failures are logged, never fatal: the device keeps
   * what the system has, and `startProblem` says why (an upgrade that starts like this is not
   * healthy: main.ts, launcher.ts). Wi-Fi's pending change is recovered by the WifiService.
   */
  async start(recoverWifi?: (previous: unknown) => Promise<void>): Promise<void> {
    const { log } = this.opts;
    try {
      this.settings = (await this.saved.load()).settings;
    } catch (err) {
      log.error({ err }, 'network: saved settings unreadable, set aside');
      await this.saved.setAside().catch(() => undefined);
    }
    let reverted = false;
    await this.safe.recover(async (record) => {
      if (record.kind === 'wifi') {
        await recoverWifi?.(record.previous);
        return;
      }
      const previous = this.settings ?? (record.previous as EthernetSettings | null);
      try {
        if (previous && this.driver.availability().available) await this.driver.apply(previous);
      } catch (err) {
        this.startProblem = `the network settings could not be restored: ${messageOf(err)}`;
        throw err;
      }
      reverted = true;
    });
    if (reverted || !this.settings || !this.driver.availability().available) return;
    try {
      await this.driver.apply(this.settings);
      this.startProblem = null;
    } catch (err) {
      this.startProblem = `the saved network settings could not be applied: ${messageOf(err)}`;
      log.error({ err }, 'network: saved settings could not be applied at start');
    }
  }

  async config(): Promise<{ success: true; config: NetworkConfigWire }> {
    const availability = this.driver.availability();
    const [status, hostname] = await Promise.all([
      this.driver.status(),
      this.driver.hostname().catch(() => ''),
    ]);
    return {
      success: true,
      config: {
        is_dhcp: status.mode === 'dhcp',
        ip_address: status.ip_address,
        netmask: status.netmask,
        gateway: status.gateway,
        dns_servers: status.dns_servers,
        interface: status.interface,
        mac_address: status.mac_address,
        state: status.link === 'up' && status.ip_address ? 'online' : 'offline',
        protocol: status.mode,
        dns_server1: status.dns_servers[0] ?? '',
        dns_server2: status.dns_servers[1] ?? '',
        dns_manual: status.dns_manual,
        hostname,
        link: status.link,
        available: availability.available,
        unavailable_reason: availability.reason,
        driver: this.driver.name,
        pending: this.safe.pending(),
      },
    };
  }

  /** `set_network_config` (parsed by the route): applied (risky: pending until confirmed). */
  async set(request: EthernetRequest, origin: RequestOrigin): Promise<SetNetworkConfigResult> {
    const status = await this.driver.status();
    const current = this.settings ?? settingsOf(status);
    const next = withCurrentDns(request, current);
    const availability = this.driver.availability();
    if (!availability.available) {
      throw new SystemFeatureUnavailableError(availability.reason ?? 'Network is not managed here');
    }
    if (!isRiskyChange(current, next)) {
      await this.safe.exclusive(async () => {
        await this.driver.apply(next);
        await this.keep(next);
      });
      return { success: true, pending: null };
    }
    const pending = await this.safe.run({
      kind: 'ethernet',
      previous: current,
      previous_address: status.ip_address ? urlOf(origin, status.ip_address) : null,
      apply: () => this.driver.apply(next),
      newAddress: async () => {
        const after = await this.driver.status();
        return after.ip_address ? urlOf(origin, after.ip_address) : null;
      },
      keep: () => this.keep(next),
      revert: () => this.driver.apply(current),
    });
    return { success: true, pending };
  }

  async hostname(): Promise<HostnameResult> {
    return { success: true, hostname: await this.driver.hostname() };
  }

  /** `set_hostname` with a name the route checked (network-input.ts `parseHostname`). */
  async setHostname(name: string): Promise<HostnameResult> {
    await this.driver.setHostname(name);
    return { success: true, hostname: await this.driver.hostname() };
  }

  dispose(): void {
    this.safe.dispose();
  }

  private async keep(settings: EthernetSettings): Promise<void> {
    await this.saved.save({ settings });
    this.settings = settings;
  }
}

export function urlOf(origin: RequestOrigin, ip: string): string {
  const defaultPort = origin.protocol === 'https' ? 443 : 80;
  const port = origin.port && origin.port !== defaultPort ? `:${origin.port}` : '';
  return `${origin.protocol}://${ip}${port}/`;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

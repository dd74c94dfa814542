/**
 * The developer targets' network (docs/system.md "Network namespaces"): the device's Ethernet
 * is `eth0` in a network namespace this server creates and owns, joined by a veth pair to
 * `lan0` in a second, "LAN" namespace where dnsmasq plays the home router (DHCP and DNS on
 * 192.168.8.1/24, GL's default LAN). DHCP (udhcpc), static addresses (`ip`) and DNS (the
 * namespace's resolv.conf) are real; the host's network and the server's own listener are
 * never touched.
 *
 * Names come from a hash of the data folder, so servers and parallel tests never collide and a
 * restarted server finds (and removes) what a crashed one left. Every change runs in one
 * exclusive region and either succeeds or restores what was in force before, then throws
 * `NetworkApplyError` naming the step and what the command said.
 */
import { mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { netmaskToPrefix, prefixToNetmask } from '@kvm/protocol';
import type { Logger } from '../../log';
import { CommandError, type CommandRunner, runCommand } from '../../process/run';
import { findExecutable, type Supervisor } from '../../process/supervisor';
import { SerialQueue } from '../../sync/serial-queue';
import { atomicWriteFile } from '../../storage/atomic';
import { emptyEthernetStatus } from './disabled';
import { SystemFeatureUnavailableError } from '../types';
import type { Availability } from '../types';
import { NetworkApplyError } from './types';
import type { EthernetSettings, EthernetStatus, NetworkDriver } from './types';
import {
  dnsmasqSupervisor,
  ipMonitorSupervisor,
  startDnsmasq,
  udhcpcSupervisor,
} from '../../platform/netns/daemons';
import { LEASE_SCRIPT } from '../../platform/netns/lease-script';
import { ConsoleBridge, type ConnectionSink } from '../../platform/netns/console-bridge';
import {
  DEV_IFACE,
  LAN,
  LAN_IFACE,
  NETNS_ETC,
  type NetnsNames,
  netnsNames,
  removeNamespaces,
} from '../../platform/netns/namespaces';
import {
  isHostLabel,
  type Lease,
  parseAddrShow,
  parseDefaultGateway,
  parseLeaseLine,
  parseResolvConf,
  resolvConf,
  settingsProblem,
} from '../../platform/netns/parse';

// Where they were before the namespace plumbing moved to platform/netns (tests and e2e import them here).
export { NetworkApplyError } from './types';
export { DEV_IFACE, LAN, LAN_IFACE, NETNS_ETC, type NetnsNames, netnsNames };

export const NEEDS_ROOT =
  'Network namespaces need root: the network group cannot manage the network here';

export const DEFAULT_HOSTNAME = 'glkvm';

/** Each `ip` command: it talks to the kernel, seconds would mean something is stuck. */
const COMMAND_TIMEOUT_MS = 5000;
const DHCP_TIMEOUT_MS = 10_000;
const CHANGE_DEBOUNCE_MS = 50;

export interface NetnsNetworkOptions {
  dataDir: string;
  /** The system root: the hostname is `<root>/etc/hostname`. */
  root: string;
  log: Logger;
  /** Start the namespaces in the background at init (qemu) or at first use (testbed). */
  eager: boolean;
  /** Tests inject a runner that fails one step. */
  runner?: CommandRunner;
  /** How long `apply()` waits for a DHCP lease. */
  dhcpTimeoutMs?: number;
}

interface Previous {
  settings: EthernetSettings;
  status: EthernetStatus;
}

type LeaseWaiter = { resolve: (lease: Lease) => void; reject: (err: Error) => void };

export class NetnsNetwork implements NetworkDriver {
  readonly name = 'netns';
  readonly names: NetnsNames;
  private readonly opts: NetnsNetworkOptions;
  private readonly log: Logger;
  private readonly runner: CommandRunner;
  private readonly runDir: string;
  private readonly dhcpTimeoutMs: number;
  /** Why this machine cannot do it (no root, a missing program), once known. */
  private unavailable: string | null = null;
  private up: Promise<void> | null = null;
  private startedOnce = false;
  private disposed = false;
  private applied: EthernetSettings = { mode: 'dhcp', dns_servers: null };
  private lease: Lease | null = null;
  private lastLeaseProblem = '';
  private dnsmasq: Supervisor | null = null;
  private udhcpc: Supervisor | null = null;
  private monitor: Supervisor | null = null;
  /** The console inside the device's namespace (attachConsole; platform/netns/console-bridge.ts). */
  private console: { sink: ConnectionSink; maxConnections: number } | null = null;
  private bridge: ConsoleBridge | null = null;
  private readonly leaseWaiters = new Set<LeaseWaiter>();
  private readonly listeners = new Set<() => void>();
  private changeTimer: NodeJS.Timeout | null = null;
  /** One change at a time: a second waits for the first (the service answers busy before). */
  private readonly changes = new SerialQueue();
  /**
   * resolv.conf writes, one at a time, each with what is in force when it runs (a lease's write
   * and an apply's overlapped at start and renamed one shared temp file twice: ENOENT, issue 21).
   */
  private readonly resolvWrites = new SerialQueue();

  constructor(opts: NetnsNetworkOptions) {
    this.opts = opts;
    this.log = opts.log;
    this.runner = opts.runner ?? runCommand;
    this.names = netnsNames(opts.dataDir);
    this.runDir = join(opts.dataDir, 'run', 'netns');
    this.dhcpTimeoutMs = opts.dhcpTimeoutMs ?? DHCP_TIMEOUT_MS;
    if (process.getuid?.() !== 0) this.unavailable = NEEDS_ROOT;
    else {
      const missing = ['ip', 'dnsmasq', 'udhcpc'].filter((c) => !findExecutable(c));
      if (missing.length > 0) {
        this.unavailable = `The network namespaces need ${missing.join(', ')} (not installed)`;
      }
    }
  }

  private get paths() {
    const d = this.runDir;
    return {
      script: join(d, 'udhcpc.script'),
      leases: join(d, 'dnsmasq.leases'),
      dnsmasqPid: join(d, 'dnsmasq.pid'),
      udhcpcPid: join(d, 'udhcpc.pid'),
      monitorPid: join(d, 'monitor.pid'),
      etc: join(NETNS_ETC, this.names.dev),
      resolv: join(NETNS_ETC, this.names.dev, 'resolv.conf'),
      // resolv.conf's temp files: beside the namespace's folder, not in it (writeResolvNow),
      // and this namespace's alone, so a start and the teardown can clear what a kill left
      etcTmp: join(NETNS_ETC, `.${this.names.dev}.tmp`),
      hostname: join(this.opts.root, 'etc', 'hostname'),
    };
  }

  availability(): Availability {
    return this.unavailable
      ? { available: false, reason: this.unavailable }
      : { available: true, reason: null };
  }

  // --- lifecycle ----------------------------------------------------------------------------

  async init(): Promise<void> {
    if (this.unavailable) return;
    // A crashed server's namespaces (and the daemons inside) go first.
    await removeNamespaces(this.run, this.names).catch((err: Error) =>
      this.log.warn({ err: err.message }, 'netns: removing stale namespaces failed'),
    );
    if (this.opts.eager) {
      this.ensureUp().catch((err: Error) =>
        this.log.warn({ err: err.message }, 'netns: network start failed'),
      );
    }
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    for (const w of this.leaseWaiters) w.reject(new NetworkApplyError('The network is stopping'));
    this.leaseWaiters.clear();
    if (this.changeTimer) clearTimeout(this.changeTimer);
    this.changeTimer = null;
    await this.up?.catch(() => undefined);
    await this.changes.idle();
    if (!this.startedOnce) return;
    await this.teardown();
  }

  /** Resolves once the namespaces are up (started now if they are not); the apps run inside. */
  async ensureUp(): Promise<void> {
    if (this.unavailable) throw new SystemFeatureUnavailableError(this.unavailable);
    if (this.disposed) throw new NetworkApplyError('The network is stopped');
    this.up ??= this.start().catch((err: unknown) => {
      this.up = null;
      throw err;
    });
    return this.up;
  }

  private async start(): Promise<void> {
    const t0 = performance.now();
    const { dev, lan, mac } = this.names;
    this.startedOnce = true;
    await mkdir(this.runDir, { recursive: true, mode: 0o700 });
    await atomicWriteFile(this.paths.script, LEASE_SCRIPT, 0o700);
    await removeNamespaces(this.run, this.names);
    await rm(this.paths.etcTmp, { recursive: true, force: true });
    try {
      await this.step('create namespace', 'ip', ['netns', 'add', dev]);
    } catch (err) {
      if (/not permitted|permission denied/i.test((err as Error).message)) {
        this.unavailable = NEEDS_ROOT;
        this.changed();
        throw new SystemFeatureUnavailableError(NEEDS_ROOT);
      }
      throw err;
    }
    try {
      await this.step('create namespace', 'ip', ['netns', 'add', lan]);
      // Both ends are made inside their namespaces: no name ever shows in the host's.
      // prettier-ignore
      await this.step('create veth', 'ip', [
        'link', 'add', 'name', DEV_IFACE, 'address', mac, 'netns', dev,
        'type', 'veth', 'peer', 'name', LAN_IFACE, 'netns', lan,
      ]);
      // prettier-ignore
      await this.step('LAN address', 'ip', [
        '-n', lan, 'addr', 'add', `${LAN.router}/${LAN.prefix}`, 'dev', LAN_IFACE,
      ]);
      const links: [string, string][] = [
        [lan, 'lo'],
        [lan, LAN_IFACE],
        [dev, 'lo'],
        [dev, DEV_IFACE],
      ];
      for (const [ns, ifname] of links) {
        await this.step('link up', 'ip', ['-n', ns, 'link', 'set', ifname, 'up']);
      }
      await this.writeResolv();
      await this.startDnsmasq();
      await this.startMonitor();
      // The initial mode is DHCP; the network service re-applies saved settings over it.
      await this.startUdhcpc(await this.hostname());
    } catch (err) {
      await this.teardown().catch(() => undefined);
      throw this.toApplyError(err);
    }
    this.log.info({ dev, lan, ms: Math.round(performance.now() - t0) }, 'netns network up');
    await this.startBridge();
  }

  /**
   * Serves the device's console inside its namespace too (port 443 on every address there):
   * main.ts gives the sink (its current HTTPS server) once it listens. Started now if the
   * namespaces are up, else when they come up; stopped before they go.
   */
  async attachConsole(sink: ConnectionSink, maxConnections: number): Promise<void> {
    this.console = { sink, maxConnections };
    if (this.up && !this.disposed) {
      await this.up.catch(() => undefined);
      await this.startBridge();
    }
  }

  private async startBridge(): Promise<void> {
    if (!this.console || this.bridge || this.disposed) return;
    const bridge = new ConsoleBridge({
      namespace: this.names.dev,
      runDir: this.runDir,
      sink: this.console.sink,
      maxConnections: this.console.maxConnections,
      log: this.log,
    });
    this.bridge = bridge;
    // The console on the host does not depend on it: a failure is logged, not thrown.
    await bridge
      .start()
      .catch((err: Error) => this.log.warn({ err: err.message }, 'netns: console bridge'));
  }

  /**
   * Stops the daemons and deletes both namespaces, /etc/netns/<dev> and its temp folder.
   * Idempotent.
   */
  private async teardown(): Promise<void> {
    const bridge = this.bridge;
    this.bridge = null;
    await bridge?.stop();
    const sups = [this.udhcpc, this.dnsmasq, this.monitor];
    this.udhcpc = this.dnsmasq = this.monitor = null;
    await Promise.allSettled(sups.map((s) => s?.ensureStopped()));
    this.lease = null;
    await removeNamespaces(this.run, this.names).catch((err: Error) =>
      this.log.warn({ err: err.message }, 'netns: removing the namespaces failed'),
    );
    await rm(this.paths.etc, { recursive: true, force: true });
    await rm(this.paths.etcTmp, { recursive: true, force: true });
  }

  private async startDnsmasq(): Promise<void> {
    const p = this.paths;
    const sup = dnsmasqSupervisor(
      this.names.lan,
      { leases: p.leases, pidfile: p.dnsmasqPid },
      this.log,
    );
    this.dnsmasq = sup;
    await startDnsmasq(sup);
  }

  /** Link and address changes made by anyone (a cable pulled in the LAN namespace) → onChange. */
  private async startMonitor(): Promise<void> {
    const sup = ipMonitorSupervisor(this.names.dev, this.paths.monitorPid);
    sup.on('output', () => this.changed());
    this.monitor = sup;
    await sup.ensureStarted();
  }

  private async startUdhcpc(hostname: string, requestIp?: string): Promise<void> {
    const sup = udhcpcSupervisor(this.names.dev, {
      script: this.paths.script,
      pidfile: this.paths.udhcpcPid,
      hostname,
      requestIp,
    });
    sup.on('output', (line, stream) => this.onUdhcpcLine(sup, line, stream));
    this.udhcpc = sup;
    this.lastLeaseProblem = '';
    await sup.ensureStarted();
  }

  private async stopUdhcpc(): Promise<void> {
    const sup = this.udhcpc;
    this.udhcpc = null;
    await sup?.ensureStopped();
    this.lease = null;
  }

  private onUdhcpcLine(sup: Supervisor, line: string, stream: 'stdout' | 'stderr'): void {
    this.log.debug({ netns: this.names.dev, stream, line }, 'udhcpc');
    // A stopped udhcpc's last words (its deconfig) say nothing about the new one.
    if (sup !== this.udhcpc) return;
    const ev = parseLeaseLine(line);
    if (!ev) return;
    switch (ev.kind) {
      case 'bound':
        this.lease = ev.lease;
        this.lastLeaseProblem = '';
        void this.writeResolv()
          .catch((err: Error) => this.log.warn({ err: err.message }, 'netns: resolv.conf'))
          .then(() => {
            for (const w of this.leaseWaiters) w.resolve(ev.lease);
            this.leaseWaiters.clear();
            this.changed();
          });
        break;
      case 'deconfig':
        this.lease = null;
        this.changed();
        break;
      case 'leasefail':
      case 'nak':
        this.lastLeaseProblem = ev.kind === 'nak' ? 'the server refused (NAK)' : 'no answer';
        break;
      case 'error': {
        const err = new NetworkApplyError(`DHCP ${ev.message}`);
        for (const w of this.leaseWaiters) w.reject(err);
        this.leaseWaiters.clear();
        this.lastLeaseProblem = ev.message;
        break;
      }
    }
  }

  /** Resolves with the next lease; register before starting udhcpc. */
  private nextLease(timeoutMs: number): Promise<Lease> {
    const p = new Promise<Lease>((resolve, reject) => {
      if (this.disposed) {
        reject(new NetworkApplyError('The network is stopping'));
        return;
      }
      const timer = setTimeout(() => {
        this.leaseWaiters.delete(waiter);
        const said = this.lastLeaseProblem || this.udhcpc?.recentOutput().slice(-2).join(' | ');
        reject(
          new NetworkApplyError(
            `DHCP: no lease within ${Math.round(timeoutMs / 1000)} s${said ? ` (${said})` : ''}`,
          ),
        );
      }, timeoutMs);
      const waiter: LeaseWaiter = {
        resolve: (l) => {
          clearTimeout(timer);
          resolve(l);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      this.leaseWaiters.add(waiter);
    });
    // The caller may fail before it awaits this (udhcpc did not start).
    p.catch(() => undefined);
    return p;
  }

  // --- verbs --------------------------------------------------------------------------------

  async status(): Promise<EthernetStatus> {
    if (this.unavailable) return emptyEthernetStatus();
    await this.ensureUp();
    return this.readStatus();
  }

  /**
   * eth0's address is the one `ensureUp` gives it (from the data folder's hash), so it is known
   * without making the namespaces: the testbed makes them at first use, not at every start.
   */
  async macAddress(): Promise<string> {
    return this.unavailable ? '' : this.names.mac;
  }

  async apply(settings: EthernetSettings): Promise<void> {
    const problem = settingsProblem(settings);
    if (problem) throw new NetworkApplyError(problem);
    await this.ensureUp();
    await this.exclusive(async () => {
      if (this.disposed) throw new NetworkApplyError('The network is stopped');
      const prev: Previous = { settings: this.applied, status: await this.readStatus() };
      const t0 = performance.now();
      try {
        if (settings.mode === 'static') await this.applyStatic(settings);
        else await this.applyDhcp();
        this.applied = { ...settings, dns_servers: settings.dns_servers?.slice() ?? null };
        await this.writeResolv();
        this.log.info(
          { mode: settings.mode, ms: Math.round(performance.now() - t0) },
          'netns: network settings applied',
        );
      } catch (err) {
        const error = this.toApplyError(err);
        this.log.warn({ err: error.message }, 'netns: apply failed, restoring the previous');
        if (!this.disposed) {
          await this.restore(prev).catch((e: Error) =>
            this.log.error({ err: e.message }, 'netns: restoring the previous settings failed'),
          );
        }
        throw error;
      } finally {
        this.changed();
      }
    });
  }

  /** The file's name when it is one host label (udhcpc sends it), else the default. */
  async hostname(): Promise<string> {
    try {
      const name = (await readFile(this.paths.hostname, 'utf8')).trim();
      return isHostLabel(name) ? name : DEFAULT_HOSTNAME;
    } catch {
      return DEFAULT_HOSTNAME;
    }
  }

  async setHostname(name: string): Promise<void> {
    if (!isHostLabel(name)) {
      throw new NetworkApplyError(`hostname: not a host name: ${JSON.stringify(name)}`);
    }
    if (this.unavailable) throw new SystemFeatureUnavailableError(this.unavailable);
    await this.exclusive(async () => {
      await atomicWriteFile(this.paths.hostname, `${name}\n`, 0o644);
      // Not started yet: udhcpc sends the new name when it starts.
      if (!this.up || this.disposed || this.applied.mode !== 'dhcp') return;
      await this.up;
      // The name goes to dnsmasq in the next DHCP request (udhcpc -x hostname:).
      const held = this.lease?.ip;
      await this.stopUdhcpc();
      const leased = this.nextLease(this.dhcpTimeoutMs);
      await this.startUdhcpc(name, held);
      await leased;
    });
    this.changed();
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  // --- applying -----------------------------------------------------------------------------

  private async applyStatic(s: EthernetSettings): Promise<void> {
    const ip = s.ip_address ?? '';
    const prefix = netmaskToPrefix(s.netmask ?? '');
    if (prefix === null) throw new NetworkApplyError(`netmask: not a netmask: ${s.netmask}`);
    const dev = this.names.dev;
    await this.stopUdhcpc();
    await this.step('addr flush', 'ip', ['-n', dev, 'addr', 'flush', 'dev', DEV_IFACE]);
    // prettier-ignore
    await this.step('addr add', 'ip', [
      '-n', dev, 'addr', 'add', `${ip}/${prefix}`, 'dev', DEV_IFACE,
    ]);
    if (s.gateway) {
      // prettier-ignore
      await this.step('route', 'ip', [
        '-n', dev, 'route', 'replace', 'default', 'via', s.gateway, 'dev', DEV_IFACE,
      ]);
    }
  }

  private async applyDhcp(): Promise<void> {
    // Already on DHCP with a lease: only the DNS servers change.
    if (this.applied.mode === 'dhcp' && this.lease && this.udhcpc?.state === 'running') return;
    await this.stopUdhcpc();
    // The static address goes at once; the lease brings the new one.
    await this.step('addr flush', 'ip', ['-n', this.names.dev, 'addr', 'flush', 'dev', DEV_IFACE]);
    const leased = this.nextLease(this.dhcpTimeoutMs);
    await this.startUdhcpc(await this.hostname());
    await leased;
  }

  /** Puts back what `prev` read from the system (best effort; the caller logs a failure). */
  private async restore(prev: Previous): Promise<void> {
    const { settings, status } = prev;
    const dev = this.names.dev;
    await this.stopUdhcpc();
    await this.run('ip', ['-n', dev, 'addr', 'flush', 'dev', DEV_IFACE]);
    this.applied = settings;
    if (settings.mode === 'static') {
      const prefix = netmaskToPrefix(status.netmask);
      if (status.ip_address && prefix !== null) {
        // prettier-ignore
        await this.run('ip', [
          '-n', dev, 'addr', 'add', `${status.ip_address}/${prefix}`, 'dev', DEV_IFACE,
        ]);
      }
      if (status.gateway) {
        // prettier-ignore
        await this.run('ip', [
          '-n', dev, 'route', 'replace', 'default', 'via', status.gateway, 'dev', DEV_IFACE,
        ]);
      }
    } else {
      // Ask for the address held before: dnsmasq gives it back.
      const leased = this.nextLease(this.dhcpTimeoutMs);
      await this.startUdhcpc(await this.hostname(), status.ip_address || undefined);
      await leased;
    }
    await this.writeResolv();
  }

  // --- reading ------------------------------------------------------------------------------

  private async readStatus(): Promise<EthernetStatus> {
    const dev = this.names.dev;
    const [addr, route, resolvText] = await Promise.all([
      this.run('ip', ['-j', '-n', dev, 'addr', 'show', 'dev', DEV_IFACE]),
      this.run('ip', ['-j', '-n', dev, 'route', 'show', 'default']),
      readFile(this.paths.resolv, 'utf8').catch(() => ''),
    ]);
    const iface = parseAddrShow(addr.stdout);
    return {
      interface: DEV_IFACE,
      mac_address: iface.mac,
      link: iface.link,
      mode: this.applied.mode,
      ip_address: iface.ip,
      netmask: iface.prefix === null ? '' : prefixToNetmask(iface.prefix),
      gateway: iface.ip ? parseDefaultGateway(route.stdout) : '',
      dns_servers: parseResolvConf(resolvText),
      dns_manual: isManual(this.applied.dns_servers),
    };
  }

  /** The namespace's resolv.conf: manual servers win over the lease's; static without: none. */
  private writeResolv(): Promise<void> {
    return this.resolvWrites.run(() => this.writeResolvNow());
  }

  private async writeResolvNow(): Promise<void> {
    const manual = this.applied.dns_servers;
    const servers = isManual(manual)
      ? manual
      : this.applied.mode === 'dhcp'
        ? (this.lease?.dns ?? [])
        : [];
    // The temp file stays outside /etc/netns/<dev>: `ip netns exec` bind-mounts every file
    // in there over /etc, and would trip over a half-written one. It goes in a folder of this
    // namespace's own beside it: a temp file of a killed write in /etc/netns itself could not
    // be told from another device's write in progress, and stayed there for good.
    await atomicWriteFile(this.paths.resolv, resolvConf(servers), 0o644, {
      tmpDir: this.paths.etcTmp,
    });
  }

  // --- helpers ------------------------------------------------------------------------------

  /** Runs one command (`ip`) with its timeout. */
  private readonly run = (file: string, args: readonly string[]) =>
    this.runner(file, args, { timeoutMs: COMMAND_TIMEOUT_MS });

  /** Runs one step; a failure names the step, the command and what it said. */
  private async step(name: string, file: string, args: readonly string[]): Promise<void> {
    try {
      await this.run(file, args);
    } catch (err) {
      const said = err instanceof CommandError ? err.reason : (err as Error).message;
      throw new NetworkApplyError(`${name} (${[file, ...args].join(' ')}): ${said}`);
    }
  }

  private toApplyError(err: unknown): Error {
    if (err instanceof NetworkApplyError || err instanceof SystemFeatureUnavailableError)
      return err;
    return new NetworkApplyError((err as Error).message ?? String(err));
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return this.changes.run(fn);
  }

  private changed(): void {
    if (this.changeTimer || this.disposed) return;
    this.changeTimer = setTimeout(() => {
      this.changeTimer = null;
      for (const l of this.listeners) {
        try {
          l();
        } catch (err) {
          this.log.warn({ err: (err as Error).message }, 'netns: change listener threw');
        }
      }
    }, CHANGE_DEBOUNCE_MS);
    this.changeTimer.unref();
  }
}

function isManual(dns: string[] | null): dns is string[] {
  return dns !== null && dns.length > 0;
}

/**
 * The ZeroTier app (issue 27, docs/apps.md "ZeroTier"): `zerotier-one` as the daemon (under the
 * Supervisor with the memory cap, its home `<data>/apps/zerotier/`, its port
 * `apps.zerotier.port`) and `zerotier-cli -D<home>` for `-j info`, `-j listnetworks`, `join`,
 * `leave` and `set`, on T1's CLI-app base. The home's `local.conf` turns ZeroTier's own software
 * update off (it never updates itself here).
 *
 * zerotier-cli prints its errors on stdout ("Error connecting to the ZeroTier service: …",
 * "<status> <command> <body>") and exits non-zero; the base's error takes stdout when stderr is
 * empty, so the message says what it said.
 */
import { join } from 'node:path';
import { mkdir } from 'node:fs/promises';
import * as z from '@kvm/protocol/zod';
import type { AppState, AppSummary } from '@kvm/protocol/apps';
import {
  controllerOf,
  type ZerotierJoinAnswer,
  type ZerotierNetwork,
  type ZerotierRunAnswer,
  type ZerotierSetting,
  type ZerotierStatus,
} from '@kvm/protocol/zerotier';
import type { AppConfig } from '../../config';
import { atomicWriteFile } from '../../storage/atomic';
import {
  AppDaemon,
  AppStore,
  AppToolError,
  CliTool,
  notRunnable,
  OneAtATime,
  parseToolJson,
} from './cli-app';
import type { AppDriver, AppHost } from './types';

/** A daemon that does not answer this long after its start is `starting`, later `error`. */
export const STARTING_GRACE_MS = 20_000;
/** GL tries `join` three times, a second apart (the service may just have started). */
export const JOIN_ATTEMPTS = 3;

/** `zerotier-cli -j info` (the service's /status); unknown fields ignored. */
export const zerotierInfoSchema = z.looseObject({
  address: z.string(),
  online: z.boolean(),
  tcpFallbackActive: z.optional(z.boolean()),
  version: z.optional(z.string()),
});
export type ZerotierInfo = z.output<typeof zerotierInfoSchema>;

/** One entry of `zerotier-cli -j listnetworks` (the service's /network). */
export const zerotierNetworkSchema = z.looseObject({
  nwid: z.string(),
  name: z.optional(z.string()),
  status: z.string(),
  type: z.optional(z.string()),
  portDeviceName: z.optional(z.string()),
  assignedAddresses: z.optional(z.array(z.string())),
  allowManaged: z.optional(z.boolean()),
  allowGlobal: z.optional(z.boolean()),
  allowDefault: z.optional(z.boolean()),
  allowDNS: z.optional(z.boolean()),
  authenticationURL: z.optional(z.string()),
});
export const zerotierNetworksSchema = z.array(zerotierNetworkSchema).check(z.maxLength(256));
export type ZerotierNetworkJson = z.output<typeof zerotierNetworkSchema>;

export function toNetwork(n: ZerotierNetworkJson): ZerotierNetwork {
  return {
    nwid: n.nwid,
    name: n.name ?? '',
    status: n.status,
    dev: n.portDeviceName ?? '',
    ips: n.assignedAddresses ?? [],
    allow_managed: n.allowManaged ?? true,
    allow_global: n.allowGlobal ?? false,
    allow_default: n.allowDefault ?? false,
    allow_dns: n.allowDNS ?? false,
  };
}

function bare(address: string): string {
  const slash = address.indexOf('/');
  return slash < 0 ? address : address.slice(0, slash);
}

/**
 * The apps center's state from the node and its networks: offline -> `unreachable`; no network
 * -> `needs_login` (join one); a network OK with addresses -> `connected`; ACCESS_DENIED or
 * AUTHENTICATION_REQUIRED -> `needs_login` saying whom to ask; REQUESTING_CONFIGURATION ->
 * `connecting`; NOT_FOUND, PORT_ERROR, CLIENT_TOO_OLD -> `error`. The first network decides
 * (GL shows the first), unless another one is connected.
 */
export function zerotierView(
  info: ZerotierInfo,
  networks: readonly ZerotierNetworkJson[],
): { state: AppState; detail: string | null; addresses: string[] } {
  const addresses = networks
    .filter((n) => n.status === 'OK')
    .flatMap((n) => n.assignedAddresses ?? [])
    .map(bare);
  if (!info.online) {
    return {
      state: 'unreachable',
      detail: 'ZeroTier is offline: its root servers (or the moon) cannot be reached',
      addresses,
    };
  }
  if (networks.length === 0) {
    return {
      state: 'needs_login',
      detail: 'Join a network: give its 16-digit network id',
      addresses,
    };
  }
  if (addresses.length > 0) return { state: 'connected', detail: null, addresses };
  const n = networks.find((x) => x.status === 'OK') ?? (networks[0] as ZerotierNetworkJson);
  const controller = controllerOf(n.nwid);
  switch (n.status) {
    case 'OK':
      return {
        state: 'connecting',
        detail: `Joined ${n.nwid}; the controller ${controller} has assigned no address yet`,
        addresses,
      };
    case 'REQUESTING_CONFIGURATION':
      return {
        state: 'connecting',
        detail: `Waiting for the controller ${controller}; if it stays, authorise this device (${info.address}) there`,
        addresses,
      };
    case 'ACCESS_DENIED':
      return {
        state: 'needs_login',
        detail: `Authorise this device (${info.address}) on network ${n.nwid} at its controller ${controller}`,
        addresses,
      };
    case 'AUTHENTICATION_REQUIRED':
      return {
        state: 'needs_login',
        detail: n.authenticationURL
          ? `Log in at ${n.authenticationURL} to join ${n.nwid}`
          : `Network ${n.nwid} asks for a login (SSO)`,
        addresses,
      };
    case 'NOT_FOUND':
      return {
        state: 'error',
        detail: `Network ${n.nwid} does not exist on its controller ${controller}`,
        addresses,
      };
    case 'PORT_ERROR':
      return {
        state: 'error',
        detail: `ZeroTier could not make the interface of ${n.nwid} (no /dev/net/tun?)`,
        addresses,
      };
    case 'CLIENT_TOO_OLD':
      return {
        state: 'error',
        detail: `This ZeroTier is too old for network ${n.nwid}`,
        addresses,
      };
    default:
      return {
        state: 'connecting',
        detail: `Network ${n.nwid}: ${n.status.slice(0, 40)}`,
        addresses,
      };
  }
}

const storeSchema = z.object({ enable: z.boolean() });

export interface ZerotierOptions {
  findExecutable?: (command: string) => string | null;
  readRss?: (pid: number) => Promise<number | null>;
  now?: () => number;
  /** Between join attempts (tests: 0). */
  retryDelayMs?: number;
}

type View = {
  installed: boolean;
  version: string | null;
  running: boolean;
  state: AppState;
  detail: string | null;
  online: boolean;
  address: string;
  addresses: string[];
  networks: ZerotierNetworkJson[];
};

export class ZerotierApp implements AppDriver {
  readonly id = 'zerotier' as const;
  readonly tool: CliTool;
  readonly daemon: AppDaemon;
  readonly store: AppStore<typeof storeSchema>;
  private readonly ops = new OneAtATime('zerotier');
  private readonly now: () => number;
  readonly home: string;
  private startedAt = -Infinity;

  constructor(
    private readonly host: AppHost,
    private readonly config: AppConfig['apps'],
    private readonly opts: ZerotierOptions = {},
  ) {
    this.now = opts.now ?? (() => performance.now());
    this.home = join(host.dataDir, 'zerotier', 'home');
    this.tool = new CliTool({
      id: 'zerotier',
      host,
      tool: config.zerotier.cli,
      requires: [config.zerotier.daemon],
      globalArgs: [`-D${this.home}`],
      versionArgs: ['-v'],
      commandTimeoutMs: config.command_timeout_ms,
      ...(opts.findExecutable ? { findExecutable: opts.findExecutable } : {}),
      now: this.now,
    });
    this.daemon = new AppDaemon({
      id: 'zerotier',
      host,
      program: config.zerotier.daemon,
      // -U: do not drop privileges (the home is ours); the port; the home folder
      args: ['-U', `-p${config.zerotier.port}`, this.home],
      memoryLimitMb: config.memory_limit_mb,
      ...(opts.findExecutable ? { findExecutable: opts.findExecutable } : {}),
      ...(opts.readRss ? { readRss: opts.readRss } : {}),
    });
    this.store = new AppStore(host, 'zerotier', storeSchema, { enable: false });
  }

  async init(): Promise<void> {
    const cfg = await this.store.load();
    if (!cfg.enable || !(await this.tool.probe()).installed) return;
    try {
      await this.startDaemon();
    } catch (err) {
      this.host.log.warn({ app: 'zerotier', err: String(err) }, 'ZeroTier did not start');
    }
  }

  async dispose(): Promise<void> {
    await this.daemon.dispose();
  }

  private async startDaemon(): Promise<void> {
    await mkdir(this.home, { recursive: true, mode: 0o700 });
    // ZeroTier never updates itself here; its port as configured
    const localConf = {
      settings: { primaryPort: this.config.zerotier.port, softwareUpdate: 'disable' },
    };
    await atomicWriteFile(
      join(this.home, 'local.conf'),
      `${JSON.stringify(localConf, null, 2)}\n`,
      0o600,
    );
    this.startedAt = this.now();
    await this.daemon.start();
  }

  private async infoAndNetworks(): Promise<[ZerotierInfo, ZerotierNetworkJson[]]> {
    const { stdout: infoOut } = await this.tool.run(['-j', 'info'], { label: 'zerotier-cli info' });
    const info = parseToolJson('zerotier-cli info', infoOut, zerotierInfoSchema);
    const { stdout: netOut } = await this.tool.run(['-j', 'listnetworks'], {
      label: 'zerotier-cli listnetworks',
    });
    return [info, parseToolJson('zerotier-cli listnetworks', netOut, zerotierNetworksSchema)];
  }

  async view(): Promise<View> {
    const probe = await this.tool.probe();
    const empty = { online: false, address: '', addresses: [], networks: [] };
    const base = { installed: probe.installed, version: probe.version, running: false, ...empty };
    const blocked = notRunnable(probe, this.daemon.capError);
    if (blocked) return { ...base, ...blocked };
    if (!this.daemon.wanted) return { ...base, state: 'stopped', detail: null };
    const young = this.now() - this.startedAt < STARTING_GRACE_MS;
    if (!this.daemon.running) {
      const said = this.daemon.recentOutput().at(-1);
      return young
        ? { ...base, state: 'starting', detail: null }
        : {
            ...base,
            state: 'error',
            detail: `zerotier-one keeps exiting${said ? `: ${said.slice(0, 200)}` : ''}`,
          };
    }
    try {
      const [info, networks] = await this.infoAndNetworks();
      const v = zerotierView(info, networks);
      return {
        ...base,
        running: true,
        online: info.online,
        address: info.address,
        networks,
        ...v,
        version: info.version ?? probe.version,
      };
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (young && /Error connecting|authtoken|zerotier-one\.port/i.test(message)) {
        return { ...base, running: true, state: 'starting', detail: null };
      }
      return { ...base, running: true, state: 'error', detail: message };
    }
  }

  async summary(): Promise<AppSummary> {
    const v = await this.view();
    return {
      id: 'zerotier',
      name: 'ZeroTier',
      installed: v.installed,
      version: v.version,
      running: v.running,
      state: v.state,
      detail: v.detail,
      addresses: v.addresses,
      control_url: v.networks[0] ? `zerotier:${controllerOf(v.networks[0].nwid)}` : null,
      rss_bytes: this.daemon.rssBytes,
      memory_limit_bytes: this.daemon.limitBytes,
    };
  }

  /** `GET /api/zerotier/status`: GL's fields (the first network's), then ours. */
  async status(): Promise<ZerotierStatus> {
    const [v, cfg] = await Promise.all([this.view(), this.store.load()]);
    const networks = v.networks.map(toNetwork);
    const first = networks[0];
    return {
      enabled: cfg.enable,
      process_running: v.running,
      ...(first
        ? {
            nwid: first.nwid,
            name: first.name,
            status: first.status,
            dev: first.dev,
            ips: first.ips,
          }
        : {}),
      installed: v.installed,
      version: v.version,
      state: v.state,
      detail: v.detail,
      online: v.online,
      address: v.address,
      networks,
    };
  }

  async start(): Promise<ZerotierRunAnswer> {
    return this.ops.run(async () => {
      await this.tool.requireInstalled();
      await this.store.save({ enable: true });
      await this.startDaemon();
      const running = this.daemon.running;
      return { success: running, output: '', process_running: running };
    });
  }

  async stop(): Promise<ZerotierRunAnswer> {
    return this.ops.run(async () => {
      await this.store.save({ enable: false });
      await this.daemon.stop();
      return { success: true, output: '', process_running: this.daemon.running };
    });
  }

  private requireRunning(): void {
    if (!this.daemon.running) throw new AppToolError('ZeroTier is not running: start it first');
  }

  private async listNetworks(): Promise<ZerotierNetworkJson[]> {
    const { stdout } = await this.tool.run(['-j', 'listnetworks'], {
      label: 'zerotier-cli listnetworks',
    });
    return parseToolJson('zerotier-cli listnetworks', stdout, zerotierNetworksSchema);
  }

  /** `zerotier-cli join`, tried JOIN_ATTEMPTS times (GL). Returns what it printed and the attempts. */
  private async joinNow(nwid: string): Promise<{ output: string; attempts: number }> {
    let last: unknown = null;
    for (let attempt = 1; attempt <= JOIN_ATTEMPTS; attempt++) {
      try {
        const { stdout } = await this.tool.run(['join', nwid], { label: 'zerotier-cli join' });
        return { output: stdout.trim(), attempts: attempt };
      } catch (err) {
        last = err;
        if (attempt < JOIN_ATTEMPTS) {
          await new Promise((r) => setTimeout(r, this.opts.retryDelayMs ?? 1000));
        }
      }
    }
    throw last;
  }

  /**
   * GL's `set_token`: the device is in this one network afterwards. GL wipes ZeroTier's folder
   * to leave the others, which also throws away the device's identity (every controller then
   * sees a new device to authorise); here the others are left with `zerotier-cli leave` and the
   * identity stays.
   */
  async setToken(nwid: string): Promise<ZerotierJoinAnswer> {
    return this.ops.run(async () => {
      await this.tool.requireInstalled();
      this.requireRunning();
      for (const n of await this.listNetworks()) {
        if (n.nwid !== nwid)
          await this.tool.run(['leave', n.nwid], { label: 'zerotier-cli leave' });
      }
      const { output, attempts } = await this.joinNow(nwid);
      return {
        success: true,
        message: 'Token updated successfully',
        join_output: output,
        attempts,
      };
    });
  }

  /** Ours: joins one more network (the others stay). */
  async join(nwid: string): Promise<ZerotierJoinAnswer> {
    return this.ops.run(async () => {
      await this.tool.requireInstalled();
      this.requireRunning();
      const { output, attempts } = await this.joinNow(nwid);
      return { success: true, message: 'Joined', join_output: output, attempts };
    });
  }

  /** Ours: leaves a network. */
  async leave(nwid: string): Promise<{ success: boolean; output: string }> {
    return this.ops.run(async () => {
      await this.tool.requireInstalled();
      this.requireRunning();
      const { stdout } = await this.tool.run(['leave', nwid], { label: 'zerotier-cli leave' });
      return { success: true, output: stdout.trim() };
    });
  }

  /**
   * Ours: `zerotier-cli orbit <world id> <seed>`: this device also uses a moon (roots of a
   * self-hosted ZeroTier); ZeroTier keeps it in its home (`moons.d`) across restarts.
   */
  async orbit(worldId: string, seed: string): Promise<{ success: boolean; output: string }> {
    return this.ops.run(async () => {
      await this.tool.requireInstalled();
      this.requireRunning();
      const { stdout } = await this.tool.run(['orbit', worldId, seed], {
        label: 'zerotier-cli orbit',
      });
      return { success: true, output: stdout.trim() };
    });
  }

  /** Ours: `zerotier-cli deorbit <world id>`. */
  async deorbit(worldId: string): Promise<{ success: boolean; output: string }> {
    return this.ops.run(async () => {
      await this.tool.requireInstalled();
      this.requireRunning();
      const { stdout } = await this.tool.run(['deorbit', worldId], {
        label: 'zerotier-cli deorbit',
      });
      return { success: true, output: stdout.trim() };
    });
  }

  /** Ours: `zerotier-cli set <nwid> <setting>=<0|1>` for each given setting; the network after. */
  async set(
    nwid: string,
    settings: Partial<Record<ZerotierSetting, boolean>>,
  ): Promise<ZerotierNetwork> {
    return this.ops.run(async () => {
      await this.tool.requireInstalled();
      this.requireRunning();
      for (const [key, value] of Object.entries(settings)) {
        await this.tool.run(['set', nwid, `${key}=${value ? 1 : 0}`], {
          label: 'zerotier-cli set',
        });
      }
      const n = (await this.listNetworks()).find((x) => x.nwid === nwid);
      if (!n) throw new AppToolError(`This device is not in network ${nwid}`);
      return toNetwork(n);
    });
  }
}

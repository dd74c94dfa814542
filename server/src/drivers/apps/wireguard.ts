/**
 * The WireGuard app (issue 27, docs/apps.md "The tunnel"): Debian's userspace `wireguard-go`
 * holds the tunnel interface, `wg` configures it, `ip` gives it its addresses and routes, all
 * where the apps live (inside the developer targets' device namespace, `hostArgv`).
 *
 * - The interface name is `wgk<8 hex>` from the data folder's hash: wireguard-go's UAPI socket
 *   is `/var/run/wireguard/<if>.sock`, a filesystem path shared by every namespace, so the name
 *   must be unique on this computer, not only inside one namespace.
 * - `wireguard-go -f <if>` (WG_PROCESS_FOREGROUND=1) runs under the Supervisor: it is restarted
 *   with backoff when it dies, and the configuration is applied again.
 * - `wg setconf <if> <file>`: the file holds the private key, 0600 in the run folder, removed
 *   once applied. `wg pubkey` gets the key on stdin. No key is ever in an argv or a log line.
 * - Routes: each peer's allowed IPs through the tunnel (`ip route add`, never `replace`: a
 *   route the LAN already has stays the LAN's and is skipped); a default route is split in two
 *   halves (0.0.0.0/1 + 128.0.0.0/1, ::/1 + 8000::/1) so the LAN's own default stays, and each
 *   endpoint then gets a host route through the gateway it used before, so the tunnel's own
 *   packets do not loop into it. Stop removes exactly what start added.
 * - A failing step undoes every step before it; the device's LAN is never touched.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rm } from 'node:fs/promises';
import { connect, isIP } from 'node:net';
import { join, resolve } from 'node:path';
import { APP_NAMES, type AppState, type AppSummary } from '@kvm/protocol/apps';
import {
  parseWgQuick,
  planWgRoutes,
  renderWgSetconf,
  wgPublicView,
  wgRouteProblem,
  wgRoutesCover,
  type WgConfig,
  type WgPeerStatus,
  type WgPublicConfig,
  type WgStatus,
} from '@kvm/protocol/wireguard';
import { CommandError } from '../../process/run';
import { findExecutable, Supervisor } from '../../process/supervisor';
import { atomicWriteFile } from '../../storage/atomic';
import { SerialQueue } from '../../sync/serial-queue';
import { type AppHost, hostArgv, type WireguardControl, WireguardTunnelError } from './types';
import { MemoryCap, overCapText, treeRss } from './cli-app';

export { WireguardTunnelError } from './types';

/** A handshake older than this: the peer is gone (WireGuard's REJECT_AFTER_TIME is 180 s). */
export const HANDSHAKE_FRESH_S = 180;
/** Where wireguard-go puts its UAPI socket (the same path in every namespace). */
export const WG_SOCKET_DIR = '/var/run/wireguard';
/** The MTU when the configuration names none (wg-quick's usual value over IPv4/IPv6). */
export const WG_DEFAULT_MTU = 1420;
/** How long wireguard-go may take to make its interface and socket. */
const SOCKET_WAIT_MS = 10_000;
/** Tries at configuring a restarted wireguard-go, and the pause between them. */
const REAPPLY_ATTEMPTS = 5;
const REAPPLY_PAUSE_MS = 1000;
/** wireguard-go's memory is sampled this often while the tunnel is up; over the cap 3 times in a row, it stops. */

export interface WireguardOptions {
  /** Paths or names of the tools (config `apps.wireguard`). */
  wireguardGo: string;
  wg: string;
  /** Each `wg`/`ip` command is killed after this (a hung tool). */
  commandTimeoutMs: number;
  memoryLimitBytes: number | null;
  /** How often the memory is sampled (tests); default MEMORY_SAMPLE_MS. */
  memorySampleMs?: number;
}

/** The tunnel's interface name on this computer: `wgk` + 8 hex digits of the data folder's hash. */
export function wgInterfaceName(appsDir: string): string {
  return `wgk${createHash('sha256').update(resolve(appsDir)).digest('hex').slice(0, 8)}`;
}

export interface WgDump {
  publicKey: string;
  listenPort: number | null;
  peers: WgPeerStatus[];
}

const num = (s: string | undefined): number => {
  const n = Number(s);
  return Number.isFinite(n) && n >= 0 ? n : 0;
};

/**
 * `wg show <if> dump`: a first line for the interface (private key, public key, listen port,
 * fwmark) and one per peer (public key, preshared key, endpoint, allowed ips, latest handshake,
 * rx, tx, keepalive), tab-separated. The keys that are secrets are read past, never kept.
 */
export function parseWgDump(text: string): WgDump {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  const head = (lines[0] ?? '').split('\t');
  if (head.length < 4) throw new Error('wg show dump: no interface line');
  const peers: WgPeerStatus[] = [];
  for (const line of lines.slice(1)) {
    const f = line.split('\t');
    if (f.length < 8) throw new Error('wg show dump: a peer line with too few fields');
    const keepalive = f[7] === 'off' ? null : num(f[7]) || null;
    peers.push({
      public_key: f[0] ?? '',
      endpoint: f[2] === '(none)' ? null : (f[2] ?? null),
      allowed_ips: f[3] === '(none)' ? [] : (f[3] ?? '').split(',').filter(Boolean),
      latest_handshake: num(f[4]),
      rx_bytes: num(f[5]),
      tx_bytes: num(f[6]),
      persistent_keepalive: keepalive,
    });
  }
  const port = Number(head[2]);
  return {
    publicKey: head[1] === '(none)' ? '' : (head[1] ?? ''),
    listenPort: Number.isInteger(port) && port > 0 ? port : null,
    peers,
  };
}

/** The state the handshakes say: one fresh → connected; none yet → connecting; all old → unreachable. */
export function handshakeState(peers: readonly WgPeerStatus[], nowS: number): AppState {
  if (peers.some((p) => p.latest_handshake > 0 && nowS - p.latest_handshake < HANDSHAKE_FRESH_S)) {
    return 'connected';
  }
  return peers.some((p) => p.latest_handshake > 0) ? 'unreachable' : 'connecting';
}

/** Stored next to the configuration: whether the tunnel should be up (it comes back after a restart). */
interface WgState {
  enabled: boolean;
}

/**
 * The split default's reply policy (docs/apps.md "The tunnel"): a connection that did not come
 * in through the tunnel is marked, and its packets are routed by the device's own routes (the
 * main table without its /1 halves and default, then a table holding only the gateway it had),
 * so a console client beyond the LAN's gateway keeps its answers while a peer takes 0.0.0.0/0.
 */
const REPLY_MARK = '0x4b57';
const REPLY_TABLE = '19287';
const REPLY_RULES = { main: '10100', gateway: '10101' } as const;
const REPLY_NFT_TABLE = 'kvm_wg_replies';

export class WireguardDriver implements WireguardControl {
  readonly id = 'wireguard' as const;
  readonly ifname: string;
  private readonly dir: string;
  private readonly queue = new SerialQueue({ max: 8 });
  private config: WgConfig | null = null;
  private publicKey: string | null = null;
  private enabled = false;
  /** The tunnel is up (interface configured). */
  private up = false;
  private busy = false;
  /**
   * A bringUp of this server's life may have left something (a link, rules, the daemon) that a
   * bringDown has not removed since: dispose then has something to undo. A crashed server's
   * leftovers are removed by the next bringUp, so a stop with nothing placed runs no command.
   */
  private placed = false;
  private lastError: string | null = null;
  private sup: Supervisor | null = null;
  /** `ip route` argument lists this driver added (removed on stop). */
  private addedRoutes: string[][] = [];
  private disposed = false;
  /** wireguard-go's memory cap (null without one). */
  private memoryCap: MemoryCap | null = null;
  /** `wireguard-go --version`'s version, once read. */
  private version: string | null = null;

  constructor(
    private readonly host: AppHost,
    private readonly opts: WireguardOptions,
  ) {
    this.ifname = wgInterfaceName(host.dataDir);
    this.dir = join(host.dataDir, 'wireguard');
  }

  private get paths() {
    return {
      conf: join(this.dir, 'wg.conf'),
      state: join(this.dir, 'state.json'),
      setconf: join(this.host.runDir, `${this.ifname}.setconf`),
      pid: join(this.host.runDir, `${this.ifname}.pid`),
      socket: join(WG_SOCKET_DIR, `${this.ifname}.sock`),
    };
  }

  /** Parses and checks a configuration's text (throws WgConfigError); changes nothing. */
  parse(text: string): WgConfig {
    return parseWgQuick(text);
  }

  /**
   * Why `config` would cut the device off its own LAN where the tunnel runs (a prefix inside
   * a connected network), or null. The namespace is started if it is not up yet.
   */
  async routeProblem(config: WgConfig): Promise<Error | null> {
    if (this.host.unavailable()) return null;
    await this.host.ready();
    return wgRouteProblem(config, await this.localPrefixes());
  }

  /** Both tools are here; else what is missing. */
  missingTools(): string[] {
    return [this.opts.wireguardGo, this.opts.wg].filter((t) => !findExecutable(t));
  }

  get configured(): boolean {
    return this.config !== null;
  }

  get running(): boolean {
    return this.up;
  }

  /** The supervised wireguard-go's pid (tests, the bench). */
  get pid(): number | null {
    return this.sup?.pid ?? null;
  }

  // --- lifecycle ----------------------------------------------------------------------------

  async init(): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    let text: string | null = null;
    try {
      text = await readFile(this.paths.conf, 'utf8');
    } catch {
      text = null;
    }
    if (text !== null) {
      try {
        this.config = parseWgQuick(text);
        this.publicKey = await this.derivePublicKey(this.config.interface.privateKey);
      } catch (err) {
        this.config = null;
        this.lastError = `The saved configuration cannot be used: ${(err as Error).message}`;
      }
    }
    try {
      const state = JSON.parse(await readFile(this.paths.state, 'utf8')) as Partial<WgState>;
      this.enabled = state.enabled === true;
    } catch {
      this.enabled = false;
    }
    if (this.enabled && this.config) {
      // In the background: the server listens meanwhile (the namespace may be starting).
      void this.queue
        .run(() => this.bringUp())
        .catch((err: Error) => {
          this.host.log.warn({ err: err.message }, 'wireguard: the saved tunnel did not come back');
        });
    }
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    await this.queue
      .run(() => (this.placed ? this.bringDown() : Promise.resolve()))
      .catch(() => undefined);
  }

  // --- verbs (one at a time) ----------------------------------------------------------------

  /**
   * Saves a new configuration (already parsed and checked); when the tunnel runs it is brought
   * down and up again with the new one, and if that fails the old one is brought back and
   * nothing is saved.
   */
  setConfig(text: string, config: WgConfig): Promise<void> {
    return this.queue.run(async () => {
      const publicKey = await this.derivePublicKey(config.interface.privateKey);
      const old = this.config;
      const oldKey = this.publicKey;
      if (this.up) {
        await this.bringDown();
        this.config = config;
        this.publicKey = publicKey;
        try {
          await this.bringUp();
        } catch (err) {
          this.config = old;
          this.publicKey = oldKey;
          if (old) await this.bringUp().catch(() => undefined);
          throw err;
        }
      }
      await atomicWriteFile(this.paths.conf, text, 0o600);
      this.config = config;
      this.publicKey = publicKey;
      this.lastError = null;
      this.host.log.info(
        { peers: config.peers.length, addresses: config.interface.addresses },
        'wireguard: configuration saved',
      );
    });
  }

  start(): Promise<void> {
    return this.queue.run(async () => {
      if (!this.config) throw new WireguardTunnelError('No WireGuard configuration is saved');
      await this.saveState(true);
      if (!this.up) await this.bringUp();
    });
  }

  stop(): Promise<void> {
    return this.queue.run(async () => {
      await this.saveState(false);
      await this.bringDown();
      this.lastError = null;
    });
  }

  /** Unbinds: the tunnel stops and the configuration (its private key) is deleted. */
  logout(): Promise<void> {
    return this.queue.run(async () => {
      await this.saveState(false);
      await this.bringDown();
      await rm(this.paths.conf, { force: true });
      this.config = null;
      this.publicKey = null;
      this.lastError = null;
    });
  }

  // --- reading ------------------------------------------------------------------------------

  publicConfig(): WgPublicConfig | null {
    const c = this.config;
    if (!c || this.publicKey === null) return null;
    return wgPublicView(c, this.publicKey);
  }

  async status(): Promise<WgStatus> {
    const missing = this.missingTools();
    const base: WgStatus = {
      installed: missing.length === 0,
      running: false,
      state: 'stopped',
      detail: null,
      configured: this.config !== null,
      interface: null,
      public_key: this.publicKey,
      addresses: this.config ? [...this.config.interface.addresses] : [],
      listen_port: this.config?.interface.listenPort ?? null,
      peers: [],
    };
    if (missing.length > 0) {
      return { ...base, state: 'not_installed', detail: `Not installed: ${missing.join(', ')}` };
    }
    const unavailable = this.host.unavailable();
    if (unavailable) return { ...base, state: 'error', detail: unavailable };
    if (!this.config) {
      return { ...base, state: 'needs_login', detail: this.lastError };
    }
    if (this.busy && !this.up) return { ...base, state: 'starting' };
    if (!this.up) {
      return { ...base, state: this.lastError ? 'error' : 'stopped', detail: this.lastError };
    }
    let dump: WgDump;
    try {
      dump = parseWgDump((await this.wg(['show', this.ifname, 'dump'])).stdout);
    } catch (err) {
      return { ...base, running: true, state: 'error', detail: this.reason(err) };
    }
    const state = handshakeState(dump.peers, Math.floor(Date.now() / 1000));
    return {
      ...base,
      running: true,
      state,
      detail:
        state === 'unreachable'
          ? `No handshake with any peer for ${HANDSHAKE_FRESH_S} s`
          : state === 'connecting'
            ? 'Waiting for the first handshake'
            : null,
      interface: this.ifname,
      public_key: dump.publicKey || this.publicKey,
      listen_port: dump.listenPort,
      peers: dump.peers,
    };
  }

  async summary(): Promise<AppSummary> {
    const s = await this.status().catch((err: Error): WgStatus => ({
      installed: true,
      running: this.up,
      state: 'error',
      detail: err.message,
      configured: this.config !== null,
      interface: null,
      public_key: null,
      addresses: [],
      listen_port: null,
      peers: [],
    }));
    return {
      id: this.id,
      name: APP_NAMES.wireguard,
      installed: s.installed,
      version: s.installed ? await this.toolVersion() : null,
      running: s.running,
      state: s.state,
      detail: s.detail,
      addresses: s.addresses.map((a) => a.split('/')[0] ?? a),
      control_url: null,
      rss_bytes: s.running ? await this.rssBytes() : null,
      memory_limit_bytes: this.opts.memoryLimitBytes,
    };
  }

  /** `wireguard-go v0.0.20220316` → `0.0.20220316`, read once (null when it does not say). */
  private async toolVersion(): Promise<string | null> {
    if (this.version !== null) return this.version;
    try {
      const { stdout } = await this.host.runner(this.opts.wireguardGo, ['--version'], {
        timeoutMs: this.opts.commandTimeoutMs,
        maxBuffer: 64 * 1024,
      });
      this.version = /wireguard-go v?(\S+)/.exec(stdout)?.[1]?.slice(0, 40) ?? null;
    } catch {
      return null;
    }
    return this.version;
  }

  /** wireguard-go's resident memory, from /proc. */
  async rssBytes(): Promise<number | null> {
    const pid = this.sup?.pid;
    return pid ? treeRss(pid) : null;
  }

  // --- the tunnel ---------------------------------------------------------------------------

  private async bringUp(): Promise<void> {
    const config = this.config;
    if (!config) throw new WireguardTunnelError('No WireGuard configuration is saved');
    if (this.disposed) throw new WireguardTunnelError('The WireGuard app is stopping');
    const missing = this.missingTools();
    if (missing.length > 0) throw new WireguardTunnelError(`Not installed: ${missing.join(', ')}`);
    const unavailable = this.host.unavailable();
    if (unavailable) throw new WireguardTunnelError(unavailable);
    this.busy = true;
    const t0 = performance.now();
    try {
      await this.host.ready();
      await mkdir(this.host.runDir, { recursive: true, mode: 0o700 });
      this.placed = true;
      await this.removeLeftovers();
      await this.startDaemon();
      await this.configure(config);
      this.up = true;
      this.lastError = null;
      this.watchMemory();
      this.host.log.info(
        { interface: this.ifname, ms: Math.round(performance.now() - t0) },
        'wireguard: tunnel up',
      );
    } catch (err) {
      const message = this.reason(err);
      this.lastError = message;
      this.host.log.warn({ err: message }, 'wireguard: start failed, undoing');
      await this.bringDown().catch(() => undefined);
      this.lastError = message;
      throw new WireguardTunnelError(message);
    } finally {
      this.busy = false;
    }
  }

  /** Keys, addresses, link up, routes: on a fresh interface (a start, or a restarted wireguard-go). */
  private async configure(config: WgConfig): Promise<void> {
    for (const cidr of config.interface.addresses) {
      await this.ip('address', ['addr', 'add', cidr, 'dev', this.ifname]);
    }
    const mtu = String(config.interface.mtu ?? WG_DEFAULT_MTU);
    await this.ip('link up', ['link', 'set', 'dev', this.ifname, 'mtu', mtu, 'up']);
    // Keys and peers once the link is up: wireguard-go then sends a peer with a keepalive its
    // first packet at once, so the handshake (and a NAT's mapping) comes now, not a keepalive
    // interval later (a restarted wireguard-go behind NAT was unreachable until then).
    await this.setconf(config);
    await this.addRoutes(config);
  }

  private async startDaemon(): Promise<void> {
    const [command, args] = hostArgv(this.host, this.opts.wireguardGo, ['-f', this.ifname]);
    const ifname = this.ifname;
    const sup = new Supervisor({
      name: `wireguard-go ${ifname}`,
      command,
      args,
      env: {
        ...process.env,
        WG_PROCESS_FOREGROUND: '1',
        // Go's soft limit below the cap: the collector works harder before the cap stops it
        ...(this.opts.memoryLimitBytes
          ? { GOMEMLIMIT: `${Math.floor((this.opts.memoryLimitBytes * 0.8) / 1048576)}MiB` }
          : {}),
      },
      pidfile: this.paths.pid,
      isStale: (argv) => argv.includes(ifname),
      backoff: { initialMs: 500, maxMs: 10_000 },
    });
    sup.on('output', (line) => this.host.log.debug({ line }, 'wireguard-go'));
    sup.on('exited', (info) => {
      if (info.expected) return;
      this.host.log.warn(
        { code: info.code, signal: info.signal },
        'wireguard-go exited: restarting, the configuration follows',
      );
    });
    sup.on('started', () => {
      // A restart after a death: the interface is new and empty, configure it again.
      if (!this.up || this.sup !== sup) return;
      void this.queue
        .run(async () => {
          // A loaded machine may take a while to make the new interface; a step that fails on
          // it is tried again while this wireguard-go is the one running.
          for (let attempt = 1; ; attempt++) {
            if (!this.up || this.sup !== sup || !this.config) return;
            try {
              this.addedRoutes = [];
              await this.waitForSocket();
              await this.configure(this.config);
              break;
            } catch (err) {
              if (attempt >= REAPPLY_ATTEMPTS || sup.state !== 'running') throw err;
              this.host.log.info({ err: this.reason(err), attempt }, 'wireguard: re-apply again');
              await new Promise((r) => setTimeout(r, REAPPLY_PAUSE_MS));
            }
          }
          this.lastError = null;
          this.host.log.info({}, 'wireguard: configuration applied again after a restart');
        })
        .catch((err: Error) => {
          this.lastError = this.reason(err);
          this.host.log.warn({ err: this.lastError }, 'wireguard: re-applying failed');
        });
    });
    this.sup = sup;
    await sup.ensureStarted();
    await this.waitForSocket();
  }

  private async waitForSocket(): Promise<void> {
    const deadline = performance.now() + SOCKET_WAIT_MS;
    for (;;) {
      // Listening, not only there: a wireguard-go killed with SIGKILL leaves its socket file,
      // and the new one makes its interface before it replaces that file.
      if (await acceptsConnection(this.paths.socket)) return;
      if (this.sup?.state !== 'running' && this.sup?.state !== 'starting') {
        const said = this.sup?.recentOutput().slice(-2).join(' | ');
        throw new WireguardTunnelError(`wireguard-go exited${said ? `: ${said}` : ''}`);
      }
      if (performance.now() > deadline) {
        throw new WireguardTunnelError(
          `wireguard-go made no interface within ${SOCKET_WAIT_MS / 1000} s`,
        );
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** `wg setconf` from a 0600 file removed right after (it holds the private key). */
  private async setconf(config: WgConfig): Promise<void> {
    const file = this.paths.setconf;
    await atomicWriteFile(file, renderWgSetconf(config), 0o600);
    try {
      await this.wg(['setconf', this.ifname, file]);
    } catch (err) {
      throw new WireguardTunnelError(`wg setconf: ${this.reason(err)}`);
    } finally {
      await rm(file, { force: true });
    }
  }

  private async addRoutes(config: WgConfig): Promise<void> {
    const locals = await this.localPrefixes();
    // throws the WgConfigError of a prefix that would take the LAN's own traffic
    const plan = planWgRoutes(config, locals);
    if (plan.splitDefault4 || plan.splitDefault6) {
      // The endpoints keep the way they had (a host route through the current gateway), so
      // the tunnel's own packets do not loop into it. Names were resolved by `wg setconf`.
      const dump = parseWgDump((await this.wg(['show', this.ifname, 'dump'])).stdout);
      const endpoints = new Set(plan.endpointsNeedingHostRoute);
      for (const p of dump.peers) {
        const ep = endpointAddress(p.endpoint);
        if (ep && wgRoutesCover(plan.routes, ep) && !wgRoutesCover(locals, ep)) endpoints.add(ep);
      }
      for (const ep of endpoints) {
        const via = await this.currentRoute(ep);
        if (!via) continue;
        const v6 = isIP(ep) === 6;
        const args = [v6 ? '-6' : '-4', 'route', 'add', `${ep}/${v6 ? 128 : 32}`, ...via];
        if (await this.tryRoute(args)) this.addedRoutes.push(args);
      }
    }
    // before the halves: no moment where an answer to a client beyond the LAN goes into the tunnel
    const split = [...(plan.splitDefault4 ? ['-4'] : []), ...(plan.splitDefault6 ? ['-6'] : [])];
    if (split.length > 0) await this.keepRepliesOffTunnel(split as ('-4' | '-6')[]);
    for (const prefix of plan.routes) {
      const family = prefix.includes(':') ? '-6' : '-4';
      const args = [family, 'route', 'add', prefix, 'dev', this.ifname];
      if (await this.tryRoute(args)) this.addedRoutes.push(args);
    }
  }

  /**
   * The reply policy (REPLY_MARK): nftables marks every connection that arrives on another
   * interface than the tunnel and copies the mark onto its outgoing packets; `ip rule` sends
   * marked packets to the main table with routes of prefix length 0 and 1 ignored (the LAN's
   * own routes answer), then to REPLY_TABLE, which holds the default route the device had.
   * Without nft the tunnel still comes up, and the log says what it means.
   */
  private async keepRepliesOffTunnel(families: ('-4' | '-6')[]): Promise<void> {
    // a re-apply (a restarted wireguard-go) starts from nothing: no rule or nft rule twice
    await this.removeReplyPolicy();
    const ruleset = [
      `table inet ${REPLY_NFT_TABLE} {`,
      '  chain pre {',
      '    type filter hook prerouting priority mangle; policy accept;',
      `    iifname != "${this.ifname}" ct state new ct mark set ${REPLY_MARK}`,
      '  }',
      '  chain out {',
      '    type route hook output priority mangle; policy accept;',
      `    ct mark ${REPLY_MARK} meta mark set ${REPLY_MARK}`,
      '  }',
      '}',
      '',
    ].join('\n');
    try {
      const [file, argv] = hostArgv(this.host, 'nft', ['-f', '-']);
      await this.host.runner(file, argv, { input: ruleset, timeoutMs: this.opts.commandTimeoutMs });
    } catch (err) {
      this.host.log.warn(
        { err: this.reason(err) },
        'wireguard: no reply policy (nft): clients beyond the LAN get their answers through the tunnel',
      );
      return;
    }
    for (const family of families) {
      // prettier-ignore
      await this.ip('reply policy', [
        family, 'rule', 'add', 'priority', REPLY_RULES.main, 'fwmark', REPLY_MARK,
        'lookup', 'main', 'suppress_prefixlength', '1',
      ]);
      // prettier-ignore
      await this.ip('reply policy', [
        family, 'rule', 'add', 'priority', REPLY_RULES.gateway, 'fwmark', REPLY_MARK,
        'lookup', REPLY_TABLE,
      ]);
      const { stdout } = await this.runIp([family, '-j', 'route', 'show', 'default']);
      const routes = JSON.parse(stdout || '[]') as { gateway?: string; dev?: string }[];
      const gw = routes.find((r) => r.dev && r.dev !== this.ifname);
      if (gw?.dev) {
        // prettier-ignore
        await this.ip('reply policy', [
          family, 'route', 'add', 'default', ...(gw.gateway ? ['via', gw.gateway] : []),
          'dev', gw.dev, 'table', REPLY_TABLE,
        ]);
      }
    }
  }

  /** Removes the reply policy (idempotent: also what a crashed server left). */
  private async removeReplyPolicy(): Promise<void> {
    for (const family of ['-4', '-6']) {
      for (const priority of Object.values(REPLY_RULES)) {
        await this.runIp([family, 'rule', 'del', 'priority', priority]).catch(() => undefined);
      }
      await this.runIp([family, 'route', 'flush', 'table', REPLY_TABLE]).catch(() => undefined);
    }
    const [file, argv] = hostArgv(this.host, 'nft', ['delete', 'table', 'inet', REPLY_NFT_TABLE]);
    await this.host
      .runner(file, argv, { timeoutMs: this.opts.commandTimeoutMs })
      .catch(() => undefined);
  }

  /** The networks connected where the tunnel runs (every interface but `lo` and the tunnel). */
  private async localPrefixes(): Promise<string[]> {
    const { stdout } = await this.runIp(['-j', 'addr', 'show']);
    const links = JSON.parse(stdout) as {
      ifname?: string;
      addr_info?: { local?: string; prefixlen?: number; scope?: string }[];
    }[];
    const out: string[] = [];
    for (const l of links) {
      if (l.ifname === 'lo' || l.ifname === this.ifname) continue;
      for (const a of l.addr_info ?? []) {
        if (a.local && a.prefixlen !== undefined && a.scope !== 'link') {
          out.push(`${a.local}/${a.prefixlen}`);
        }
      }
    }
    return out;
  }

  /** `ip route add`: a route that exists already (the LAN's) is skipped, not replaced. */
  private async tryRoute(args: string[]): Promise<boolean> {
    try {
      await this.runIp(args);
      return true;
    } catch (err) {
      if (err instanceof CommandError && /File exists/i.test(err.stderr)) {
        this.host.log.info({ route: args.slice(3).join(' ') }, 'wireguard: route kept as it is');
        return false;
      }
      throw new WireguardTunnelError(`route (${args.join(' ')}): ${this.reason(err)}`);
    }
  }

  /** `via <gw> dev <if>` (or `dev <if>`) of the route the kernel uses now for `address`. */
  private async currentRoute(address: string): Promise<string[] | null> {
    try {
      const { stdout } = await this.runIp(['route', 'get', address]);
      const via = /\bvia (\S+)/.exec(stdout)?.[1];
      const dev = /\bdev (\S+)/.exec(stdout)?.[1];
      if (!dev || dev === this.ifname) return null;
      return via ? ['via', via, 'dev', dev] : ['dev', dev];
    } catch {
      return null;
    }
  }

  /** Stops the daemon, removes the interface, the routes and the socket. Idempotent. */
  private async bringDown(): Promise<void> {
    const wasUp = this.up;
    this.up = false;
    this.memoryCap?.stop();
    for (const args of this.addedRoutes.reverse()) {
      // the interface's own routes go with it; a host route to an endpoint does not
      await this.runIp([args[0] ?? '-4', 'route', 'del', ...args.slice(3)]).catch(() => undefined);
    }
    this.addedRoutes = [];
    const sup = this.sup;
    this.sup = null;
    await sup?.ensureStopped();
    await this.removeLeftovers();
    this.placed = false;
    if (wasUp) this.host.log.info({ interface: this.ifname }, 'wireguard: tunnel down');
  }

  /** What a crashed server (or a dead wireguard-go) left: the link and the UAPI socket. */
  private async removeLeftovers(): Promise<void> {
    await this.removeReplyPolicy();
    await this.runIp(['link', 'del', 'dev', this.ifname]).catch(() => undefined);
    await rm(this.paths.socket, { force: true }).catch(() => undefined);
  }

  /** The memory cap (`apps.memory_limit_mb`, cli-app.ts MemoryCap): over it, the tunnel stops and says why. */
  private watchMemory(): void {
    const limit = this.opts.memoryLimitBytes;
    if (!limit) return;
    this.memoryCap ??= new MemoryCap({
      limitBytes: limit,
      ...(this.opts.memorySampleMs !== undefined ? { sampleMs: this.opts.memorySampleMs } : {}),
      read: async () => (this.up ? this.rssBytes() : null),
      onOver: (rss) => {
        const why = `stopped: wireguard-go ${overCapText(rss, limit)}`;
        this.host.log.warn(
          { rss_bytes: rss, limit_bytes: limit },
          'wireguard: over its memory cap',
        );
        void this.queue
          .run(() => this.bringDown())
          .then(() => {
            this.lastError = why;
          })
          .catch(() => undefined);
      },
    });
    this.memoryCap.start();
  }

  // --- helpers ------------------------------------------------------------------------------

  private async saveState(enabled: boolean): Promise<void> {
    this.enabled = enabled;
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    await atomicWriteFile(this.paths.state, `${JSON.stringify({ enabled })}\n`, 0o600);
  }

  private async derivePublicKey(privateKey: string): Promise<string> {
    try {
      const { stdout } = await this.host.runner(this.opts.wg, ['pubkey'], {
        input: `${privateKey}\n`,
        timeoutMs: this.opts.commandTimeoutMs,
      });
      return stdout.trim();
    } catch (err) {
      // wg's message never holds the key (it came on stdin)
      throw new WireguardTunnelError(`wg pubkey: ${this.reason(err)}`);
    }
  }

  private wg(args: string[]) {
    const [file, argv] = hostArgv(this.host, this.opts.wg, args);
    return this.host.runner(file, argv, {
      timeoutMs: this.opts.commandTimeoutMs,
      maxBuffer: 1024 * 1024,
    });
  }

  /** `ip` where the apps live (`ip -n <ns> …`). */
  private runIp(args: string[]) {
    const ns = this.host.namespace;
    return this.host.runner('ip', ns === null ? args : ['-n', ns, ...args], {
      timeoutMs: this.opts.commandTimeoutMs,
    });
  }

  private async ip(step: string, args: string[]): Promise<void> {
    try {
      await this.runIp(args);
    } catch (err) {
      throw new WireguardTunnelError(`${step} (ip ${args.join(' ')}): ${this.reason(err)}`);
    }
  }

  private reason(err: unknown): string {
    if (err instanceof CommandError) return `${err.file} ${err.args[0] ?? ''}: ${err.reason}`;
    return (err as Error).message ?? String(err);
  }
}

/** The address of `host:port` / `[v6]:port`, or null. */
export function endpointAddress(endpoint: string | null): string | null {
  if (!endpoint) return null;
  const m = /^\[(.+)\]:\d+$/.exec(endpoint) ?? /^([^:]+):\d+$/.exec(endpoint);
  const host = m?.[1] ?? null;
  return host && isIP(host) ? host : null;
}

/** Whether a unix socket has a listener (a stale socket file refuses the connection). */
function acceptsConnection(path: string): Promise<boolean> {
  return new Promise((answer) => {
    const socket = connect(path);
    const done = (ok: boolean) => {
      socket.destroy();
      answer(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
    socket.setTimeout(1000, () => done(false));
  });
}

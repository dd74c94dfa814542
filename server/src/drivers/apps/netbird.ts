/**
 * The NetBird app (issue 27, docs/apps.md "NetBird"): the `netbird` program as daemon
 * (`netbird service run`, under the Supervisor with the memory cap) and as CLI (`status --json`,
 * `up`, `logout`), on T1's CLI-app base. Its state lives in `<data>/apps/netbird/` (the daemon's
 * config.json and NB_STATE_DIR) and its socket in `<data>/run/apps/netbird.sock`, never in
 * /etc/netbird, so it does not meet a NetBird the system runs itself.
 *
 * The login: with a setup key `netbird up --setup-key=…` runs to its end (Connected or an error);
 * without one, `netbird up` prints NetBird's SSO page and waits there until the user logged in
 * (its daemon's WaitSSOLogin lasts as long as the command), so the command keeps running in the
 * background, bounded by `apps.netbird.login_timeout_s`, and the page is handed to the console at
 * once. A new login, a logout, a stop or the server's exit ends it.
 */
import { join } from 'node:path';
import * as z from '@kvm/protocol/zod';
import type { AppState, AppSummary } from '@kvm/protocol/apps';
import {
  NETBIRD_DEFAULT_CONFIG,
  NETBIRD_DEFAULT_MANAGEMENT_URL,
  type NetbirdConfig,
  type NetbirdInfo,
  type NetbirdLoginAnswer,
  type NetbirdRunAnswer,
} from '@kvm/protocol/netbird';
import type { AppConfig } from '../../config';
import {
  AppDaemon,
  AppStore,
  AppToolError,
  CliTool,
  OneAtATime,
  formatDuration,
  notRunnable,
  toolError,
} from './cli-app';
import { hostArgv, type AppDriver, type AppHost } from './types';

/** A daemon that does not answer this long after its start is `starting`, later `error`. */
export const STARTING_GRACE_MS = 20_000;
/** Output of the SSO `netbird up` kept while looking for its URL. */
const LOGIN_OUTPUT_MAX = 64 * 1024;

// --- what `netbird status` prints --------------------------------------------------------------

const endpointSchema = z.looseObject({
  url: z.optional(z.string()),
  connected: z.optional(z.boolean()),
  error: z.optional(z.string()),
});

/** `netbird status --json` (client/status: OutputOverview); unknown fields are ignored. */
export const netbirdStatusSchema = z.looseObject({
  peers: z.optional(
    z.looseObject({ total: z.optional(z.number()), connected: z.optional(z.number()) }),
  ),
  cliVersion: z.optional(z.string()),
  daemonVersion: z.optional(z.string()),
  /** Idle, Connecting, Connected, NeedsLogin, LoginFailed, SessionExpired (older clients: absent). */
  daemonStatus: z.optional(z.string()),
  management: z.optional(endpointSchema),
  signal: z.optional(endpointSchema),
  netbirdIp: z.optional(z.string()),
  netbirdIpv6: z.optional(z.string()),
  fqdn: z.optional(z.string()),
});
export type NetbirdStatusJson = z.output<typeof netbirdStatusSchema>;

/** What a status run said: the JSON overview, or the daemon's not-logged-in text. */
export type NetbirdStatusOutput =
  { kind: 'json'; status: NetbirdStatusJson } | { kind: 'login'; daemonStatus: string };

/**
 * Reads `netbird status --json`'s output. Not logged in, the CLI prints text instead of JSON
 * ("Daemon status: NeedsLogin" and how to log in; GL looks for the same words); anything else
 * that is not the expected JSON is AppToolError "unreadable".
 */
export function parseNetbirdStatus(stdout: string): NetbirdStatusOutput {
  const text = /Daemon status:\s*([A-Za-z]+)/.exec(stdout);
  if (text && !stdout.trimStart().startsWith('{')) {
    return { kind: 'login', daemonStatus: text[1] as string };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(stdout);
  } catch {
    throw new AppToolError('netbird status printed something unreadable (not JSON)');
  }
  const parsed = netbirdStatusSchema.safeParse(raw);
  if (!parsed.success) {
    throw new AppToolError('netbird status printed something unreadable (unexpected JSON)');
  }
  return { kind: 'json', status: parsed.data };
}

/** An address without its prefix length (`100.92.1.7/16` -> `100.92.1.7`). */
function bare(address: string): string {
  const slash = address.indexOf('/');
  return slash < 0 ? address : address.slice(0, slash);
}

export interface NetbirdView {
  state: AppState;
  detail: string | null;
  /** With prefix, as NetBird prints it (GL's `netbird_ip`). */
  netbirdIp: string;
  addresses: string[];
  /** The management server is connected. */
  connected: boolean;
  fqdn: string;
  managementUrl: string | null;
  peersTotal: number;
  peersConnected: number;
  daemonVersion: string | null;
}

const EMPTY_VIEW: Omit<NetbirdView, 'state' | 'detail'> = {
  netbirdIp: '',
  addresses: [],
  connected: false,
  fqdn: '',
  managementUrl: null,
  peersTotal: 0,
  peersConnected: 0,
  daemonVersion: null,
};

/**
 * The apps center's state from what the running daemon said: not logged in -> `needs_login`
 * (with the waiting SSO page when there is one); the management server not connected ->
 * `unreachable` with its error; Connecting -> `connecting`; Connected -> `connected`.
 */
export function netbirdView(out: NetbirdStatusOutput, loginUrl: string | null): NetbirdView {
  if (out.kind === 'login') {
    const why: Record<string, string> = {
      NeedsLogin: 'Not logged in: give a setup key, or log in at the SSO page',
      LoginFailed: 'The last login failed: give a setup key, or log in again',
      SessionExpired: 'The login session expired: log in again',
    };
    return {
      ...EMPTY_VIEW,
      state: 'needs_login',
      detail: loginUrl
        ? `Waiting for the login at ${loginUrl}`
        : (why[out.daemonStatus] ?? `Daemon status: ${out.daemonStatus}`),
    };
  }
  const s = out.status;
  const management = s.management ?? {};
  const netbirdIp = s.netbirdIp ?? '';
  const view = {
    netbirdIp,
    addresses: [netbirdIp, s.netbirdIpv6 ?? ''].filter((a) => a !== '').map(bare),
    connected: management.connected === true,
    fqdn: s.fqdn ?? '',
    managementUrl: management.url ? management.url : null,
    peersTotal: s.peers?.total ?? 0,
    peersConnected: s.peers?.connected ?? 0,
    daemonVersion: s.daemonVersion ?? null,
  };
  const daemonStatus = s.daemonStatus ?? (view.connected ? 'Connected' : 'Connecting');
  if (
    daemonStatus === 'NeedsLogin' ||
    daemonStatus === 'LoginFailed' ||
    daemonStatus === 'SessionExpired'
  ) {
    return netbirdView({ kind: 'login', daemonStatus }, loginUrl);
  }
  if (daemonStatus === 'Idle') {
    return { ...view, state: 'needs_login', detail: 'NetBird is idle: log in to connect' };
  }
  if (!view.connected) {
    const where = management.url ? ` ${management.url}` : '';
    const error = management.error ? `: ${management.error.slice(0, 300)}` : '';
    return {
      ...view,
      state: daemonStatus === 'Connecting' && !management.error ? 'connecting' : 'unreachable',
      detail:
        daemonStatus === 'Connecting' && !management.error
          ? `Connecting to the management server${where}`
          : `The management server${where} cannot be reached${error}`,
    };
  }
  if (daemonStatus === 'Connected') return { ...view, state: 'connected', detail: null };
  return { ...view, state: 'connecting', detail: `Daemon status: ${daemonStatus}` };
}

/** The SSO page in `netbird up`'s output: the first URL that is not NetBird's documentation. */
export function loginUrlOf(output: string): string | null {
  for (const m of output.matchAll(/https?:\/\/[^\s"'<>]+/g)) {
    const url = m[0];
    if (!url.startsWith('https://docs.netbird.io/')) return url;
  }
  return null;
}

// --- the driver -------------------------------------------------------------------------------

const storeSchema = z.object({
  enable: z.boolean(),
  management_url: z.string(),
  disable_dns: z.boolean(),
  accept_routes: z.boolean(),
});

export interface NetbirdOptions {
  findExecutable?: (command: string) => string | null;
  readRss?: (pid: number) => Promise<number | null>;
  now?: () => number;
}

interface PendingLogin {
  url: string;
  abort: AbortController;
}

export class NetbirdApp implements AppDriver {
  readonly id = 'netbird' as const;
  readonly tool: CliTool;
  readonly daemon: AppDaemon;
  readonly store: AppStore<typeof storeSchema>;
  private readonly ops = new OneAtATime('netbird');
  private readonly now: () => number;
  private readonly dir: string;
  private readonly daemonAddr: string;
  private startedAt = -Infinity;
  private pending: PendingLogin | null = null;

  constructor(
    private readonly host: AppHost,
    private readonly config: AppConfig['apps'],
    opts: NetbirdOptions = {},
  ) {
    this.now = opts.now ?? (() => performance.now());
    this.dir = join(host.dataDir, 'netbird');
    this.daemonAddr = `unix://${join(host.runDir, 'netbird.sock')}`;
    this.tool = new CliTool({
      id: 'netbird',
      host,
      tool: config.netbird.tool,
      // one argv entry: cobra then needs no knowledge of the flag to find the command after it
      globalArgs: [`--daemon-addr=${this.daemonAddr}`],
      versionArgs: ['version'],
      commandTimeoutMs: config.command_timeout_ms,
      ...(opts.findExecutable ? { findExecutable: opts.findExecutable } : {}),
      now: this.now,
    });
    this.daemon = new AppDaemon({
      id: 'netbird',
      host,
      program: config.netbird.tool,
      args: [
        'service',
        'run',
        '--config',
        join(this.dir, 'config.json'),
        '--daemon-addr',
        this.daemonAddr,
        '--log-file',
        'console',
        '--log-level',
        'info',
      ],
      env: { NB_STATE_DIR: this.dir },
      memoryLimitMb: config.memory_limit_mb,
      go: true,
      ...(opts.findExecutable ? { findExecutable: opts.findExecutable } : {}),
      ...(opts.readRss ? { readRss: opts.readRss } : {}),
    });
    this.store = new AppStore(host, 'netbird', storeSchema, { ...NETBIRD_DEFAULT_CONFIG });
  }

  private get loginTimeoutMs(): number {
    return this.config.netbird.login_timeout_s * 1000;
  }

  async init(): Promise<void> {
    const cfg = await this.store.load();
    if (!cfg.enable) return;
    if (!(await this.tool.probe()).installed) return;
    try {
      await this.startDaemon();
    } catch (err) {
      this.host.log.warn({ app: 'netbird', err: String(err) }, 'NetBird did not start');
    }
  }

  async dispose(): Promise<void> {
    this.cancelLogin();
    await this.daemon.dispose();
  }

  private async startDaemon(): Promise<void> {
    this.startedAt = this.now();
    await this.daemon.start();
  }

  private cancelLogin(): void {
    this.pending?.abort.abort();
    this.pending = null;
  }

  /** The state, never throwing: what `get_info` and the apps center show. */
  async view(): Promise<
    NetbirdView & { installed: boolean; version: string | null; running: boolean }
  > {
    const probe = await this.tool.probe();
    const base = { installed: probe.installed, version: probe.version, running: false };
    const blocked = notRunnable(probe, this.daemon.capError);
    if (blocked) return { ...base, ...EMPTY_VIEW, ...blocked };
    if (!this.daemon.wanted) return { ...base, ...EMPTY_VIEW, state: 'stopped', detail: null };
    const running = this.daemon.running;
    const young = this.now() - this.startedAt < STARTING_GRACE_MS;
    if (!running) {
      const said = this.daemon.recentOutput().at(-1);
      return young
        ? { ...base, ...EMPTY_VIEW, state: 'starting', detail: null }
        : {
            ...base,
            ...EMPTY_VIEW,
            state: 'error',
            detail: `The NetBird daemon keeps exiting${said ? `: ${said.slice(0, 200)}` : ''}`,
          };
    }
    try {
      const { stdout } = await this.tool.run(['status', '--json'], { label: 'netbird status' });
      const view = netbirdView(parseNetbirdStatus(stdout), this.pending?.url ?? null);
      return { ...base, running, ...view };
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (young && /connect to daemon/i.test(message)) {
        return { ...base, running, ...EMPTY_VIEW, state: 'starting', detail: null };
      }
      return { ...base, running, ...EMPTY_VIEW, state: 'error', detail: message };
    }
  }

  async summary(): Promise<AppSummary> {
    const [v, cfg] = await Promise.all([this.view(), this.store.load()]);
    return {
      id: 'netbird',
      name: 'NetBird',
      installed: v.installed,
      version: v.daemonVersion ?? v.version,
      running: v.running,
      state: v.state,
      detail: v.detail,
      addresses: v.addresses,
      control_url: v.managementUrl ?? (cfg.management_url || NETBIRD_DEFAULT_MANAGEMENT_URL),
      rss_bytes: this.daemon.rssBytes,
      memory_limit_bytes: this.daemon.limitBytes,
    };
  }

  /** `GET /api/netbird/get_info`: GL's fields, then ours. */
  async info(): Promise<NetbirdInfo> {
    const [v, cfg] = await Promise.all([this.view(), this.store.load()]);
    return {
      running: v.running,
      netbird_ip: v.netbirdIp,
      connected: v.connected,
      // GL: not logged in is `success: false` "netbird not logged in"; a failing tool too (GL: 503)
      success: v.state !== 'error' && v.state !== 'needs_login',
      err_msg:
        v.state === 'error'
          ? (v.detail ?? '')
          : v.state === 'needs_login'
            ? 'netbird not logged in'
            : '',
      installed: v.installed,
      version: v.daemonVersion ?? v.version,
      state: v.state,
      detail: v.detail,
      login_url: this.pending?.url ?? '',
      fqdn: v.fqdn,
      management_url: cfg.management_url,
      peers_total: v.peersTotal,
      peers_connected: v.peersConnected,
    };
  }

  async getConfig(): Promise<NetbirdConfig> {
    return this.store.load();
  }

  /** Changes what is given (checked by the route); the next login uses it. */
  async setConfig(change: Partial<Omit<NetbirdConfig, 'enable'>>): Promise<NetbirdConfig> {
    return this.ops.run(async () => {
      const cfg = { ...(await this.store.load()), ...change };
      await this.store.save(cfg);
      return cfg;
    });
  }

  async start(): Promise<NetbirdRunAnswer> {
    return this.ops.run(async () => {
      await this.tool.requireInstalled();
      await this.store.save({ ...(await this.store.load()), enable: true });
      await this.startDaemon();
      const running = this.daemon.running;
      return {
        success: running,
        err_msg: running ? '' : 'the NetBird daemon did not start',
        running,
      };
    });
  }

  async stop(): Promise<NetbirdRunAnswer> {
    return this.ops.run(async () => {
      this.cancelLogin();
      await this.store.save({ ...(await this.store.load()), enable: false });
      await this.daemon.stop();
      return { success: true, err_msg: '', running: this.daemon.running };
    });
  }

  /** `netbird up`: with a setup key to its end; without, until its SSO page is known. */
  async login(setupKey: string | null): Promise<NetbirdLoginAnswer> {
    return this.ops.run(async () => {
      const probe = await this.tool.requireInstalled();
      if (!this.daemon.running) {
        return {
          success: false,
          err_msg: 'netbird process is not running',
          login_url: '',
          login_type: '',
        };
      }
      this.cancelLogin();
      const cfg = await this.store.load();
      const args = [
        'up',
        ...(cfg.disable_dns ? ['--disable-dns'] : []),
        ...(cfg.accept_routes ? [] : ['--disable-client-routes']),
        ...(cfg.management_url ? [`--management-url=${cfg.management_url}`] : []),
        ...(setupKey !== null ? [`--setup-key=${setupKey}`] : []),
      ];
      if (setupKey !== null) {
        await this.tool.run(args, {
          label: 'netbird up',
          timeoutMs: Math.min(this.loginTimeoutMs, 120_000),
          secrets: [setupKey],
        });
        return { success: true, err_msg: '', login_url: '', login_type: 'setup_key' };
      }
      const url = await this.ssoLogin(probe.path as string, args);
      return { success: true, err_msg: '', login_url: url ?? '', login_type: 'oauth' };
    });
  }

  /**
   * Starts `netbird up` without a key and resolves with its SSO page (or null when it ended at
   * once: already logged in). The command goes on in the background until the login is done,
   * it times out, or `cancelLogin` ends it.
   */
  private ssoLogin(path: string, args: string[]): Promise<string | null> {
    const [file, argv] = hostArgv(this.host, path, [`--daemon-addr=${this.daemonAddr}`, ...args]);
    const abort = new AbortController();
    const waitMs = this.config.command_timeout_ms;
    let output = '';
    return new Promise<string | null>((resolve, reject) => {
      let settled = false;
      const settle = (fn: () => void): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        fn();
      };
      const timer = setTimeout(
        () =>
          settle(() => {
            abort.abort();
            reject(
              new AppToolError(`netbird up printed no login URL within ${formatDuration(waitMs)}`),
            );
          }),
        waitMs,
      );
      const run = this.host.runner(file, argv, {
        timeoutMs: this.loginTimeoutMs,
        signal: abort.signal,
        maxBuffer: LOGIN_OUTPUT_MAX,
        onStdout: (chunk) => {
          if (output.length < LOGIN_OUTPUT_MAX) output += chunk;
          const url = loginUrlOf(output);
          if (url) {
            settle(() => {
              this.pending = { url, abort };
              resolve(url);
            });
          }
        },
      });
      run.then(
        () => {
          if (this.pending?.abort === abort) this.pending = null;
          settle(() => resolve(null));
        },
        (err: unknown) => {
          if (this.pending?.abort === abort) this.pending = null;
          settle(() => reject(toolError('netbird up', err, this.loginTimeoutMs)));
        },
      );
    });
  }

  /** `netbird logout` (deregisters this peer; a client without it: `netbird down`). */
  async logout(): Promise<{ success: boolean; err_msg: string }> {
    return this.ops.run(async () => {
      await this.tool.requireInstalled();
      if (!this.daemon.running)
        return { success: false, err_msg: 'netbird process is not running' };
      this.cancelLogin();
      try {
        await this.tool.run(['logout'], { label: 'netbird logout' });
      } catch (err) {
        if (!(err instanceof Error) || !/unknown command/i.test(err.message)) throw err;
        await this.tool.run(['down'], { label: 'netbird down' });
      }
      return { success: true, err_msg: '' };
    });
  }
}

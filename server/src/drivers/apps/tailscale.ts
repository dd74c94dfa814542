/**
 * The Tailscale app (issue 27, docs/apps.md "Tailscale"): `tailscaled` under the Supervisor
 * where the apps live (state in `<data>/apps/tailscale/`, socket in `<data>/run/apps/`), and the
 * `tailscale` CLI against that socket for everything else, in GL's `/api/tailscale/*` shapes
 * (gl-inet/glkvm `kvmd/apps/kvmd/api/tailscale.py`) plus our `up` (bind with an auth key or by
 * the login URL, a custom control server, the options).
 *
 * Never updated by itself: after each start `tailscale set --auto-update=false`, and this driver
 * has no path to `tailscale update`. Auth keys reach the CLI as `--auth-key=file:<path>` (a 0600
 * file removed right after), so they are in no argv, log or answer.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as z from '@kvm/protocol/zod';
import { APP_NAMES, type AppState, type AppSummary } from '@kvm/protocol/apps';
import {
  TAILSCALE_DEFAULT_CONFIG,
  TAILSCALE_DEFAULT_CONTROL_URL,
  type TailscaleConfig,
  type TailscaleConfigAnswer,
  type TailscaleLoginStatusAnswer,
  type TailscaleLoginUrlAnswer,
  type TailscaleLogoutAnswer,
  type TailscaleOptionsChange,
  type TailscaleRunningAnswer,
  type TailscaleSetConfigAnswer,
  type TailscaleStartStopAnswer,
  type TailscaleUpAnswer,
} from '@kvm/protocol/tailscale';
import type { AppConfig } from '../../config';
import {
  AppDaemon,
  AppStore,
  AppToolError,
  CliTool,
  notRunnable,
  OneAtATime,
  redact,
  toolError,
} from './cli-app';
import { hostArgv, type AppHost, type TailscaleControl } from './types';

/** How long `login_url` and a bind without a key wait for the control server's URL (GL: 10 s). */
export const LOGIN_URL_WAIT_MS = 10_000;
/** After a start, the daemon counts as `starting` (not `error`) while its socket does not answer yet. */
export const STARTING_GRACE_MS = 15_000;

const peerSchema = z.looseObject({
  ID: z.optional(z.string()),
  UserID: z.optional(z.number()),
  DNSName: z.optional(z.string()),
  TailscaleIPs: z.optional(z.nullable(z.array(z.string()))),
  Online: z.optional(z.boolean()),
});

/** What the driver reads of `tailscale status --json` (ipnstate.Status); other fields are ignored. */
export const tailscaleStatusSchema = z.looseObject({
  BackendState: z.string(),
  AuthURL: z.optional(z.nullable(z.string())),
  TailscaleIPs: z.optional(z.nullable(z.array(z.string()))),
  Self: z.optional(z.nullable(peerSchema)),
  Health: z.optional(z.nullable(z.array(z.string()))),
  User: z.optional(
    z.nullable(z.record(z.string(), z.looseObject({ LoginName: z.optional(z.string()) }))),
  ),
  Version: z.optional(z.string()),
});
export type TailscaleStatus = z.output<typeof tailscaleStatusSchema>;

const configSchema = z.object({
  enable: z.boolean(),
  exit_node: z.boolean(),
  use_exit_node: z.string(),
  advertise_routes: z.array(z.string()),
  accept_routes: z.boolean(),
  accept_dns: z.boolean(),
  login_server: z.string(),
}) satisfies z.ZodMiniType<TailscaleConfig>;

/** Health texts (tailscale/tailscale health/warnings.go) and login errors meaning the control server cannot be reached. */
const UNREACHABLE =
  /coordination server|network is down|could not connect to any relay server|network map from the coordination server|encrypted connection|no such host|connection refused|i\/o timeout|network is unreachable|context deadline exceeded|dial tcp/i;

/** The device's addresses in the tailnet: Self.TailscaleIPs, else the top-level list. */
export function tailscaleAddresses(st: TailscaleStatus): string[] {
  return [...(st.Self?.TailscaleIPs ?? st.TailscaleIPs ?? [])];
}

/** BackendState + Health as the apps center's state and detail. */
export function tailscaleState(st: TailscaleStatus): { state: AppState; detail: string | null } {
  const health = (st.Health ?? []).filter((h) => h.trim() !== '');
  const unreachable = health.find((h) => UNREACHABLE.test(h)) ?? null;
  const loginError = health.find((h) => /last login error/i.test(h)) ?? null;
  switch (st.BackendState) {
    case 'NoState':
      return { state: 'starting', detail: null };
    case 'NeedsLogin':
      if (unreachable && st.AuthURL) return { state: 'needs_login', detail: null };
      if (unreachable) return { state: 'unreachable', detail: unreachable };
      return { state: 'needs_login', detail: loginError };
    case 'NeedsMachineAuth':
      return {
        state: 'needs_login',
        detail: 'Waiting for an admin to approve this device in the Tailscale admin console',
      };
    case 'Stopped':
      return { state: 'stopped', detail: 'Logged in, but switched off (tailscale down)' };
    case 'Starting':
      return unreachable
        ? { state: 'unreachable', detail: unreachable }
        : { state: 'connecting', detail: null };
    case 'Running':
      return unreachable
        ? { state: 'unreachable', detail: unreachable }
        : { state: 'connected', detail: null };
    default:
      return {
        state: 'error',
        detail: `Tailscale reports an unknown state: ${st.BackendState.slice(0, 40)}`,
      };
  }
}

/** GL's `login_status` answer from a status. */
export function tailscaleLoginStatus(st: TailscaleStatus): TailscaleLoginStatusAnswer {
  const out: TailscaleLoginStatusAnswer = { status: st.BackendState };
  const uid = st.Self?.UserID;
  const login = uid !== undefined && uid !== 0 ? st.User?.[String(uid)]?.LoginName : undefined;
  if (login) out.login_name = login;
  for (const ip of tailscaleAddresses(st)) {
    if (ip.includes(':')) out.ipv6 ??= ip;
    else out.ipv4 ??= ip;
  }
  return out;
}

/** What the driver needs of AppDaemon (tests give a fake). */
export type TailscaleDaemon = Pick<
  AppDaemon,
  | 'start'
  | 'stop'
  | 'dispose'
  | 'running'
  | 'wanted'
  | 'rssBytes'
  | 'capError'
  | 'limitBytes'
  | 'recentOutput'
>;

export interface TailscaleOptions {
  /** Tests: a fake daemon, pretend-installed programs, a short poll. */
  daemon?: TailscaleDaemon;
  findExecutable?: (command: string) => string | null;
  pollMs?: number;
  loginWaitMs?: number;
  now?: () => number;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export class TailscaleApp implements TailscaleControl {
  readonly id = 'tailscale' as const;
  readonly tool: CliTool;
  private readonly daemon: TailscaleDaemon;
  private readonly store: AppStore<typeof configSchema>;
  private readonly one = new OneAtATime('tailscale');
  private readonly socket: string;
  private readonly pollMs: number;
  private readonly loginWaitMs: number;
  private readonly now: () => number;
  private startedAt = Number.NEGATIVE_INFINITY;
  private config: TailscaleConfig = { ...TAILSCALE_DEFAULT_CONFIG };

  constructor(
    private readonly host: AppHost,
    apps: AppConfig['apps'],
    opts: TailscaleOptions = {},
  ) {
    this.socket = join(host.runDir, 'tailscaled.sock');
    const stateDir = join(host.dataDir, 'tailscale', 'state');
    this.tool = new CliTool({
      id: 'tailscale',
      host,
      tool: apps.tailscale.tailscale,
      requires: [apps.tailscale.tailscaled],
      globalArgs: [`--socket=${this.socket}`],
      versionArgs: ['version'],
      commandTimeoutMs: apps.command_timeout_ms,
      ...(opts.findExecutable ? { findExecutable: opts.findExecutable } : {}),
    });
    this.daemon =
      opts.daemon ??
      new AppDaemon({
        id: 'tailscale',
        host,
        program: apps.tailscale.tailscaled,
        args: [
          `--statedir=${stateDir}`,
          `--socket=${this.socket}`,
          // no log upload to Tailscale's log server (the device's own log keeps what it says)
          '--no-logs-no-support',
        ],
        memoryLimitMb: apps.memory_limit_mb,
        go: true,
        ...(opts.findExecutable ? { findExecutable: opts.findExecutable } : {}),
      });
    this.store = new AppStore(host, 'tailscale', configSchema, { ...TAILSCALE_DEFAULT_CONFIG });
    this.pollMs = opts.pollMs ?? 1000;
    this.loginWaitMs = opts.loginWaitMs ?? LOGIN_URL_WAIT_MS;
    this.now = opts.now ?? (() => performance.now());
  }

  /** Loads the kept settings; an app that was on comes back on (a failure is its summary's). */
  async init(): Promise<void> {
    this.config = await this.store.load();
    if (!this.config.enable || this.host.unavailable() !== null) return;
    if (!(await this.tool.probe()).installed) return;
    try {
      // the server's start does not wait for tailscaled to answer (the summary says `starting`)
      await this.startDaemon({ wait: false });
    } catch (err) {
      this.host.log.warn({ app: 'tailscale', err: String(err) }, 'tailscale did not come back on');
    }
  }

  async dispose(): Promise<void> {
    await this.daemon.dispose();
  }

  /** The kept settings. */
  get settings(): TailscaleConfig {
    return { ...this.config, advertise_routes: [...this.config.advertise_routes] };
  }

  private get controlUrl(): string {
    return this.config.login_server || TAILSCALE_DEFAULT_CONTROL_URL;
  }

  async summary(): Promise<AppSummary> {
    const probe = await this.tool.probe();
    const base: AppSummary = {
      id: 'tailscale',
      name: APP_NAMES.tailscale,
      installed: probe.installed,
      version: probe.version,
      running: this.daemon.running,
      state: 'stopped',
      detail: null,
      addresses: [],
      control_url: this.controlUrl,
      rss_bytes: this.daemon.rssBytes,
      memory_limit_bytes: this.daemon.limitBytes,
    };
    const blocked = notRunnable(probe, this.daemon.capError);
    if (blocked) return { ...base, ...blocked };
    const unavailable = this.host.unavailable();
    if (!this.daemon.wanted && this.config.enable && unavailable !== null) {
      return { ...base, state: 'error', detail: unavailable };
    }
    if (!this.daemon.wanted) return base;
    if (!this.daemon.running) {
      const said = (this.daemon.recentOutput().slice(-1)[0] ?? '').slice(0, 200);
      return {
        ...base,
        state: 'error',
        detail: `tailscaled keeps exiting; restarting it${said ? `: ${said}` : ''}`,
      };
    }
    try {
      const st = await this.readStatus();
      return { ...base, ...tailscaleState(st), addresses: tailscaleAddresses(st) };
    } catch (err) {
      if (this.now() - this.startedAt < STARTING_GRACE_MS) return { ...base, state: 'starting' };
      return { ...base, state: 'error', detail: (err as Error).message };
    }
  }

  /** `tailscale status --json`, checked. */
  readStatus(): Promise<TailscaleStatus> {
    return this.tool.runJson(['status', '--json'], tailscaleStatusSchema, {
      label: 'tailscale status',
    });
  }

  /** The status, when the daemon runs; 400 (GL) when it does not. */
  private async liveStatus(): Promise<TailscaleStatus> {
    await this.tool.requireInstalled();
    if (!this.daemon.running) {
      throw new AppToolError('Tailscale is not running: start it first');
    }
    return this.readStatus();
  }

  /** GL `GET status`: whether tailscaled runs. */
  status(): TailscaleRunningAnswer {
    return { running: this.daemon.running };
  }

  /** Starts tailscaled; once it answers, its auto-update is turned off (awaited unless `wait: false`). */
  private async startDaemon(opts: { wait: boolean } = { wait: true }): Promise<void> {
    await mkdir(join(this.host.dataDir, 'tailscale', 'state'), { recursive: true, mode: 0o700 });
    await this.daemon.start();
    this.startedAt = this.now();
    const settle = (async () => {
      if (await this.waitAnswering()) await this.noAutoUpdate();
    })();
    if (opts.wait) await settle;
    else void settle.catch(() => undefined);
  }

  /**
   * Polls until the daemon's socket answers a status (true). Only a failing command (the socket
   * not there yet) is tried again, for about the command timeout; a hung or garbled tool is not.
   */
  private async waitAnswering(): Promise<boolean> {
    const tries = Math.max(1, Math.ceil(this.tool.timeoutMs / 250));
    for (let i = 0; i < tries; i++) {
      try {
        await this.readStatus();
        return true;
      } catch (err) {
        const retry = err instanceof AppToolError && err.kind === 'failed';
        if (!retry || !this.daemon.running) return false;
        await sleep(Math.min(this.pollMs, 250));
      }
    }
    return false;
  }

  /** `tailscale set --auto-update=false`: the client is never updated by itself (a tool without the flag has no auto-update). */
  private async noAutoUpdate(): Promise<void> {
    try {
      await this.tool.run(['set', '--auto-update=false'], { label: 'tailscale set' });
    } catch (err) {
      this.host.log.warn(
        { app: 'tailscale', err: (err as Error).message },
        'tailscale set --auto-update=false failed',
      );
    }
  }

  /** GL `POST start`: on, and kept on across restarts. */
  start(): Promise<TailscaleStartStopAnswer> {
    return this.one.run(async () => {
      await this.tool.requireInstalled();
      const unavailable = this.host.unavailable();
      if (unavailable) throw new AppToolError(unavailable);
      await this.save({ ...this.config, enable: true });
      await this.startDaemon();
      const running = this.daemon.running;
      return { success: running, output: '', running };
    });
  }

  /** GL `POST stop`: off, and kept off across restarts. */
  stop(): Promise<TailscaleStartStopAnswer> {
    return this.one.run(async () => {
      await this.save({ ...this.config, enable: false });
      await this.daemon.stop();
      const running = this.daemon.running;
      return { success: !running, output: '', running };
    });
  }

  /** GL `GET login_url`: the control server's URL, waiting up to 10 s for it ("" if none came). */
  loginUrl(): Promise<TailscaleLoginUrlAnswer> {
    return this.one.run(async () => {
      const st = await this.liveStatus();
      if (st.AuthURL || st.BackendState === 'Running') {
        return { url: st.AuthURL ?? '', state: st.BackendState };
      }
      return this.upForUrl();
    });
  }

  /** GL `GET login_status`. */
  async loginStatus(): Promise<TailscaleLoginStatusAnswer> {
    return tailscaleLoginStatus(await this.liveStatus());
  }

  /** GL `POST logout`: unbinds the device. */
  logout(): Promise<TailscaleLogoutAnswer> {
    return this.one.run(async () => {
      await this.liveStatus();
      const { stdout, stderr } = await this.tool.run(['logout'], { label: 'tailscale logout' });
      const st = await this.readStatus();
      return {
        success: st.BackendState === 'NeedsLogin',
        output: `${stdout}${stderr}`.trim(),
        status: st.BackendState,
      };
    });
  }

  /** `GET config`. */
  getConfig(): TailscaleConfigAnswer {
    return { success: true, config: this.settings };
  }

  /**
   * GL `POST config`: `tailscale set` with what changed, kept in app.json (used again by `up`).
   * With the daemon off the change is only kept. No change at all: GL's 200 `success: false`.
   */
  setConfig(change: TailscaleOptionsChange): Promise<TailscaleSetConfigAnswer> {
    const keys = Object.keys(change) as Array<keyof TailscaleOptionsChange>;
    if (keys.length === 0) {
      return Promise.resolve({
        success: false,
        error: 'At least one configuration parameter is required',
      });
    }
    return this.one.run(async () => {
      await this.tool.requireInstalled();
      const next = await this.merged(change);
      const args = ['set'];
      if (change.exit_node !== undefined) args.push(`--advertise-exit-node=${next.exit_node}`);
      if (change.use_exit_node !== undefined) args.push(`--exit-node=${next.use_exit_node}`);
      if (change.advertise_routes !== undefined || change.advertise_routes_auto) {
        args.push(`--advertise-routes=${next.advertise_routes.join(',')}`);
      }
      if (change.accept_routes !== undefined) args.push(`--accept-routes=${next.accept_routes}`);
      if (change.accept_dns !== undefined) args.push(`--accept-dns=${this.dnsArg(next)}`);
      let output = '';
      let status = 'NoState';
      if (this.daemon.running) {
        const r = await this.tool.run(args, { label: 'tailscale set' });
        output = `${r.stdout}${r.stderr}`.trim();
        status = (await this.readStatus()).BackendState;
      }
      await this.save(next);
      const applied: Extract<TailscaleSetConfigAnswer, { success: true }>['applied_settings'] = {
        advertise_routes:
          change.advertise_routes !== undefined || change.advertise_routes_auto
            ? next.advertise_routes.join(',') || null
            : null,
      };
      if (change.exit_node !== undefined) applied.exit_node = next.exit_node;
      if (change.use_exit_node !== undefined) applied.use_exit_node = next.use_exit_node;
      if (change.accept_routes !== undefined) applied.accept_routes = next.accept_routes;
      if (change.accept_dns !== undefined) applied.accept_dns = next.accept_dns;
      return { success: true, output, status, applied_settings: applied };
    });
  }

  /**
   * Ours `POST up`: binds the device. With an auth key `tailscale up --auth-key=file:…` and the
   * options; without one the login-URL flow (the URL to open, "" when already bound or none came
   * within 10 s). `loginServer` "" is Tailscale's own control server; undefined keeps the kept one.
   */
  up(params: {
    authKey?: string;
    loginServer?: string;
    options?: TailscaleOptionsChange;
  }): Promise<TailscaleUpAnswer> {
    return this.one.run(async () => {
      await this.liveStatus();
      const next = await this.merged(params.options ?? {});
      if (params.loginServer !== undefined) next.login_server = params.loginServer;
      await this.save(next);
      if (!params.authKey) {
        const got = await this.upForUrl();
        return { success: true, output: '', status: got.state, url: got.url };
      }
      const keyFile = join(this.host.runDir, `tailscale-key-${randomBytes(6).toString('hex')}`);
      await mkdir(this.host.runDir, { recursive: true, mode: 0o700 });
      await writeFile(keyFile, params.authKey, { mode: 0o600 });
      try {
        const r = await this.tool
          .run(this.upArgs(`--auth-key=file:${keyFile}`), {
            label: 'tailscale up',
            secrets: [params.authKey],
          })
          .catch((err: unknown) => this.explainUpTimeout(err));
        const st = await this.readStatus();
        return {
          success: st.BackendState === 'Running' || st.BackendState === 'Starting',
          output: redact(`${r.stdout}${r.stderr}`.trim(), [params.authKey]),
          status: st.BackendState,
          url: st.AuthURL ?? '',
        };
      } finally {
        await rm(keyFile, { force: true });
      }
    });
  }

  /**
   * Whether tailscaled may take over DNS. Not inside the developer targets' namespace: there
   * /etc/resolv.conf is `ip netns exec`'s bind mount of /etc/netns/<ns>/resolv.conf (the netns
   * driver's file), and tailscaled's backup of it would be written into this computer's /etc.
   */
  private dnsArg(c: TailscaleConfig): boolean {
    return this.host.namespace === null && c.accept_dns;
  }

  /**
   * A `tailscale up` that did not end in time most often waits for a control server it cannot
   * reach: when the status says so, that is the error (with the server and tailscaled's words).
   */
  private async explainUpTimeout(err: unknown): Promise<never> {
    if (err instanceof AppToolError && err.kind === 'timeout') {
      const st = await this.readStatus().catch(() => null);
      const state = st ? tailscaleState(st) : null;
      if (state?.state === 'unreachable') {
        throw new AppToolError(
          `The control server ${this.controlUrl} cannot be reached: ${state.detail ?? ''}`.trim(),
          'timeout',
        );
      }
    }
    throw err;
  }

  /** `tailscale up --reset` with every kept option (the CLI refuses an `up` that leaves one out). */
  private upArgs(authKeyArg: string | null): string[] {
    const c = this.config;
    return [
      'up',
      '--reset',
      `--login-server=${this.controlUrl}`,
      `--accept-routes=${c.accept_routes}`,
      `--accept-dns=${this.dnsArg(c)}`,
      `--advertise-exit-node=${c.exit_node}`,
      `--advertise-routes=${c.advertise_routes.join(',')}`,
      `--exit-node=${c.use_exit_node}`,
      ...(authKeyArg ? [authKeyArg] : []),
    ];
  }

  /**
   * Starts `tailscale up` without a key in the background and polls the status until the
   * control server's URL is there (or the device is bound, or LOGIN_URL_WAIT_MS passed), then
   * ends the command (the login goes on in tailscaled, as GL's `tailscale login`).
   */
  private async upForUrl(): Promise<TailscaleLoginUrlAnswer> {
    const abort = new AbortController();
    let failed: Error | null = null;
    const command = this.tool
      .run(this.upArgs(null), {
        label: 'tailscale up',
        signal: abort.signal,
        timeoutMs: this.loginWaitMs + this.tool.timeoutMs,
      })
      .then(
        () => undefined,
        (err: unknown) => {
          if (!abort.signal.aborted) failed = toolError('tailscale up', err, this.tool.timeoutMs);
        },
      );
    const deadline = this.now() + this.loginWaitMs;
    let st: TailscaleStatus | null = null;
    try {
      for (;;) {
        await sleep(this.pollMs);
        if (failed) throw failed;
        st = await this.readStatus();
        if (st.AuthURL || st.BackendState === 'Running' || this.now() > deadline) break;
      }
    } finally {
      abort.abort();
      await command;
    }
    return { url: st.AuthURL ?? '', state: st.BackendState };
  }

  /** The kept settings with `change` applied (`advertise_routes_auto`: eth0's subnet). */
  private async merged(change: TailscaleOptionsChange): Promise<TailscaleConfig> {
    const next = this.settings;
    if (change.exit_node !== undefined) next.exit_node = change.exit_node;
    if (change.use_exit_node !== undefined) next.use_exit_node = change.use_exit_node;
    if (change.advertise_routes !== undefined) next.advertise_routes = [...change.advertise_routes];
    if (change.advertise_routes_auto) next.advertise_routes = [await this.lanSubnet()];
    if (change.accept_routes !== undefined) next.accept_routes = change.accept_routes;
    if (change.accept_dns !== undefined) next.accept_dns = change.accept_dns;
    if (next.exit_node && next.use_exit_node !== '') {
      throw new AppToolError(
        'This device cannot offer itself as an exit node (exit_node) and use one (use_exit_node) at once',
      );
    }
    return next;
  }

  /** The device LAN's subnet (eth0's first IPv4 address, as a network), for `advertise_routes=auto`. */
  private async lanSubnet(): Promise<string> {
    const [file, args] = hostArgv(this.host, 'ip', ['-json', 'addr', 'show', 'eth0']);
    try {
      const { stdout } = await this.host.runner(file, args, { timeoutMs: this.tool.timeoutMs });
      const parsed = z
        .array(
          z.looseObject({
            addr_info: z.array(
              z.looseObject({ family: z.string(), local: z.string(), prefixlen: z.number() }),
            ),
          }),
        )
        .parse(JSON.parse(stdout));
      const v4 = parsed.flatMap((i) => i.addr_info).find((a) => a.family === 'inet');
      if (v4) {
        const ip = v4.local.split('.').reduce((n, o) => n * 256 + Number(o), 0);
        const mask = v4.prefixlen === 0 ? 0 : (0xffffffff << (32 - v4.prefixlen)) >>> 0;
        const net = (ip & mask) >>> 0;
        return `${[net >>> 24, (net >>> 16) & 255, (net >>> 8) & 255, net & 255].join('.')}/${v4.prefixlen}`;
      }
    } catch {
      // fall through
    }
    throw new AppToolError('Failed to automatically get eth0 subnet information');
  }

  private async save(next: TailscaleConfig): Promise<void> {
    await this.store.save(next);
    this.config = next;
  }
}

export function tailscaleFactory(host: AppHost, apps: AppConfig['apps']): TailscaleApp {
  return new TailscaleApp(host, apps);
}

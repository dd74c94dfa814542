/**
 * The apps center's drivers (issue 27, docs/apps.md): one per private-network app, each around
 * its own tool (tailscale, netbird, zerotier-cli, wireguard-go + wg). What the apps center lists
 * is common; each app's own calls are its service's (services/apps/<id>-service.ts).
 */
import type { AppId, AppSummary } from '@kvm/protocol/apps';
import type {
  TailscaleConfig,
  TailscaleConfigAnswer,
  TailscaleLoginStatusAnswer,
  TailscaleLoginUrlAnswer,
  TailscaleLogoutAnswer,
  TailscaleOptionsChange,
  TailscaleRunningAnswer,
  TailscaleSetConfigAnswer,
  TailscaleStartStopAnswer,
  TailscaleUpAnswer,
} from '@kvm/protocol/tailscale';
import type { WgConfig, WgPublicConfig, WgStatus } from '@kvm/protocol/wireguard';
import type { Logger } from '../../log';
import type { CommandRunner } from '../../process/run';
import type { Lifecycle } from '../types';

/**
 * Where an app's tools run. On the developer targets the device's network is a namespace
 * (`namespace`: its name) and an app must live there, like the device's own traffic; on a board
 * (`namespace: null`) it is this computer's own network.
 */
export interface AppHost {
  namespace: string | null;
  /** Why apps cannot run here at all (no root for the namespace); null when they can. */
  unavailable(): string | null;
  /** Resolves once `namespace` exists (the developer targets start it at first use). */
  ready(): Promise<void>;
  /** `<data>/apps`: each app keeps its state in `<dataDir>/<id>/` (0700). */
  dataDir: string;
  /** `<data>/run/apps`: sockets and pidfiles. */
  runDir: string;
  log: Logger;
  /** One-shot commands (tests inject fakes serving recorded fixtures). */
  runner: CommandRunner;
}

/** The argv that runs `file args` where the apps live: inside the namespace, or here. */
export function hostArgv(
  host: Pick<AppHost, 'namespace'>,
  file: string,
  args: readonly string[],
): [string, string[]] {
  return host.namespace === null
    ? [file, [...args]]
    : ['ip', ['netns', 'exec', host.namespace, file, ...args]];
}

export interface AppDriver extends Lifecycle {
  readonly id: AppId;
  /** What the apps center shows; never throws (a failing tool is `state: 'error'`). */
  summary(): Promise<AppSummary>;
}

/** The WireGuard app's own calls (drivers/apps/wireguard.ts; services/apps/wireguard-service.ts). */
export interface WireguardControl extends AppDriver {
  readonly id: 'wireguard';
  readonly configured: boolean;
  readonly running: boolean;
  /** Parses and checks a configuration's text (throws WgConfigError); changes nothing. */
  parse(text: string): WgConfig;
  /** Why the configuration would cut the device off its own LAN, or null. */
  routeProblem(config: WgConfig): Promise<Error | null>;
  setConfig(text: string, config: WgConfig): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
  logout(): Promise<void>;
  status(): Promise<WgStatus>;
  publicConfig(): WgPublicConfig | null;
}

/** A step of starting or changing the WireGuard tunnel failed; what was done before it is undone. */
export class WireguardTunnelError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WireguardTunnelError';
  }
}

/** The Tailscale app's own calls (drivers/apps/tailscale.ts; routes/tailscale.ts), GL's shapes. */
export interface TailscaleControl extends AppDriver {
  readonly id: 'tailscale';
  readonly settings: TailscaleConfig;
  status(): TailscaleRunningAnswer;
  start(): Promise<TailscaleStartStopAnswer>;
  stop(): Promise<TailscaleStartStopAnswer>;
  loginUrl(): Promise<TailscaleLoginUrlAnswer>;
  loginStatus(): Promise<TailscaleLoginStatusAnswer>;
  logout(): Promise<TailscaleLogoutAnswer>;
  getConfig(): TailscaleConfigAnswer;
  setConfig(change: TailscaleOptionsChange): Promise<TailscaleSetConfigAnswer>;
  up(params: {
    authKey?: string;
    loginServer?: string;
    options?: TailscaleOptionsChange;
  }): Promise<TailscaleUpAnswer>;
}

export function isTailscaleControl(driver: AppDriver | undefined): driver is TailscaleControl {
  return driver?.id === 'tailscale' && 'loginUrl' in driver;
}

/**
 * The apps this device has (issue 27): one factory per app, in APP_IDS order. Each app's file
 * adds its line here; the apps center and `/api/apps` list what the factories make.
 */
import { join } from 'node:path';
import type { AppConfig } from '../../config';
import { NetbirdApp } from './netbird';
import { tailscaleFactory } from './tailscale';
import type { AppDriver, AppHost } from './types';
import { WireguardDriver } from './wireguard';
import { ZerotierApp } from './zerotier';
import { NetnsNetwork } from '../network/netns';
import type { NetworkDriver } from '../network/types';
import type { Logger } from '../../log';
import { type CommandRunner, runCommand } from '../../process/run';

export type AppFactory = (host: AppHost, config: AppConfig['apps']) => AppDriver;

export const APP_FACTORIES: readonly AppFactory[] = [
  tailscaleFactory,
  (host, c) => new NetbirdApp(host, c),
  (host, c) => new ZerotierApp(host, c),
  (host, c) =>
    new WireguardDriver(host, {
      wireguardGo: c.wireguard.wireguard_go,
      wg: c.wireguard.wg,
      commandTimeoutMs: c.command_timeout_ms,
      memoryLimitBytes: c.memory_limit_mb * 1024 * 1024,
    }),
];

/**
 * Where the apps run: inside the developer targets' device namespace (started at first use),
 * or on this computer's own network (a board's NetworkManager, or a network not managed here).
 */
export function appHost(
  dataDir: string,
  network: NetworkDriver,
  log: Logger,
  runner: CommandRunner = runCommand,
): AppHost {
  const base = {
    dataDir: join(dataDir, 'apps'),
    runDir: join(dataDir, 'run', 'apps'),
    log,
    runner,
  };
  if (network instanceof NetnsNetwork) {
    return {
      ...base,
      namespace: network.names.dev,
      unavailable: () => network.availability().reason,
      ready: () => network.ensureUp(),
    };
  }
  return { ...base, namespace: null, unavailable: () => null, ready: async () => undefined };
}

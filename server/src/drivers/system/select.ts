/**
 * Which driver manages the device's network (config `system.network`): the developer targets'
 * `netns` (also what `target` means there), NetworkManager's `nmcli` on a real device, or
 * `disabled`, which says so.
 */
import { join } from 'node:path';
import type { AppConfig } from '../../config';
import type { Logger } from '../../log';
import { NetnsNetwork } from '../netns/netns-network';
import { nmcliNetwork } from '../nmcli';
import { UnavailableNetwork } from './none';
import type { NetworkDriver } from './types';

export const NETWORK_DISABLED = 'Network management is disabled in the configuration';

export function networkDriver(
  config: AppConfig,
  log: Logger,
  opts: { eager: boolean },
): NetworkDriver {
  switch (config.system.network) {
    case 'target':
    case 'netns':
      return new NetnsNetwork({
        dataDir: config.data_dir,
        root: config.system.root ?? join(config.data_dir, 'system-root'),
        log,
        eager: opts.eager,
      });
    case 'disabled':
      return new UnavailableNetwork(NETWORK_DISABLED);
    case 'nmcli':
      return nmcliNetwork(config, log);
  }
}

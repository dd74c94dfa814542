/**
 * A real device's network, Wi-Fi and clock drivers (NetworkManager and systemd). The hardware
 * target takes all three; `system.network: nmcli` selects the network one on any target.
 */
import type { AppConfig } from '../../config';
import type { Logger } from '../../log';
import { systemClock } from '../clock/timedatectl';
import type { ClockDriver, NetworkDriver, WifiDriver } from '../system/types';
import { NmcliNetwork } from './network';
import { NmcliWifi } from './wifi';

export { NmcliError, NmcliNetwork } from './network';
export { NmcliWifi } from './wifi';

export function nmcliNetwork(_config: AppConfig, log?: Logger): NmcliNetwork {
  return new NmcliNetwork(log ? { log } : {});
}

export function nmcliSystemDrivers(
  config: AppConfig,
  log?: Logger,
): { network: NetworkDriver; wifi: WifiDriver; clock: ClockDriver } {
  return {
    network: nmcliNetwork(config, log),
    wifi: new NmcliWifi(log ? { log } : {}),
    clock: systemClock(config.system.root ?? '/'),
  };
}

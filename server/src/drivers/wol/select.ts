/**
 * Which WolSender a device gets (docs/drivers.md "Wake-on-LAN"): the one of its network driver.
 * The developer targets' `netns` network sends from inside the device's namespace; a network
 * that is this computer's own (`nmcli`: NetworkManager on the device itself) sends from this
 * process; a network not managed here cannot send at all. `wol.network: host` picks this
 * process's socket whatever the driver (a board whose network is the host's, loopback tests).
 */
import { NetnsNetwork } from '../network/netns';
import { NetnsWolSender } from './netns';
import type { NetworkDriver } from '../network/types';
import { DisabledWol } from './disabled';
import { HostWolSender } from './host';
import type { WolSender } from './types';

export interface WolNetworkConfig {
  /** `device`: the network driver's network; `host`: this computer's. */
  network: 'device' | 'host';
  /** With the host's network: send from this interface (to its subnet's broadcast). */
  interface: string | null;
}

export function wolSender(config: WolNetworkConfig, network: NetworkDriver): WolSender {
  if (config.network === 'host') return new HostWolSender(config.interface);
  if (network instanceof NetnsNetwork) return new NetnsWolSender(network);
  if (network.name === 'nmcli') return new HostWolSender(config.interface);
  const why = network.availability().reason ?? `the ${network.name} network`;
  return new DisabledWol(
    `Wake-on-LAN goes out on the device's network, which is not managed here (${why}); ` +
      `wol.network: host sends it from this computer's network`,
  );
}

/** A network this server may not manage (`system.network: disabled`, or no root): it says why. */
import { SystemFeatureUnavailableError } from '../types';
import type { Availability, EthernetStatus, NetworkDriver } from './types';

const noop = (): (() => void) => () => undefined;

/** What a network that cannot be managed here reports: no interface, no address. */
export function emptyEthernetStatus(): EthernetStatus {
  return {
    interface: '',
    mac_address: '',
    link: 'down',
    mode: 'dhcp',
    ip_address: '',
    netmask: '',
    gateway: '',
    dns_servers: [],
    dns_manual: false,
  };
}

/** A network this server may not manage (config `system.network: disabled`, or no root). */
export class DisabledNetwork implements NetworkDriver {
  readonly name = 'disabled';
  constructor(private readonly reason: string) {}
  availability(): Availability {
    return { available: false, reason: this.reason };
  }
  async status(): Promise<EthernetStatus> {
    return emptyEthernetStatus();
  }
  async macAddress(): Promise<string> {
    return '';
  }
  async apply(): Promise<never> {
    throw new SystemFeatureUnavailableError(this.reason);
  }
  async hostname(): Promise<string> {
    return '';
  }
  async setHostname(): Promise<never> {
    throw new SystemFeatureUnavailableError(this.reason);
  }
  onChange = noop;
  async init(): Promise<void> {}
  async dispose(): Promise<void> {}
}

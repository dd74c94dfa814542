/**
 * Administration drivers for what a target does not have: no Wi-Fi adapter, no manageable
 * network, no display to identify, no USB identity to apply. Each says so honestly instead of
 * pretending; the services turn `availability()` into the group's message.
 */
import type { WifiStatus } from '@kvm/protocol';
import { BadRequestError } from '../../errors';
import type {
  Availability,
  DisplayDriver,
  DisplayMode,
  EthernetStatus,
  NetworkDriver,
  UsbIdentityDriver,
  WifiDriver,
} from './types';

/** A system-group feature this device does not have here (answered 400, as GL does). */
export class SystemFeatureUnavailableError extends BadRequestError {}

const noop = (): (() => void) => () => undefined;

export const NO_WIFI_ADAPTER = 'No Wi-Fi adapter';

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

/** The `qemu` target's Wi-Fi: this machine has no radio (architecture.md), and says so. */
export class NoWifi implements WifiDriver {
  readonly name = 'none';
  readonly adapter = 'none' as const;
  availability(): Availability {
    return { available: false, reason: NO_WIFI_ADAPTER };
  }
  async status(): Promise<WifiStatus> {
    return {
      state: 0,
      ssid: '',
      bssid: '',
      channel: 0,
      signal: 0,
      fail_type: null,
      ipv4: { ip: '', dns: [], gateway: '' },
      enabled: false,
      adapter: 'none',
      adapter_label: NO_WIFI_ADAPTER,
    };
  }
  async scan(): Promise<never> {
    throw new SystemFeatureUnavailableError(NO_WIFI_ADAPTER);
  }
  async saved(): Promise<{ ssid: string; encryption: string }[]> {
    return [];
  }
  async connect(): Promise<never> {
    throw new SystemFeatureUnavailableError(NO_WIFI_ADAPTER);
  }
  async disconnect(): Promise<void> {}
  async setEnabled(enabled: boolean): Promise<void> {
    if (enabled) throw new SystemFeatureUnavailableError(NO_WIFI_ADAPTER);
  }
  async forget(): Promise<boolean> {
    return false;
  }
  onChange = noop;
  async init(): Promise<void> {}
  async dispose(): Promise<void> {}
}

/** A network this server may not manage (config `system.network: disabled`, or no root). */
export class UnavailableNetwork implements NetworkDriver {
  readonly name = 'disabled';
  constructor(private readonly reason: string) {}
  availability(): Availability {
    return { available: false, reason: this.reason };
  }
  async status(): Promise<EthernetStatus> {
    return emptyEthernetStatus();
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

/** No display output to identify (`video.type: disabled`): the EDID is kept, nothing sees it. */
export class NoDisplay implements DisplayDriver {
  readonly name = 'none';
  readonly applies = 'none' as const;
  async apply(_edid: Buffer, _mode: DisplayMode): Promise<void> {}
  pending(): boolean {
    return false;
  }
  current(): DisplayMode | null {
    return null;
  }
  async init(): Promise<void> {}
  async dispose(): Promise<void> {}
}

/** No USB device identity to apply here: the fields are kept and take effect on hardware. */
export class NoUsbIdentity implements UsbIdentityDriver {
  readonly name = 'none';
  readonly applies = [];
  async apply(): Promise<void> {}
  async init(): Promise<void> {}
  async dispose(): Promise<void> {}
}

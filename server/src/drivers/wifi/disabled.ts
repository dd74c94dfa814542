/** No Wi-Fi adapter (the QEMU target; this machine has no radio): says so, changes nothing. */
import type { WifiStatus } from '@kvm/protocol';
import { SystemFeatureUnavailableError, type Availability } from '../types';
import type { WifiDriver } from './types';

const noop = (): (() => void) => () => undefined;

export const NO_WIFI_ADAPTER = 'No Wi-Fi adapter';

/** The `qemu` target's Wi-Fi: this machine has no radio (architecture.md), and says so. */
export class DisabledWifi implements WifiDriver {
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

/** The device's Wi-Fi client (issue 11): scan, connect, saved networks. */
import type { WifiNetwork, WifiStatus } from '@kvm/protocol';
import type { Availability } from '../types';

export interface WifiConnectRequest {
  ssid: string;
  key?: string;
  bssid?: string;
  /** A network that does not broadcast its SSID: probe for it by name. */
  hidden?: boolean;
  /** Keep it in the saved list (default true). */
  remember?: boolean;
}

export interface WifiConnectOutcome {
  ok: boolean;
  fail_type: 'not-found' | 'key' | null;
  /** What the radio said, for the log and the toast. */
  message: string;
}

export interface WifiDriver {
  readonly name: string;
  /** `nmcli`, `test-radio` (simulated; says so), `none` (no adapter). */
  readonly adapter: WifiStatus['adapter'];
  availability(): Availability;
  status(): Promise<WifiStatus>;
  scan(): Promise<Omit<WifiNetwork, 'saved' | 'connected'>[]>;
  saved(): Promise<{ ssid: string; encryption: string }[]>;
  connect(request: WifiConnectRequest): Promise<WifiConnectOutcome>;
  disconnect(): Promise<void>;
  setEnabled(enabled: boolean): Promise<void>;
  forget(ssid: string): Promise<boolean>;
  onChange(listener: () => void): () => void;
  init(): Promise<void>;
  dispose(): Promise<void>;
}

/**
 * The device's own network (Ethernet and host name; issue 11, docs/system.md). A driver applies
 * exactly what it is given and either succeeds or throws with what failed, leaving the previous
 * settings in force. Validation of user input, persistence and the confirm-or-revert of risky
 * changes live in the services (services/system/).
 */
import type { NetworkMode } from '@kvm/protocol';
import { InternalError } from '../../errors';
import type { Availability } from '../types';

export type { Availability } from '../types';

/** A network change (or the namespaces' start) failed; the previous settings are in force. */
export class NetworkApplyError extends InternalError {}

/** Ethernet settings as applied (validated before a driver sees them). */
export interface EthernetSettings {
  mode: NetworkMode;
  /** Static only. */
  ip_address?: string;
  netmask?: string;
  gateway?: string;
  /** Manual DNS servers; null: the DHCP server's (static: none). */
  dns_servers: string[] | null;
}

/** What the interface holds now (read from the system, not from what was asked). */
export interface EthernetStatus {
  interface: string;
  mac_address: string;
  link: 'up' | 'down';
  mode: NetworkMode;
  /** '' when no address is held (a DHCP lease still pending). */
  ip_address: string;
  netmask: string;
  gateway: string;
  dns_servers: string[];
  dns_manual: boolean;
}

export interface NetworkDriver {
  readonly name: string;
  availability(): Availability;
  status(): Promise<EthernetStatus>;
  /**
   * The Ethernet's hardware address, lower case, or '' when there is none: read without starting
   * or waiting on anything (the cloud's device identity as the server starts, context.ts).
   */
  macAddress(): Promise<string>;
  /** Applies `settings`; resolves once applied (DHCP: once a lease is held or the wait ends). */
  apply(settings: EthernetSettings): Promise<void>;
  hostname(): Promise<string>;
  setHostname(name: string): Promise<void>;
  /** Called whenever what `status()` answers may have changed (lease, link). */
  onChange(listener: () => void): () => void;
  init(): Promise<void>;
  dispose(): Promise<void>;
}

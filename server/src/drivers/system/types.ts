/**
 * The device's own administration drivers (issue 11; architecture.md "Device administration"):
 * network (Ethernet and hostname), Wi-Fi, clock and time zone, display identity (EDID) and USB
 * identity. Each target picks one of each (targets.ts); services and routes never ask which.
 *
 * A driver applies exactly what it is given and either succeeds or throws with what failed,
 * leaving the previous settings in force. Validation of user input, persistence and the
 * confirm-or-revert of risky network changes live in the services (services/system/).
 */
import type { NetworkMode, UsbIdentityField, WifiNetwork, WifiStatus } from '@kvm/protocol';

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

export interface Availability {
  available: boolean;
  /** Why not, for the user ('Network namespaces need root'); null when available. */
  reason: string | null;
}

export interface NetworkDriver {
  readonly name: string;
  availability(): Availability;
  status(): Promise<EthernetStatus>;
  /** Applies `settings`; resolves once applied (DHCP: once a lease is held or the wait ends). */
  apply(settings: EthernetSettings): Promise<void>;
  hostname(): Promise<string>;
  setHostname(name: string): Promise<void>;
  /** Called whenever what `status()` answers may have changed (lease, link). */
  onChange(listener: () => void): () => void;
  init(): Promise<void>;
  dispose(): Promise<void>;
}

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

export interface ClockDriver {
  readonly name: string;
  /** `system`: the real clock; `offset`: a developer target's clock kept as an offset. */
  readonly kind: 'system' | 'offset';
  /** Unix ms of the device clock. */
  now(): number;
  /** The IANA name of the zone in force (`Etc/GMT-8`, `Europe/Berlin`, `UTC`). */
  zone(): Promise<string>;
  setZone(name: string): Promise<void>;
  /** Sets the device clock to unix ms. */
  setTime(unixMs: number): Promise<void>;
  init(): Promise<void>;
  dispose(): Promise<void>;
}

/** The preferred mode an EDID asks for. */
export interface DisplayMode {
  width: number;
  height: number;
  hz: number;
}

export interface DisplayDriver {
  readonly name: string;
  /** See `EdidState.applies` in the protocol. */
  readonly applies: 'now' | 'power_cycle' | 'none';
  /** Hands the EDID (256 bytes) and its preferred mode to the display; may take effect later. */
  apply(edid: Buffer, mode: DisplayMode): Promise<void>;
  /** True while an applied EDID waits for the remote computer's next power cycle. */
  pending(): boolean;
  /** The mode the remote computer sees now, or null when unknown. */
  current(): DisplayMode | null;
  init(): Promise<void>;
  dispose(): Promise<void>;
}

export interface UsbIdentity {
  otg_manufacturer: string;
  otg_product: string;
  /** 16-bit numbers. */
  otg_vendor_id: number;
  otg_product_id: number;
  otg_serial: string;
}

export interface UsbIdentityDriver {
  readonly name: string;
  /** The fields this target makes the remote computer see; the others only on hardware. */
  readonly applies: UsbIdentityField[];
  /** Re-enumerates the USB devices with `identity` (GL: restarts the gadget). */
  apply(identity: UsbIdentity): Promise<void>;
  init(): Promise<void>;
  dispose(): Promise<void>;
}

/** One target's administration drivers. */
export interface SystemDrivers {
  network: NetworkDriver;
  wifi: WifiDriver;
  clock: ClockDriver;
  display: DisplayDriver;
  usb: UsbIdentityDriver;
}

/**
 * Device administration on the wire (SPEC 3 "System params", "Network config", "USB identity",
 * "EDID", "System time info"; wire-protocol.md §5.3-5.5, 5.8, 5.13). GL's field names where GL
 * has them; our additions are named here and ignored by GL's clients. Routes: docs/api.md.
 */

/** `GET /api/system/get_network_config` → `{success: true, config}` (GL §5.4 plus ours). */
export interface NetworkConfigWire {
  // GL's fields
  is_dhcp: boolean;
  ip_address: string;
  netmask: string;
  gateway: string;
  dns_servers: string[];
  interface: string;
  mac_address: string;
  /** Link and address: `online` when the link is up and an address is held. */
  state: 'online' | 'offline';
  // SPEC 3's names for the same values
  protocol: NetworkMode;
  dns_server1: string;
  dns_server2: string;
  // ours
  /** Whether `dns_servers` are the configured ones (false: the DHCP server's). */
  dns_manual: boolean;
  hostname: string;
  /** Link state of the interface (carrier). */
  link: 'up' | 'down';
  /** False when this device cannot manage its network here (no root, no NetworkManager). */
  available: boolean;
  unavailable_reason: string | null;
  /** Which driver manages the network: `netns` (developer targets), `nmcli`, `disabled`. */
  driver: string;
  /** A change waiting for confirmation, or null. */
  pending: PendingNetworkChange | null;
}

export type NetworkMode = 'dhcp' | 'static';

/**
 * A network change applied but not yet kept (issue 11, item 3): unless confirmed by
 * `POST /api/system/confirm_network_config?id=` before `expires_at`, the previous configuration
 * comes back by itself.
 */
export interface PendingNetworkChange {
  id: string;
  /** What changed: Ethernet settings or the Wi-Fi network. */
  kind: 'ethernet' | 'wifi';
  /** Unix ms when it reverts. */
  expires_at: number;
  /** The whole window in seconds (60 by default). */
  timeout_s: number;
  /** The address to reach the console at after the change (`https://ip:port/`), or null. */
  new_address: string | null;
  /** The device's address before the change. */
  previous_address: string | null;
}

/** `POST /api/system/set_network_config` → this (GL answers `{success: true}` only). */
export interface SetNetworkConfigResult {
  success: true;
  pending: PendingNetworkChange | null;
}

/** How long an unconfirmed network change lives (issue 11: 60 s). */
export const NETWORK_CONFIRM_TIMEOUT_S = 60;

/** `GET /api/system/get_hostname` and `POST set_hostname?hostname=` → this. */
export interface HostnameResult {
  success: true;
  hostname: string;
}

/** RFC 1123 host label rules, at most 63 characters (one label: the device's own name). */
export const HOSTNAME_MAX = 63;

/** `GET /api/system/time` (GL §5.5, 5.13). */
export interface SystemTimeResult {
  success: true;
  /** Unix seconds of the device clock. */
  time: number;
  /**
   * Minutes. For an `Etc/GMT±h` zone, JS `getTimezoneOffset`'s sign (positive = west of UTC,
   * SPEC 3's inverted sign); for a city zone local − UTC (positive = east), as GL does.
   */
  time_zone: number;
  timezone_name: string;
  // ours
  /** local − UTC in minutes, always east-positive, whatever kind of zone is set. */
  utc_offset_minutes: number;
  /** Whether the clock is the real system clock (`system`) or this target's own offset clock. */
  clock: 'system' | 'offset';
}

/** GL's `time_zone` bounds (minutes). */
export const TIME_ZONE_MIN_MINUTES = -840;
export const TIME_ZONE_MAX_MINUTES = 840;

/** SPEC 3: the UTC offset list runs from UTC-12:00 to UTC+14:00 (whole hours). */
export const UTC_OFFSET_MIN_HOURS = -12;
export const UTC_OFFSET_MAX_HOURS = 14;

/** `GET /api/system/timezone/list[?region=]`. */
export interface TimezoneListResult {
  success: true;
  timezones: string[];
  count: number;
}

/** `GET /api/system/get_param` (GL §5.3 plus SPEC 3's `msd_type`, `enable_mic`, plus ours). */
export interface SystemParams {
  success: true;
  absolute_mouse: boolean;
  msd_partition: string;
  otg_manufacturer: string;
  otg_product: string;
  /** `0x%04X`. */
  otg_vendor_id: string;
  otg_product_id: string;
  otg_serial: string;
  cdrom_vendor: string;
  flash_vendor: string;
  mic_name: string;
  default_product_id: string;
  default_vendor_id: string;
  privacy_enable: boolean;
  privacy_restore: boolean;
  /** SPEC 3: `disabled` when virtual media is off, else its mode. */
  msd_type: string;
  enable_mic: boolean;
  // ours
  /** The device identity preset these fields match, or `custom`. */
  identity_preset: string;
  /** USB identity fields that take effect on this target; the others only on hardware. */
  usb_applies: UsbIdentityField[];
}

export type UsbIdentityField =
  'otg_manufacturer' | 'otg_product' | 'otg_vendor_id' | 'otg_product_id' | 'otg_serial';

/** SPEC 3: a serial of CAFEBABE matches any serial. */
export const USB_SERIAL_ANY = 'CAFEBABE';

/** `GET/POST /api/system/otg_functions` (GL §5.3). */
export interface OtgFunctions {
  enable_keyboard: boolean;
  enable_mouse: boolean;
  enable_mouse_alt: boolean;
  start_cdrom: boolean;
  start_flash: boolean;
  enable_mic: boolean;
}

/** One device identity preset (SPEC 3): USB identity plus the EDID preset shown with it. */
export interface DeviceIdentityPreset {
  key: string;
  label: string;
  otg_manufacturer: string;
  otg_product: string;
  otg_vendor_id: string;
  otg_product_id: string;
  /** Key of the EDID preset (`edid_list`) it sets, or null to leave the EDID alone. */
  edid: string | null;
}

/** One entry of `GET /api/upgrade/edid_list`: a bare JSON array, no envelope (GL 1.10). */
export interface EdidPreset {
  key: string;
  label: string;
  /** Hex, 256 bytes (base block + CTA extension). */
  content: string;
  audio: boolean;
  hz: number;
  is_default: boolean;
}

/** `GET /api/upgrade/get_edid`: GL's `edid` plus ours. */
export interface EdidState {
  /** What was submitted last (GL: saved before it is applied), or ''. */
  edid: string;
  /** The preset it equals, or null (custom or none). */
  preset: string | null;
  /** The preferred mode of the EDID in force, e.g. `{width: 1920, height: 1080, hz: 60}`. */
  preferred: { width: number; height: number; hz: number } | null;
  /**
   * When the remote computer sees a new EDID on this target: `now` (hot-plug), `power_cycle`
   * (QEMU: at the VM's next power-on or reset), `none` (no display here).
   */
  applies: 'now' | 'power_cycle' | 'none';
  /** True while a saved EDID waits for that moment. */
  pending: boolean;
  /**
   * Ours: where `edid` comes from. `device`: read back from the capture device (`video.type:
   * v4l2`), what the remote computer is offered now (the text as submitted when the bytes are
   * the submitted ones); `saved`: the saved text (no device to read back, or it did not answer).
   */
  source?: 'device' | 'saved';
}

/** SPEC 8 / GL: the one message for every malformed EDID. */
export const EDID_INVALID_MESSAGE = 'Invalid EDID format';

/**
 * Wi-Fi (GL `/api/repeater/*`, §5.8, 5.13). Status `state`: −1 initialising, 0 not used,
 * 1 connecting, 2 connected, 3 failed, 4 WAN available.
 */
export type WifiState = -1 | 0 | 1 | 2 | 3 | 4;

export interface WifiStatus {
  state: WifiState;
  ssid: string;
  bssid: string;
  channel: number;
  /** dBm. */
  signal: number;
  fail_type: 'not-found' | 'key' | null;
  ipv4: { ip: string; dns: string[]; gateway: string };
  // ours
  enabled: boolean;
  /** `nmcli` (a real radio), `test-radio` (simulated: says so), `none` (no Wi-Fi adapter). */
  adapter: 'nmcli' | 'test-radio' | 'none';
  /** Shown to the user: 'No Wi-Fi adapter', 'Test radio (simulated)', the interface name. */
  adapter_label: string;
  /**
   * The label as a code the console translates (issue 21 item 17): `test_radio`, `no_adapter`;
   * null when the label is a name (the interface) or a driver's own reason, shown as it is.
   */
  adapter_label_code?: WifiAdapterLabelCode | null;
}

export type WifiAdapterLabelCode = 'test_radio' | 'no_adapter';

/** The English labels that have a code (the drivers' texts), and their codes. */
export const WIFI_ADAPTER_LABELS: Readonly<Record<WifiAdapterLabelCode, string>> = {
  test_radio: 'Test radio (simulated)',
  no_adapter: 'No Wi-Fi adapter',
};

/** The code of a status's label, from the driver's kind and text. */
export function wifiAdapterLabelCode(
  status: Pick<WifiStatus, 'adapter' | 'adapter_label'>,
): WifiAdapterLabelCode | null {
  if (status.adapter === 'test-radio') return 'test_radio';
  if (status.adapter === 'none' && status.adapter_label === WIFI_ADAPTER_LABELS.no_adapter) {
    return 'no_adapter';
  }
  return null;
}

export interface WifiNetwork {
  ssid: string;
  bssid: string;
  channel: number;
  /** dBm. */
  signal: number;
  /** 0-100. */
  quality: number;
  /** Whether joining needs a key. */
  secure: boolean;
  /** `none`, `wpa2-psk`, `wpa3-sae`... */
  encryption: string;
  saved: boolean;
  connected: boolean;
}

/** `GET /api/repeater/scan` → `{ap_list: WifiNetwork[]}`. */
export interface WifiScanResult {
  ap_list: WifiNetwork[];
}

/** `GET /api/repeater/get_saved_ap_list` → `{ap_list: SavedWifiNetwork[]}`. */
export interface SavedWifiNetwork {
  ssid: string;
  encryption: string;
}

/** `POST /api/repeater/connect` (JSON body) → 200 either way. */
export interface WifiConnectResult {
  result: 'success' | 'failed';
  fail_type?: 'not-found' | 'key' | null;
  pending?: PendingNetworkChange | null;
}

/** SSID: 1 to 32 bytes (IEEE 802.11); WPA key: 8 to 63 characters (or 64 hex). */
export const WIFI_SSID_MAX_BYTES = 32;
export const WIFI_KEY_MIN = 8;
export const WIFI_KEY_MAX = 64;

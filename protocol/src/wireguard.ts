/**
 * The WireGuard app (issue 27, docs/apps.md "WireGuard"): a wg-quick configuration the admin
 * pastes, uploads or scans as a QR code brings the device into a WireGuard network. Parsing and
 * checking are here so the console says what is wrong before it sends, and the device checks
 * again (its answer is the one that counts).
 *
 * Secrets: `PrivateKey` and `PresharedKey` go from the browser to the device once and are never
 * sent back, logged or exported; what the device answers is `WgPublicConfig`.
 */
import type { AppState } from './apps';

/** The largest configuration accepted (bytes of UTF-8 text). */
export const WG_CONFIG_MAX_BYTES = 64 * 1024;
export const WG_PEERS_MAX = 64;
/** Addresses and allowed IPs, all peers together. */
export const WG_PREFIXES_MAX = 256;

export interface WgEndpoint {
  /** An IPv4 or IPv6 address, or a DNS name (resolved by the device when the tunnel starts). */
  host: string;
  port: number;
}

export interface WgInterface {
  /** Base64 of 32 bytes. */
  privateKey: string;
  /** The device's addresses in the tunnel, CIDR (`10.77.0.2/24`, `fd00::2/64`). */
  addresses: string[];
  listenPort: number | null;
  mtu: number | null;
  /** Kept and shown, never applied: the device's own DNS stays (docs/apps.md). */
  dns: string[];
}

export interface WgPeer {
  publicKey: string;
  presharedKey: string | null;
  /** CIDR, normalised (host bits cleared). */
  allowedIps: string[];
  endpoint: WgEndpoint | null;
  /** Seconds, 1 to 65535; null = off. */
  persistentKeepalive: number | null;
}

export interface WgConfig {
  interface: WgInterface;
  peers: WgPeer[];
}

/** What the device answers about its configuration: no secret in it. */
export interface WgPublicConfig {
  /** Derived by the device from the private key. */
  public_key: string;
  addresses: string[];
  listen_port: number | null;
  mtu: number | null;
  dns: string[];
  peers: {
    public_key: string;
    has_preshared_key: boolean;
    allowed_ips: string[];
    endpoint: string | null;
    persistent_keepalive: number | null;
  }[];
}

/** One peer as the running tunnel reports it (`wg show <if> dump`). */
export interface WgPeerStatus {
  public_key: string;
  endpoint: string | null;
  allowed_ips: string[];
  /** Unix seconds of the latest handshake; 0 = none yet. */
  latest_handshake: number;
  rx_bytes: number;
  tx_bytes: number;
  persistent_keepalive: number | null;
}

/** `GET /api/wireguard/status`. */
export interface WgStatus {
  installed: boolean;
  /** The tunnel is up. */
  running: boolean;
  state: AppState;
  detail: string | null;
  /** A configuration is saved (the app is bound). */
  configured: boolean;
  /** The tunnel's interface name on the device, when running. */
  interface: string | null;
  public_key: string | null;
  addresses: string[];
  listen_port: number | null;
  peers: WgPeerStatus[];
}

/** A configuration that cannot be used; `line` is 1-based, `field` as written in the file. Never carries a key. */
export class WgConfigError extends Error {
  readonly line: number | null;
  readonly field: string | null;
  constructor(message: string, line: number | null = null, field: string | null = null) {
    super(message);
    this.name = 'WgConfigError';
    this.line = line;
    this.field = field;
  }
}

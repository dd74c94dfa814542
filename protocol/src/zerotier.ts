/**
 * ZeroTier app (issue 27, docs/apps.md "ZeroTier"): GL 1.9's `/api/zerotier/*` answers and the
 * network id check. GL's shapes are kept field for field; what is ours is marked.
 */

/** A ZeroTier network id: exactly 16 hex digits (the controller's 10-digit address, then 6). */
export const ZEROTIER_NWID_RE = /^[0-9a-fA-F]{16}$/;

/** The network id in lower case, or null when it is not 16 hex digits. */
export function normalizeNwid(value: string): string | null {
  return ZEROTIER_NWID_RE.test(value) ? value.toLowerCase() : null;
}

/**
 * A moon's world id (`zerotier-cli orbit <world id> <seed>`): the 10-hex address of its first
 * root, or the 16-hex form `listmoons` prints; in lower case, or null.
 */
export function normalizeWorldId(value: string): string | null {
  return /^([0-9a-fA-F]{10}|[0-9a-fA-F]{16})$/.test(value) ? value.toLowerCase() : null;
}

/** A ZeroTier address (a moon's seed root): 10 hex digits, lower case, or null. */
export function normalizeZtAddress(value: string): string | null {
  return /^[0-9a-fA-F]{10}$/.test(value) ? value.toLowerCase() : null;
}

/** The controller's ZeroTier address: the network id's first 10 digits. */
export function controllerOf(nwid: string): string {
  return nwid.slice(0, 10);
}

/** Network statuses `zerotier-cli -j listnetworks` reports (ZeroTierOne's service JSON). */
export const ZEROTIER_NETWORK_STATUSES = [
  'REQUESTING_CONFIGURATION',
  'OK',
  'ACCESS_DENIED',
  'NOT_FOUND',
  'PORT_ERROR',
  'CLIENT_TOO_OLD',
  'AUTHENTICATION_REQUIRED',
] as const;

/** One joined network, as the app shows it (ours). */
export interface ZerotierNetwork {
  nwid: string;
  name: string;
  status: string;
  /** Its interface on the device (`zt...`). */
  dev: string;
  /** Assigned addresses with prefix (`10.147.17.5/24`), as ZeroTier prints them. */
  ips: string[];
  allow_managed: boolean;
  allow_global: boolean;
  /** Route all traffic through the network (an exit node on the network's side). */
  allow_default: boolean;
  allow_dns: boolean;
}

/** `GET /api/zerotier/status` (GL's fields, the first network's details when there is one; then ours). */
export interface ZerotierStatus {
  enabled: boolean;
  process_running: boolean;
  nwid?: string;
  name?: string;
  status?: string;
  dev?: string;
  ips?: string[];
  // ours
  installed: boolean;
  version: string | null;
  state: string;
  detail: string | null;
  online: boolean;
  /** This device's ZeroTier address (10 hex digits): what the controller authorises. */
  address: string;
  networks: ZerotierNetwork[];
}

/** `POST /api/zerotier/start` and `/stop` (GL). */
export interface ZerotierRunAnswer {
  success: boolean;
  output: string;
  process_running: boolean;
}

/** `POST /api/zerotier/set_token` (GL: the "token" is the network id to join). */
export interface ZerotierJoinAnswer {
  success: boolean;
  message: string;
  join_output: string;
  attempts: number;
}

/** The per-network settings `POST /api/zerotier/set` changes (ours; `zerotier-cli set`). */
export const ZEROTIER_SETTINGS = [
  'allowManaged',
  'allowGlobal',
  'allowDefault',
  'allowDNS',
] as const;
export type ZerotierSetting = (typeof ZEROTIER_SETTINGS)[number];

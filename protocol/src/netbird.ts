/**
 * NetBird app (issue 27, docs/apps.md "NetBird"): GL 1.9's `/api/netbird/*` answers and the
 * checks of what a user gives (setup key, management URL). GL's shapes are kept field for field;
 * what is ours is marked.
 */

/** NetBird's setup keys are UUIDs (36 characters); anything of letters, digits and `-` up to this is taken. */
export const NETBIRD_SETUP_KEY_MIN = 8;
export const NETBIRD_SETUP_KEY_MAX = 128;
export const NETBIRD_URL_MAX = 256;
/** The management server when none is set (NetBird's cloud). */
export const NETBIRD_DEFAULT_MANAGEMENT_URL = 'https://api.netbird.io:443';

const SETUP_KEY_RE = /^[0-9A-Za-z][0-9A-Za-z-]*$/;

/** Why a setup key is refused, or null. Letters, digits and `-` (GL's rule), not starting with `-`, bounded. */
export function netbirdSetupKeyProblem(key: string): string | null {
  if (key.length < NETBIRD_SETUP_KEY_MIN || key.length > NETBIRD_SETUP_KEY_MAX) {
    return `must be ${NETBIRD_SETUP_KEY_MIN} to ${NETBIRD_SETUP_KEY_MAX} characters`;
  }
  if (!SETUP_KEY_RE.test(key)) return 'may hold only letters, digits and hyphens';
  return null;
}

/**
 * Why a management URL is refused, or null. Empty is NetBird's own server (GL). Otherwise an
 * `https://` URL with a host, at most NETBIRD_URL_MAX characters, without user or password,
 * query or fragment. Unlike GL, a private or loopback address is allowed: a self-hosted
 * management server on the LAN is the case it exists for.
 */
export function netbirdManagementUrlProblem(url: string): string | null {
  if (url === '') return null;
  if (url.length > NETBIRD_URL_MAX) return `must be at most ${NETBIRD_URL_MAX} characters`;
  if (!url.startsWith('https://'))
    return 'must start with https:// (or be empty for NetBird’s own server)';
  // eslint-disable-next-line no-control-regex
  if (/[\s\u0000-\u001f\u007f]/.test(url)) return 'must not hold spaces or control characters';
  if (url.includes('?') || url.includes('#')) return 'must not hold a query or fragment';
  const [, authority = '', path = ''] = /^https:\/\/([^/]*)(.*)$/.exec(url) ?? [];
  if (authority.includes('@')) return 'must not hold a user name or password';
  const host =
    /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)(?::(\d{1,5}))?$/.exec(
      authority,
    );
  if (!host) return 'has no valid host';
  if (host[2] !== undefined && (Number(host[2]) < 1 || Number(host[2]) > 65535)) {
    return 'has a port out of range';
  }
  if (!/^(\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*)?$/.test(path)) return 'has an invalid path';
  return null;
}

/** What the app keeps (`<data>/apps/netbird/app.json`); `GET /api/netbird/config` shows it. */
export interface NetbirdConfig {
  /** GL: the app is on (its daemon runs, and comes back after a restart). */
  enable: boolean;
  /** GL: the self-hosted management server; empty for NetBird's own. */
  management_url: string;
  /** Ours: `netbird up --disable-dns` (GL always passes it): NetBird does not touch the device's DNS. */
  disable_dns: boolean;
  /** Ours: take the routes and exit nodes the network offers (`--disable-client-routes` when false). */
  accept_routes: boolean;
}

export const NETBIRD_DEFAULT_CONFIG: NetbirdConfig = {
  enable: false,
  management_url: '',
  disable_dns: true,
  accept_routes: true,
};

/** `POST /api/netbird/start` and `/stop` (GL). */
export interface NetbirdRunAnswer {
  success: boolean;
  err_msg: string;
  running: boolean;
}

/** `POST /api/netbird/login` (GL): `login_url` is the SSO page to open when no setup key was given. */
export interface NetbirdLoginAnswer {
  success: boolean;
  err_msg: string;
  login_url: string;
  login_type: 'setup_key' | 'oauth' | '';
}

/** `GET /api/netbird/get_info` (GL's five fields, then ours). */
export interface NetbirdInfo {
  running: boolean;
  /** NetBird's address with its prefix, as `netbird status` prints it (`100.92.1.7/16`); empty when none. */
  netbird_ip: string;
  /** The management server is connected. */
  connected: boolean;
  success: boolean;
  err_msg: string;
  // ours
  installed: boolean;
  version: string | null;
  /** The apps center's state (protocol/src/apps.ts). */
  state: string;
  detail: string | null;
  /** The SSO page of a login that waits for the user; empty when none. */
  login_url: string;
  fqdn: string;
  management_url: string;
  peers_total: number;
  peers_connected: number;
}

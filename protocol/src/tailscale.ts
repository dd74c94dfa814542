/**
 * Tailscale (issue 27, docs/apps.md "Tailscale", docs/api.md "Tailscale"): GL's `/api/tailscale/*`
 * answers, our `up` (bind) in the same pattern, and the checks of what a user gives (auth key,
 * control server, exit node, advertised routes), shared by the server and the console.
 */

/** `tailscale status --json`'s BackendState (ipn.State in tailscale/tailscale). */
export const TAILSCALE_BACKEND_STATES = [
  'NoState',
  'NeedsLogin',
  'NeedsMachineAuth',
  'Stopped',
  'Starting',
  'Running',
] as const;
export type TailscaleBackendState = (typeof TAILSCALE_BACKEND_STATES)[number];

/** Tailscale's own control server (the default when no `login_server` is given). */
export const TAILSCALE_DEFAULT_CONTROL_URL = 'https://controlplane.tailscale.com';

/** `GET /api/tailscale/status` (GL). */
export interface TailscaleRunningAnswer {
  running: boolean;
}

/** `POST /api/tailscale/start|stop` (GL). */
export interface TailscaleStartStopAnswer {
  success: boolean;
  output: string;
  running: boolean;
}

/** `GET /api/tailscale/login_url` (GL): `url` may be "" when none came within 10 s. */
export interface TailscaleLoginUrlAnswer {
  url: string;
  state: string;
}

/** `GET /api/tailscale/login_status` (GL). */
export interface TailscaleLoginStatusAnswer {
  status: string;
  login_name?: string;
  ipv4?: string;
  ipv6?: string;
}

/** `POST /api/tailscale/logout` (GL). */
export interface TailscaleLogoutAnswer {
  success: boolean;
  output: string;
  status: string;
}

/** What the app keeps (`<data>/apps/tailscale/app.json`) and `GET /api/tailscale/config` shows. */
export interface TailscaleConfig {
  /** The daemon runs (GL's `enable`), kept across restarts. */
  enable: boolean;
  /** This device offers itself as an exit node (GL's `exit_node`: `--advertise-exit-node`). */
  exit_node: boolean;
  /** The exit node this device uses (`--exit-node`: an IP or a node name); "" for none. Ours. */
  use_exit_node: string;
  /** Subnet routes this device advertises (`--advertise-routes`), canonical CIDRs. */
  advertise_routes: string[];
  accept_routes: boolean;
  accept_dns: boolean;
  /** A custom control server (headscale); "" for Tailscale's own. Ours. */
  login_server: string;
}

export const TAILSCALE_DEFAULT_CONFIG: TailscaleConfig = {
  enable: false,
  exit_node: false,
  use_exit_node: '',
  advertise_routes: [],
  accept_routes: false,
  accept_dns: true,
  login_server: '',
};

/** `GET /api/tailscale/config`. */
export interface TailscaleConfigAnswer {
  success: true;
  config: TailscaleConfig;
}

/** `POST /api/tailscale/config` (GL): `applied_settings` names what this call changed. */
export type TailscaleSetConfigAnswer =
  | {
      success: true;
      output: string;
      status: string;
      applied_settings: Partial<Omit<TailscaleConfig, 'advertise_routes'>> & {
        advertise_routes: string | null;
      };
    }
  | { success: false; error: string };

/** `POST /api/tailscale/up` (ours): the bind, with an auth key or by the login URL. */
export interface TailscaleUpAnswer {
  success: boolean;
  output: string;
  status: string;
  /** The login URL to open when no auth key was given ("" when bound or none came in time). */
  url: string;
}

/** The options `POST /api/tailscale/config` and `up` may change (checked; only the ones given). */
export type TailscaleOptionsChange = Partial<
  Pick<
    TailscaleConfig,
    'exit_node' | 'use_exit_node' | 'advertise_routes' | 'accept_routes' | 'accept_dns'
  >
> & {
  /** GL's `advertise_routes=auto`: the device's own LAN (eth0's subnet). */
  advertise_routes_auto?: boolean;
};

export const TAILSCALE_AUTH_KEY_MAX = 200;
export const TAILSCALE_LOGIN_SERVER_MAX = 256;
export const TAILSCALE_ROUTES_MAX = 16;
export const TAILSCALE_EXIT_NODE_MAX = 253;

type Check<T> = { ok: true; value: T } | { ok: false; error: string };

/**
 * An auth key: Tailscale's are `tskey-<kind>-<id>-<secret>` (`tskey-auth-k…CNTRL-…`); a custom
 * control server has its own (headscale's pre-auth keys are hex or `hskey-auth-…`), so with one
 * any token of letters, digits, `-` and `_` is taken. Never echoed in an error.
 */
export function checkTailscaleAuthKey(key: string, customServer: boolean): Check<string> {
  if (key.length === 0) return { ok: false, error: 'is empty' };
  if (key.length > TAILSCALE_AUTH_KEY_MAX) {
    return { ok: false, error: `is longer than ${TAILSCALE_AUTH_KEY_MAX} characters` };
  }
  if (!/^[A-Za-z0-9_][A-Za-z0-9_-]*$/.test(key)) {
    return {
      ok: false,
      error:
        'may hold only letters, digits, - and _, not starting with - (no spaces or control characters)',
    };
  }
  if (!customServer && !/^tskey-[a-z]+-[A-Za-z0-9_-]{8,}$/.test(key)) {
    return { ok: false, error: 'is not a Tailscale auth key (tskey-auth-…)' };
  }
  if (key.length < 8) return { ok: false, error: 'is too short' };
  return { ok: true, value: key };
}

function isLoopbackOrPrivateHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h === '::1' || h.startsWith('fd') || h.startsWith('fc')) return true;
  const m = /^(\d{1,3})\.(\d{1,3})\.\d{1,3}\.\d{1,3}$/.exec(h);
  if (!m) return false;
  const [a, b] = [Number(m[1]), Number(m[2])];
  return a === 10 || a === 127 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168);
}

/**
 * A custom control server (headscale): an `https://` URL; `http://` only to a loopback or private
 * address (a headscale on the LAN without TLS); no credentials, query or fragment in it; at most
 * TAILSCALE_LOGIN_SERVER_MAX characters. "" is Tailscale's own server. The value is normalised
 * (no trailing `/`).
 */
export function checkTailscaleLoginServer(text: string): Check<string> {
  const v = text.trim();
  if (v === '') return { ok: true, value: '' };
  if (v.length > TAILSCALE_LOGIN_SERVER_MAX) {
    return { ok: false, error: `is longer than ${TAILSCALE_LOGIN_SERVER_MAX} characters` };
  }
  // eslint-disable-next-line no-control-regex
  if (/[\s\u0000-\u001f\u007f]/.test(v)) {
    return { ok: false, error: 'must not contain spaces or control characters' };
  }
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([^?#]*)(.*)$/.exec(v);
  if (!m) return { ok: false, error: 'is not a URL (https://headscale.example.com)' };
  const [, schemeRaw = '', authority = '', path = '', rest = ''] = m;
  const scheme = schemeRaw.toLowerCase();
  if (authority.includes('@')) {
    return { ok: false, error: 'must not contain a user name or password' };
  }
  if (rest !== '') return { ok: false, error: 'must not contain a query or fragment' };
  const hp = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(authority);
  if (!hp || (hp[2] !== undefined && (Number(hp[2]) < 1 || Number(hp[2]) > 65535))) {
    return { ok: false, error: 'is not a URL (https://headscale.example.com)' };
  }
  const hostname = (hp[1] ?? '').toLowerCase();
  if (scheme === 'http') {
    if (!isLoopbackOrPrivateHost(hostname)) {
      return {
        ok: false,
        error: 'must use https:// (http:// only to a loopback or private address)',
      };
    }
  } else if (scheme !== 'https') {
    return { ok: false, error: 'must be an https:// URL' };
  }
  const port = hp[2] !== undefined ? `:${hp[2]}` : '';
  return { ok: true, value: `${scheme}://${hostname}${port}${path}`.replace(/\/+$/, '') };
}

/** An exit node to use: an IPv4/IPv6 address or a node name (DNS label characters); "" for none. */
export function checkTailscaleExitNode(text: string): Check<string> {
  const v = text.trim();
  if (v === '') return { ok: true, value: '' };
  if (v.length > TAILSCALE_EXIT_NODE_MAX) {
    return { ok: false, error: `is longer than ${TAILSCALE_EXIT_NODE_MAX} characters` };
  }
  if (/^[0-9a-fA-F:.]+$/.test(v) && (parseIpv4Text(v) !== null || isIpv6Text(v))) {
    return { ok: true, value: v };
  }
  if (/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}))*\.?$/.test(v)) {
    return { ok: true, value: v };
  }
  return { ok: false, error: 'is not an IP address or a node name' };
}

function parseIpv4Text(text: string): number[] | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  const out: number[] = [];
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p) || Number(p) > 255 || (p.length > 1 && p.startsWith('0'))) return null;
    out.push(Number(p));
  }
  return out;
}

function isIpv6Text(text: string): boolean {
  if (!/^[0-9a-fA-F:]+$/.test(text) || !text.includes(':')) return false;
  const halves = text.split('::');
  if (halves.length > 2) return false;
  const groups = halves.flatMap((h) => (h === '' ? [] : h.split(':')));
  if (groups.some((g) => !/^[0-9a-fA-F]{1,4}$/.test(g))) return false;
  return halves.length === 2 ? groups.length < 8 : groups.length === 8;
}

/** Expands an IPv6 address to 8 numbers, or null. */
function ipv6Groups(text: string): number[] | null {
  if (!isIpv6Text(text)) return null;
  const [head, tail] = text.split('::') as [string, string | undefined];
  const h = head === '' ? [] : head.split(':');
  const t = tail === undefined || tail === '' ? [] : tail.split(':');
  const fill = tail === undefined ? [] : new Array<string>(8 - h.length - t.length).fill('0');
  return [...h, ...fill, ...t].map((g) => Number.parseInt(g, 16));
}

/** One route: a CIDR whose host bits are zero (Tailscale refuses others); the default routes are refused. */
function checkRoute(cidr: string): Check<string> {
  const m = /^([^/]+)\/(\d{1,3})$/.exec(cidr);
  if (!m) return { ok: false, error: `'${cidr.slice(0, 50)}' is not a CIDR (192.168.8.0/24)` };
  const [addr, bitsText] = [m[1] as string, m[2] as string];
  const bits = Number(bitsText);
  const v4 = parseIpv4Text(addr);
  const v6 = v4 ? null : ipv6Groups(addr);
  if (!v4 && !v6)
    return { ok: false, error: `'${cidr.slice(0, 50)}' is not a CIDR (192.168.8.0/24)` };
  const width = v4 ? 32 : 128;
  if (bits > width) return { ok: false, error: `'${cidr}' has a prefix longer than ${width}` };
  if (bits === 0) {
    return {
      ok: false,
      error: `'${cidr}' is a default route: offer this device as an exit node (exit_node=true) instead`,
    };
  }
  const words = v4 ?? (v6 as number[]);
  const wordBits = v4 ? 8 : 16;
  for (let i = 0; i < words.length; i++) {
    const keep = Math.max(0, Math.min(wordBits, bits - i * wordBits));
    const mask = keep === wordBits ? 0 : (1 << (wordBits - keep)) - 1;
    if (((words[i] as number) & mask) !== 0) {
      return { ok: false, error: `'${cidr}' has host bits set (use the network address)` };
    }
  }
  return { ok: true, value: cidr.toLowerCase() };
}

/**
 * Advertised routes: comma-separated CIDRs (GL's form), each with zero host bits, no default
 * route, at most TAILSCALE_ROUTES_MAX, duplicates dropped; "" is none.
 */
export function checkTailscaleRoutes(text: string): Check<string[]> {
  const items = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (items.length > TAILSCALE_ROUTES_MAX) {
    return { ok: false, error: `lists more than ${TAILSCALE_ROUTES_MAX} routes` };
  }
  const out: string[] = [];
  for (const item of items) {
    const r = checkRoute(item);
    if (!r.ok) return r;
    if (!out.includes(r.value)) out.push(r.value);
  }
  return { ok: true, value: out };
}

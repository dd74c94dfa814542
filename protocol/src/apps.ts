/**
 * The apps center (issue 27, SPEC 2 "apps center", SPEC 4 "Private-network service"): the
 * private-network apps a device can run, each bringing the device into a private network so its
 * console is reachable from outside the LAN. What every app reports is here; each app's own calls
 * follow GL's `/api/tailscale/*` pattern (docs/api.md "Apps") and their shapes are in
 * `tailscale.ts`, `netbird.ts`, `zerotier.ts` and `wireguard.ts`.
 *
 * The rule every app keeps (docs/apps.md): it never cuts off the only way in. The device's local
 * network and its console stay reachable whatever the app does; the app's client is never
 * updated by itself; its memory is capped; an unreachable control server is a state of its own.
 */

export const APP_IDS = ['tailscale', 'netbird', 'zerotier', 'wireguard'] as const;
export type AppId = (typeof APP_IDS)[number];

export function isAppId(value: unknown): value is AppId {
  return typeof value === 'string' && (APP_IDS as readonly string[]).includes(value);
}

/** The product names, as the tools' makers write them. */
export const APP_NAMES: Readonly<Record<AppId, string>> = {
  tailscale: 'Tailscale',
  netbird: 'NetBird',
  zerotier: 'ZeroTier',
  wireguard: 'WireGuard',
};

/**
 * Where an app stands, most specific first:
 * - `not_installed`: its tool is not on this device (`detail` names what is missing);
 * - `stopped`: installed, its daemon not running (the app is off);
 * - `starting`: its daemon was started and does not answer yet;
 * - `needs_login`: running but not bound: a login URL, an auth/setup key or a configuration is needed;
 * - `connecting`: bound, reaching its control server or peers;
 * - `connected`: in the private network (`addresses` are the device's there);
 * - `unreachable`: bound, but the control server (or every peer) cannot be reached;
 * - `error`: the tool failed, hung or printed something unreadable (`detail` says which).
 */
export const APP_STATES = [
  'not_installed',
  'stopped',
  'starting',
  'needs_login',
  'connecting',
  'connected',
  'unreachable',
  'error',
] as const;
export type AppState = (typeof APP_STATES)[number];

/** One app as the apps center lists it (`GET /api/apps`). */
export interface AppSummary {
  id: AppId;
  /** APP_NAMES[id]. */
  name: string;
  installed: boolean;
  /** The tool's version as it reports it; null when not installed or not known. */
  version: string | null;
  /** Its daemon (or tunnel) is up. */
  running: boolean;
  state: AppState;
  /** Why, in words a user can act on (the missing tool, the error, the unreachable server); null when nothing to say. */
  detail: string | null;
  /** The device's addresses in the private network (empty when it has none). */
  addresses: string[];
  /** The control server in use: a custom one, or the tool's default; null when the app has none (WireGuard). */
  control_url: string | null;
  /** What the app's processes hold now (resident bytes); null when not running. */
  rss_bytes: number | null;
  /** The cap on that memory (docs/apps.md "Memory cap"); null when there is none. */
  memory_limit_bytes: number | null;
}

export interface AppsList {
  apps: AppSummary[];
}

/** How often the console polls an open app's status (SPEC 3 `tailscale_bind_status_polling`). */
export const APP_STATUS_POLL_MS = 3000;

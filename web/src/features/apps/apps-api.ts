/**
 * The apps center's calls (issue 27, docs/api.md "Apps"): the list (`GET /api/apps`) and each
 * app's own routes in GL's `/api/tailscale/*` pattern. Every shape the console reads is here, so
 * the panels stay thin.
 */
import type { AppId, AppsList, AppSummary } from '@kvm/protocol/apps';
import type { WgPublicConfig, WgStatus } from '@kvm/protocol/wireguard';
import { api } from '../../lib/api';

/** Calls that start a tool may take the device's command timeout and more. */
const APP_CALL_MS = 30_000;
const call = { timeoutMs: APP_CALL_MS } as const;

export async function listApps(): Promise<AppSummary[]> {
  return (await api.get<AppsList>('/apps')).apps;
}

/** Runs or stops an app's daemon (or tunnel). */
export async function setAppRunning(id: AppId, run: boolean): Promise<void> {
  await api.post(`/${id}/${run ? 'start' : 'stop'}`, call);
}

// ---- Tailscale (GL /api/tailscale/*) ----------------------------------------------------------

/** tailscale's BackendState. */
export type TailscaleBackendState =
  'NoState' | 'NeedsLogin' | 'NeedsMachineAuth' | 'Stopped' | 'Starting' | 'Running' | string;

export interface TailscaleLoginStatus {
  status: TailscaleBackendState;
  login_name?: string;
  ipv4?: string;
  ipv6?: string;
}

export interface TailscaleLoginUrl {
  url: string;
  state?: string;
}

export interface TailscaleConfig {
  exit_node: string;
  advertise_routes: string;
  accept_routes: boolean;
  accept_dns: boolean;
  /** A custom control server (headscale); '' for Tailscale's own. */
  login_server: string;
}

export async function tailscaleLoginUrl(): Promise<TailscaleLoginUrl> {
  return api.get<TailscaleLoginUrl>('/tailscale/login_url', call);
}

export async function tailscaleLoginStatus(): Promise<TailscaleLoginStatus> {
  return api.get<TailscaleLoginStatus>('/tailscale/login_status');
}

/** Binds with an auth key (and the control server when a custom one is set). */
export async function tailscaleUp(authKey: string, loginServer: string): Promise<void> {
  const json: Record<string, string> = { auth_key: authKey.trim() };
  if (loginServer.trim()) json['login_server'] = loginServer.trim();
  await api.post('/tailscale/up', { json, ...call });
}

export async function tailscaleLogout(): Promise<void> {
  await api.post('/tailscale/logout', call);
}

export async function tailscaleConfig(): Promise<Partial<TailscaleConfig>> {
  const answer = await api.get<{ config?: Partial<TailscaleConfig> } & Partial<TailscaleConfig>>(
    '/tailscale/config',
  );
  return answer.config ?? answer;
}

export async function setTailscaleConfig(config: Partial<TailscaleConfig>): Promise<void> {
  await api.post('/tailscale/config', { json: config, ...call });
}

/** Done waiting: the device is in the tailnet. */
export function tailscaleBound(status: TailscaleLoginStatus | null): boolean {
  return status?.status === 'Running';
}

// ---- NetBird (/api/netbird/*) -----------------------------------------------------------------

export async function netbirdUp(setupKey: string, managementUrl: string): Promise<void> {
  const json: Record<string, string> = {};
  if (setupKey.trim()) json['setup_key'] = setupKey.trim();
  if (managementUrl.trim()) json['management_url'] = managementUrl.trim();
  await api.post('/netbird/up', { json, ...call });
}

export async function netbirdLoginUrl(managementUrl: string): Promise<{ url: string }> {
  const query = managementUrl.trim() ? { management_url: managementUrl.trim() } : undefined;
  return api.get<{ url: string }>('/netbird/login_url', { query, ...call });
}

export async function netbirdDown(): Promise<void> {
  await api.post('/netbird/down', call);
}

export async function netbirdLogout(): Promise<void> {
  await api.post('/netbird/logout', call);
}

// ---- ZeroTier (/api/zerotier/*) ---------------------------------------------------------------

export interface ZerotierNetwork {
  id: string;
  name: string;
  /** zerotier-cli's status: OK, REQUESTING_CONFIGURATION, ACCESS_DENIED, NOT_FOUND, PORT_ERROR… */
  status: string;
  addresses: string[];
  allow_default: boolean;
  allow_global: boolean;
}

export const ZT_NETWORK_ID = /^[0-9a-f]{16}$/;

export async function zerotierNetworks(): Promise<ZerotierNetwork[]> {
  const answer = await api.get<{ networks?: ZerotierNetwork[] }>('/zerotier/networks');
  return answer.networks ?? [];
}

export async function zerotierJoin(
  networkId: string,
  allowDefault: boolean,
  allowGlobal: boolean,
): Promise<void> {
  await api.post('/zerotier/join', {
    json: { network_id: networkId, allow_default: allowDefault, allow_global: allowGlobal },
    ...call,
  });
}

export async function zerotierLeave(networkId: string): Promise<void> {
  await api.post('/zerotier/leave', { json: { network_id: networkId }, ...call });
}

// ---- WireGuard (/api/wireguard/*) -------------------------------------------------------------

export async function wireguardStatus(): Promise<WgStatus> {
  return api.get<WgStatus>('/wireguard/status');
}

/** Sends the configuration once; the device answers it without any secret. */
export async function wireguardSetConfig(config: string): Promise<WgPublicConfig> {
  return api.post<WgPublicConfig>('/wireguard/config', { json: { config }, ...call });
}

export async function wireguardRemove(): Promise<void> {
  await api.post('/wireguard/remove', call);
}

/**
 * The apps center's calls (issue 27, docs/api.md "Apps"): the list (`GET /api/apps`) and each
 * app's own routes in GL's `/api/tailscale/*` pattern. Every shape the console reads is here, so
 * the panels stay thin.
 */
import type { AppId, AppsList, AppSummary } from '@kvm/protocol/apps';
import type { NetbirdConfig, NetbirdLoginAnswer } from '@kvm/protocol/netbird';
import {
  TAILSCALE_DEFAULT_CONFIG,
  type TailscaleConfig,
  type TailscaleConfigAnswer,
  type TailscaleLoginStatusAnswer,
  type TailscaleLoginUrlAnswer,
  type TailscaleLogoutAnswer,
  type TailscaleSetConfigAnswer,
  type TailscaleUpAnswer,
} from '@kvm/protocol/tailscale';
import type { WgPublicConfig, WgStatus } from '@kvm/protocol/wireguard';
import type { ZerotierJoinAnswer, ZerotierNetwork, ZerotierStatus } from '@kvm/protocol/zerotier';
import { api } from '../../lib/api';

/** Calls that start a tool may take the device's command timeout and more. */
const APP_CALL_MS = 30_000;
const call = { timeoutMs: APP_CALL_MS } as const;

export async function listApps(): Promise<AppSummary[]> {
  return (await api.get<AppsList>('/apps')).apps;
}

/**
 * GL answers some failures 200 with `success: false` and a message (`err_msg`, `error`,
 * `message` or `output`); such an answer fails here like an error envelope.
 */
export class AppAnswerError extends Error {
  override readonly name = 'AppAnswerError';
  constructor(readonly error_msg: string) {
    super(error_msg);
  }
}

interface MaybeFailed {
  success?: boolean;
  err_msg?: string;
  error?: string;
  message?: string;
  output?: string;
}

function succeeded<T>(answer: T): T {
  const a = answer as MaybeFailed | null;
  if (a && typeof a === 'object' && a.success === false) {
    throw new AppAnswerError(a.err_msg || a.error || a.message || a.output || '');
  }
  return answer;
}

/** Runs or stops an app's daemon (or tunnel). */
export async function setAppRunning(id: AppId, run: boolean): Promise<void> {
  succeeded(await api.post<MaybeFailed>(`/${id}/${run ? 'start' : 'stop'}`, call));
}

// ---- Tailscale (GL /api/tailscale/*, protocol/src/tailscale.ts) -------------------------------

export async function tailscaleLoginUrl(): Promise<TailscaleLoginUrlAnswer> {
  return api.get<TailscaleLoginUrlAnswer>('/tailscale/login_url', call);
}

export async function tailscaleLoginStatus(): Promise<TailscaleLoginStatusAnswer> {
  return api.get<TailscaleLoginStatusAnswer>('/tailscale/login_status');
}

/**
 * The bind (`up`): with an auth key, or without one for a login URL (the answer's `url`); a
 * custom control server (headscale) when given.
 */
export async function tailscaleUp(
  authKey: string,
  loginServer: string,
): Promise<TailscaleUpAnswer> {
  const json: Record<string, string> = { login_server: loginServer.trim() };
  if (authKey.trim()) json['auth_key'] = authKey.trim();
  return succeeded(await api.post<TailscaleUpAnswer>('/tailscale/up', { json, ...call }));
}

export async function tailscaleLogout(): Promise<void> {
  succeeded(await api.post<TailscaleLogoutAnswer>('/tailscale/logout', call));
}

export async function tailscaleConfig(): Promise<TailscaleConfig> {
  const answer = await api.get<Partial<TailscaleConfigAnswer>>('/tailscale/config');
  return { ...TAILSCALE_DEFAULT_CONFIG, ...answer.config };
}

/** The options GL's `config` takes (advertise_routes comma-separated). */
export interface TailscaleOptions {
  exit_node: boolean;
  use_exit_node: string;
  advertise_routes: string;
  accept_routes: boolean;
  accept_dns: boolean;
}

export async function setTailscaleConfig(options: TailscaleOptions): Promise<void> {
  succeeded(
    await api.post<TailscaleSetConfigAnswer>('/tailscale/config', { json: options, ...call }),
  );
}

/** Done waiting: the device is in the tailnet. */
export function tailscaleBound(status: TailscaleLoginStatusAnswer | null): boolean {
  return status?.status === 'Running';
}

// ---- NetBird (/api/netbird/*, protocol/src/netbird.ts) ----------------------------------------

export async function netbirdConfig(): Promise<NetbirdConfig> {
  return api.get<NetbirdConfig>('/netbird/config');
}

/** Sets the management server ('' = NetBird's own). */
export async function setNetbirdManagementUrl(url: string): Promise<void> {
  succeeded(
    await api.post<MaybeFailed>('/netbird/config', {
      query: { management_url: url.trim() },
      ...call,
    }),
  );
}

/** With a setup key, or without one for the SSO login URL (the answer's `login_url`). */
export async function netbirdLogin(setupKey: string | null): Promise<NetbirdLoginAnswer> {
  const options = setupKey ? { json: { setup_key: setupKey.trim() } } : {};
  return succeeded(await api.post<NetbirdLoginAnswer>('/netbird/login', { ...options, ...call }));
}

export async function netbirdLogout(): Promise<void> {
  succeeded(await api.post<MaybeFailed>('/netbird/logout', call));
}

// ---- ZeroTier (/api/zerotier/*, protocol/src/zerotier.ts) -------------------------------------

export async function zerotierNetworks(): Promise<ZerotierNetwork[]> {
  const answer = await api.get<Partial<ZerotierStatus>>('/zerotier/status');
  return answer.networks ?? [];
}

export async function zerotierJoin(
  nwid: string,
  allowDefault: boolean,
  allowGlobal: boolean,
): Promise<void> {
  succeeded(await api.post<ZerotierJoinAnswer>('/zerotier/join', { query: { nwid }, ...call }));
  if (allowDefault || allowGlobal) {
    await api.post('/zerotier/set', {
      query: { nwid, allow_default: allowDefault, allow_global: allowGlobal },
      ...call,
    });
  }
}

export async function zerotierSet(
  nwid: string,
  settings: { allow_default?: boolean; allow_global?: boolean },
): Promise<void> {
  await api.post('/zerotier/set', { query: { nwid, ...settings }, ...call });
}

export async function zerotierLeave(nwid: string): Promise<void> {
  succeeded(await api.post<MaybeFailed>('/zerotier/leave', { query: { nwid }, ...call }));
}

// ---- WireGuard (/api/wireguard/*) -------------------------------------------------------------

export async function wireguardStatus(): Promise<WgStatus> {
  return api.get<WgStatus>('/wireguard/status');
}

/** Sends the configuration once; the device answers it without any secret. */
export async function wireguardSetConfig(config: string): Promise<WgPublicConfig> {
  const answer = await api.post<{ config: WgPublicConfig }>('/wireguard/config', {
    json: { config },
    ...call,
  });
  return answer.config;
}

/** Unbind: the tunnel stops and the configuration is forgotten. */
export async function wireguardRemove(): Promise<void> {
  succeeded(await api.post<MaybeFailed>('/wireguard/logout', call));
}

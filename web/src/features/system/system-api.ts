/**
 * Clients of the device-administration routes (issue 11; wire types in protocol/src/system.ts,
 * routes in docs/api.md). Thin: one function per route, typed answers, no state.
 */
import {
  type DeviceIdentityPreset,
  type EdidPreset,
  type EdidState,
  type HostnameResult,
  type NetworkConfigWire,
  type NetworkMode,
  type SavedWifiNetwork,
  type SetNetworkConfigResult,
  type SystemParams,
  type SystemTimeResult,
  type TimezoneListResult,
  type UsbIdentityField,
  type WifiConnectResult,
  type WifiNetwork,
  type WifiStatus,
} from '@kvm/protocol/system';
import { api } from '../../lib/api';

/** SPEC 9: a Wi-Fi scan may take up to 30 s. */
export const WIFI_SCAN_TIMEOUT_MS = 30_000;

// ---- Network (GL §5.4, 5.13) ----

export async function getNetworkConfig(signal?: AbortSignal): Promise<NetworkConfigWire> {
  const result = await api.get<{ config: NetworkConfigWire }>('/system/get_network_config', {
    signal,
  });
  return result.config;
}

export interface NetworkSettings {
  mode: NetworkMode;
  ip_address?: string;
  netmask?: string;
  gateway?: string;
  /** Sent as GL's comma list; an empty list means "the DHCP server's DNS". */
  dns_servers?: readonly string[];
}

export function setNetworkConfig(settings: NetworkSettings): Promise<SetNetworkConfigResult> {
  const query: Record<string, string> = { mode: settings.mode };
  if (settings.mode === 'static') {
    query.ip_address = settings.ip_address ?? '';
    query.netmask = settings.netmask ?? '';
    query.gateway = settings.gateway ?? '';
  }
  if (settings.dns_servers) query.dns_servers = settings.dns_servers.join(',');
  return api.post<SetNetworkConfigResult>('/system/set_network_config', { query });
}

export function confirmNetworkConfig(id: string): Promise<unknown> {
  return api.post('/system/confirm_network_config', { query: { id } });
}

export function revertNetworkConfig(id: string): Promise<unknown> {
  return api.post('/system/revert_network_config', { query: { id } });
}

export async function setHostname(hostname: string): Promise<string> {
  const result = await api.post<HostnameResult>('/system/set_hostname', { query: { hostname } });
  return result.hostname;
}

// ---- Wi-Fi (GL §5.8, 5.13) ----

export function getWifiStatus(signal?: AbortSignal): Promise<WifiStatus> {
  return api.get<WifiStatus>('/repeater/get_status', { signal });
}

export async function scanWifi(signal?: AbortSignal): Promise<WifiNetwork[]> {
  const result = await api.get<{ ap_list?: WifiNetwork[] }>('/repeater/scan', {
    signal,
    timeoutMs: WIFI_SCAN_TIMEOUT_MS,
  });
  return Array.isArray(result.ap_list) ? result.ap_list : [];
}

export async function getSavedWifiNetworks(signal?: AbortSignal): Promise<SavedWifiNetwork[]> {
  const result = await api.get<{ ap_list?: SavedWifiNetwork[] }>('/repeater/get_saved_ap_list', {
    signal,
  });
  return Array.isArray(result.ap_list) ? result.ap_list : [];
}

export interface WifiJoin {
  ssid: string;
  key?: string;
  hidden?: boolean;
}

export function connectWifi(join: WifiJoin): Promise<WifiConnectResult> {
  // Joining waits for the association and the address: as long as a scan at most.
  return api.post<WifiConnectResult>('/repeater/connect', {
    json: join,
    timeoutMs: WIFI_SCAN_TIMEOUT_MS,
  });
}

export function disconnectWifi(): Promise<unknown> {
  return api.post('/repeater/disconnect');
}

export function enableWifi(enable: boolean): Promise<unknown> {
  // GL enables only for the exact text `true` (§5.13), not the client's usual 1/0.
  return api.post('/repeater/enable', { query: { enable: enable ? 'true' : 'false' } });
}

export function forgetWifi(ssid: string): Promise<unknown> {
  return api.post('/repeater/remove_saved_ap', { json: { ssid } });
}

// ---- EDID (GL §5.6, 5.13) ----

/** A bare JSON array on the wire, no envelope (GL 1.10). */
export async function getEdidPresets(signal?: AbortSignal): Promise<EdidPreset[]> {
  const list = await api.get<EdidPreset[]>('/upgrade/edid_list', { signal });
  return Array.isArray(list) ? list : [];
}

export function getEdid(signal?: AbortSignal): Promise<EdidState> {
  return api.get<EdidState>('/upgrade/get_edid', { signal });
}

export function setEdid(hex: string): Promise<unknown> {
  return api.post('/upgrade/edid', { form: { edid: hex } });
}

// ---- System params and USB identity (GL §5.3, 5.13) ----

/** GL `GET /api/upgrade/reboot`: the device restarts (the console's heartbeat sees it go and come back). */
export function rebootDevice(): Promise<unknown> {
  return api.get('/upgrade/reboot');
}

export function getSystemParams(signal?: AbortSignal): Promise<SystemParams> {
  return api.get<SystemParams>('/system/get_param', { signal });
}

export type UsbIdentity = Record<UsbIdentityField, string>;

export function setUsbIdentity(identity: UsbIdentity): Promise<SystemParams> {
  return api.post<SystemParams>('/system/set_param', { query: { ...identity } });
}

export interface IdentityPresetResult {
  success: true;
  preset: DeviceIdentityPreset;
  params: SystemParams;
}

/** Ours: sets a device identity preset's USB fields; the console then posts its EDID. */
export function setIdentityPreset(preset: string): Promise<IdentityPresetResult> {
  return api.post<IdentityPresetResult>('/system/set_identity_preset', { query: { preset } });
}

// ---- Time (GL §5.5, 5.13) ----

export function getSystemTime(signal?: AbortSignal): Promise<SystemTimeResult> {
  return api.get<SystemTimeResult>('/system/time', { signal });
}

/** `time_zone` minutes with SPEC 3's inverted sign (UTC+08:00 is -480). */
export function setTimeZoneMinutes(minutes: number): Promise<unknown> {
  return api.post('/system/time', { query: { time_zone: minutes } });
}

export async function getTimezoneList(signal?: AbortSignal): Promise<string[]> {
  const result = await api.get<TimezoneListResult>('/system/timezone/list', { signal });
  return Array.isArray(result.timezones) ? result.timezones : [];
}

export function setCityTimezone(timezone: string): Promise<unknown> {
  return api.post('/system/timezone', { query: { timezone } });
}

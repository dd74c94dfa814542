/**
 * Clients of /api/upgrade/* (SPEC 7 "Upgrade", GL's answers in wire-protocol.md §5.6/§5.13).
 * Thin: one function per route, no state. Download and upload have no timeout (SPEC 7).
 */
import { api } from '../../lib/api';
import type { UploadController } from '../storage/upload';

export interface UpgradeVersion {
  version: string;
  model: string;
}

/** GL's compare: always 200; a failed lookup fills `error` / `beta_error` instead. */
export interface UpgradeCompare {
  local_model?: string;
  local_version: string;
  server_model?: string;
  server_version?: string;
  release_note?: string;
  release_note_cn?: string;
  beta_version?: string;
  beta_release_note?: string;
  beta_release_note_cn?: string;
  beta_error?: string | null;
  error?: string | null;
}

export interface DownloadInfo {
  size: number;
  total_size: number;
}

/** GL answers 200 in both cases; a failed check says which part failed. */
export interface StartResult {
  status: 'Upgrade started' | 'Upgrade failed' | string;
  signature_valid?: boolean;
  firmware_valid?: boolean;
  message?: string;
}

export function getVersion(signal?: AbortSignal): Promise<UpgradeVersion> {
  return api.get<UpgradeVersion>('/upgrade/version', { signal });
}

export function compareVersion(signal?: AbortSignal): Promise<UpgradeCompare> {
  return api.get<UpgradeCompare>('/upgrade/compare', { signal });
}

/** Answers with the size as soon as it is known; the device keeps downloading. */
export function startDownload(beta = false): Promise<{ size: number }> {
  return api.get<{ size: number }>(beta ? '/upgrade/beta/download' : '/upgrade/download', {
    timeoutMs: null,
  });
}

export function getDownloadInfo(signal?: AbortSignal): Promise<DownloadInfo> {
  return api.get<DownloadInfo>('/upgrade/download_info', { signal });
}

export function cancelDownload(): Promise<{ status: string; message?: string }> {
  return api.get<{ status: string; message?: string }>('/upgrade/download_cancel');
}

export function startUpgrade(saveConfig: boolean): Promise<StartResult> {
  return api.post<StartResult>('/upgrade/start', { query: { save_config: saveConfig } });
}

/** Multipart field `file` (GL reads the first part), with progress and no timeout. */
export function uploadPackage(
  controller: UploadController,
  file: File,
): Promise<{ filename: string; size: number }> {
  const form = new FormData();
  form.append('file', file, file.name);
  return controller.send('/upgrade/upload', form, { name: file.name, total: file.size });
}

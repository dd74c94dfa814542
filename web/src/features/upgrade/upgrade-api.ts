/**
 * Clients of /api/upgrade/* (SPEC 7 "Upgrade", GL's answers in wire-protocol.md §5.6/§5.13).
 * Thin: one function per route, no state. Download and upload have no timeout (SPEC 7).
 */
import type {
  UpgradeCompare,
  UpgradeDownloadCancel,
  UpgradeDownloadInfo,
  UpgradeDownloadStarted,
  UpgradeStartResult,
  UpgradeStatus,
  UpgradeUploaded,
  UpgradeVersion,
} from '@kvm/protocol/upgrade';
import { api } from '../../lib/api';
import type { UploadController } from '../storage/upload';

export type { UpgradeCompare, UpgradeStartResult, UpgradeStatus, UpgradeVersion };

export function getVersion(signal?: AbortSignal): Promise<UpgradeVersion> {
  return api.get<UpgradeVersion>('/upgrade/version', { signal });
}

export function compareVersion(signal?: AbortSignal): Promise<UpgradeCompare> {
  return api.get<UpgradeCompare>('/upgrade/compare', { signal });
}

/** Answers with the size as soon as it is known; the device keeps downloading. */
export function startDownload(beta = false): Promise<UpgradeDownloadStarted> {
  return api.get<UpgradeDownloadStarted>(beta ? '/upgrade/beta/download' : '/upgrade/download', {
    timeoutMs: null,
  });
}

export function getDownloadInfo(signal?: AbortSignal): Promise<UpgradeDownloadInfo> {
  return api.get<UpgradeDownloadInfo>('/upgrade/download_info', { signal });
}

export function cancelDownload(): Promise<UpgradeDownloadCancel> {
  return api.get<UpgradeDownloadCancel>('/upgrade/download_cancel');
}

/**
 * GL answers 200 in both cases; a failed check says which part failed. An older release is
 * 409 UpgradeDowngradeError unless `allowDowngrade` (allow_downgrade=1, the admin confirmed).
 */
export function startUpgrade(
  saveConfig: boolean,
  allowDowngrade = false,
): Promise<UpgradeStartResult> {
  return api.post<UpgradeStartResult>('/upgrade/start', {
    query: allowDowngrade
      ? { save_config: saveConfig, allow_downgrade: true }
      : { save_config: saveConfig },
  });
}

/** Whether this device can install, and how the last upgrade ended (after its restart). */
export function getUpgradeStatus(signal?: AbortSignal): Promise<UpgradeStatus> {
  return api.get<UpgradeStatus>('/upgrade/status', { signal });
}

/** Multipart field `file` (GL reads the first part), with progress and no timeout. */
export function uploadPackage(controller: UploadController, file: File): Promise<UpgradeUploaded> {
  const form = new FormData();
  form.append('file', file, file.name);
  return controller.send('/upgrade/upload', form, { name: file.name, total: file.size });
}

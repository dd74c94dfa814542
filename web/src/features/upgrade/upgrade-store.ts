/**
 * The console's firmware upgrade state (SPEC 4 "Upgrade flow"): the version check and its tip,
 * the online download polled every second (kept running while the upgrade control is closed),
 * the package upload and the confirm step. One module-level store, so the download and the
 * upload outlive the dialog that started them. A zustand store, as every feature's.
 */
import { create } from 'zustand';
import { isNewer } from '@kvm/protocol/upgrade';
import type { UpgradeOutcome } from '@kvm/protocol/upgrade';
import { ApiError, errorMessage } from '../../lib/api';
import { readStorage, writeStorage } from '../../lib/storage';
import { UploadController } from '../storage/upload';
import {
  cancelDownload,
  compareVersion,
  getDownloadInfo,
  getUpgradeStatus,
  getVersion,
  startDownload,
  startUpgrade,
  uploadPackage,
  type UpgradeCompare,
  type UpgradeStartResult,
  type UpgradeStatus,
} from './upgrade-api';

/** SPEC 4: download progress is polled every second. */
export const DOWNLOAD_POLL_MS = 1_000;
/**
 * A download whose size has not grown for this long is over: the device drops one that
 * receives nothing for 30 s (docs/upgrade.md), and an answer that never moves (a device that
 * kept an old package's total_size, issue 21) must not be polled for as long as the page is
 * open.
 */
export const DOWNLOAD_STALL_MS = 35_000;
/** Local storage: the server version whose new-version tip was dismissed. */
export const TIP_DISMISSED_KEY = 'upgrade_tip_dismissed_version';
/** Session storage: what /upgrading compares the device's answers with. */
export const UPGRADE_FROM_KEY = 'upgrade_from_version';
export const UPGRADE_SAVE_CONFIG_KEY = 'upgrade_save_config';
/** Session storage: the started upgrade's id (its outcome in status carries it) and version. */
export const UPGRADE_ID_KEY = 'upgrade_id';
export const UPGRADE_TO_KEY = 'upgrade_to_version';
/** Local storage: the id of the last upgrade outcome the help dialog showed (shown once). */
export const OUTCOME_SEEN_KEY = 'upgrade_outcome_seen';

export type DownloadStatus = 'none' | 'downloading' | 'downloaded';

export interface UpgradeState {
  compare: UpgradeCompare | null;
  checking: boolean;
  /** The server version whose tip was dismissed (local storage). */
  tipDismissed: string | null;
  download: { status: DownloadStatus; size: number; total: number; failed: boolean };
  /** The version being (or last) downloaded: the release or the beta. */
  downloadVersion: string | null;
  /** The upgrade control (help dialog) is open: no confirm pops up by itself then. */
  controlOpen: boolean;
  /** The confirm dialog is showing, for this source. */
  confirm: 'download' | 'upload' | null;
  /** Cancelling the confirm of a download asks whether to cancel the download too. */
  askCancelDownload: boolean;
  /**
   * start refused the package as older than the running version: the admin confirms the
   * downgrade (start again with allow_downgrade=1) or not. The versions as the device said.
   */
  downgrade: { packageVersion: string; localVersion: string; saveConfig: boolean } | null;
  /** The device's upgrade status; null until asked, or when it has no such route. */
  status: UpgradeStatus | null;
  /** The last upgrade's outcome until the upgrade control has shown it (once per browser). */
  outcome: UpgradeOutcome | null;
}

/**
 * Which of start's checks failed: the signature, or the package's files (firmware). Our device
 * stops at the first failed check, so an untrusted signature comes with firmware_valid false
 * too (its files were never read): that is the signature's failure.
 */
export type FailedCheck = 'signature' | 'firmware' | null;

/** What start answered, for the toast (SPEC 4 step 4), or the downgrade to confirm. */
export type StartOutcome =
  | { kind: 'started' }
  | { kind: 'failed'; check: FailedCheck; message: string }
  | { kind: 'downgrade'; packageVersion: string; localVersion: string };

function initialState(): UpgradeState {
  return {
    compare: null,
    checking: false,
    tipDismissed: readStorage(TIP_DISMISSED_KEY),
    download: { status: 'none', size: 0, total: 0, failed: false },
    downloadVersion: null,
    controlOpen: false,
    confirm: null,
    askCancelDownload: false,
    downgrade: null,
    status: null,
    outcome: null,
  };
}

export const useUpgrade = create<UpgradeState>()(initialState);
const { getState: get, setState: set } = useUpgrade;
let pollTimer: ReturnType<typeof setInterval> | null = null;
let polling = false;
/** The download's size at the last poll, and how many polls since have seen it unchanged. */
let lastGrowth = { size: -1, still: 0 };

export function getUpgradeState(): UpgradeState {
  return get();
}

/** The console's one firmware upload, kept while the control is closed. */
export const firmwareUploader = new UploadController();

/** The release the device offers when it is newer than the running one, else null. */
export function offeredVersion(compare: UpgradeCompare | null): string | null {
  if (!compare?.server_version || compare.error) return null;
  return isNewer(compare.local_version, compare.server_version) ? compare.server_version : null;
}

/** The beta the device offers when it is newer than the running version, else null. */
export function offeredBeta(compare: UpgradeCompare | null): string | null {
  if (!compare?.beta_version || compare.beta_error) return null;
  return isNewer(compare.local_version, compare.beta_version) ? compare.beta_version : null;
}

/** SPEC 4: the tip shows for a newer server version until that version's tip is dismissed. */
export function tipVersion(s: UpgradeState): string | null {
  const offered = offeredVersion(s.compare);
  return offered && offered !== s.tipDismissed ? offered : null;
}

export function dismissTip(): void {
  const offered = offeredVersion(get().compare);
  if (!offered) return;
  writeStorage(TIP_DISMISSED_KEY, offered);
  set({ tipDismissed: offered });
}

export async function checkVersion(): Promise<UpgradeCompare | null> {
  set({ checking: true });
  try {
    const compare = await compareVersion();
    set({ compare, checking: false });
    return compare;
  } catch {
    set({ checking: false });
    return null;
  }
}

/** Asks the device whether it can install and how the last upgrade ended. */
export async function checkStatus(): Promise<UpgradeStatus | null> {
  try {
    const status = await getUpgradeStatus();
    set({ status, outcome: unseenOutcome(status) ?? get().outcome });
    return status;
  } catch {
    // A device without the route (or a busy one): nothing is blocked, nothing to show.
    return null;
  }
}

/** False only when the device said so: start would refuse (it does not run under the launcher). */
export function canInstall(s: UpgradeState): boolean {
  return s.status?.can_install !== false;
}

/** The last upgrade's outcome when this browser has not shown it yet, else null. */
function unseenOutcome(status: UpgradeStatus): UpgradeOutcome | null {
  const last = status.last_upgrade;
  if (!last?.id) return null;
  return readStorage(OUTCOME_SEEN_KEY) === last.id ? null : last;
}

/** The upgrade control closed after showing the outcome: not shown again. */
export function acknowledgeOutcome(): void {
  const { outcome } = get();
  if (!outcome) return;
  writeStorage(OUTCOME_SEEN_KEY, outcome.id);
  set({ outcome: null });
}

function stopPolling(): void {
  if (pollTimer !== null) clearInterval(pollTimer);
  pollTimer = null;
}

async function pollOnce(): Promise<void> {
  if (polling) return;
  polling = true;
  try {
    const info = await getDownloadInfo();
    if (get().download.status !== 'downloading') return;
    if (info.total_size <= 0) {
      // Cancelled, replaced by an upload, or lost by a restart of the device.
      stopPolling();
      set({ download: { status: 'none', size: 0, total: 0, failed: true } });
      return;
    }
    // Counted in polls (each at least DOWNLOAD_POLL_MS after the last), not by the clock.
    if (info.size !== lastGrowth.size) lastGrowth = { size: info.size, still: 0 };
    else if (++lastGrowth.still >= DOWNLOAD_STALL_MS / DOWNLOAD_POLL_MS) {
      // Not moving: no download is running there (or it is lost); stop asking.
      stopPolling();
      set({ download: { status: 'none', size: 0, total: 0, failed: true } });
      return;
    }
    if (info.size >= info.total_size) {
      stopPolling();
      set({
        download: { status: 'downloaded', size: info.size, total: info.total_size, failed: false },
        confirm: get().controlOpen ? get().confirm : 'download',
      });
      return;
    }
    set({ download: { ...get().download, size: info.size, total: info.total_size } });
  } catch {
    // The next tick asks again; a busy device is not a failed download.
  } finally {
    polling = false;
  }
}

/** Polls download_info every second while a download runs, and only then. */
function startPolling(): void {
  stopPolling();
  lastGrowth = { size: -1, still: 0 };
  pollTimer = setInterval(() => void pollOnce(), DOWNLOAD_POLL_MS);
}

/** Starts the online download (GL answers with the size at once and keeps going). */
export async function beginDownload(beta = false): Promise<void> {
  if (get().download.status === 'downloading') return;
  set({
    download: { status: 'downloading', size: 0, total: 0, failed: false },
    downloadVersion: beta ? offeredBeta(get().compare) : offeredVersion(get().compare),
  });
  try {
    const { size } = await startDownload(beta);
    set({ download: { ...get().download, total: size } });
    startPolling();
  } catch (err) {
    set({ download: { status: 'none', size: 0, total: 0, failed: true } });
    throw err;
  }
}

/** On load: a download the device is still running (another tab, a reload) is followed again. */
export async function resumeDownload(): Promise<void> {
  if (get().download.status !== 'none') return;
  try {
    const info = await getDownloadInfo();
    if (info.total_size > 0 && info.size < info.total_size) {
      set({
        download: { status: 'downloading', size: info.size, total: info.total_size, failed: false },
      });
      startPolling();
    }
  } catch {
    // Nothing to follow.
  }
}

export function setControlOpen(open: boolean): void {
  if (get().controlOpen !== open) set({ controlOpen: open });
}

export function requestConfirm(source: 'download' | 'upload'): void {
  set({ confirm: source, askCancelDownload: false });
}

/** The confirm dialog was cancelled: a download's asks whether to cancel the download. */
export function dismissConfirm(): void {
  set({ confirm: null, askCancelDownload: get().confirm === 'download' });
}

export async function answerCancelDownload(cancel: boolean): Promise<void> {
  set({ askCancelDownload: false });
  if (!cancel) return;
  stopPolling();
  await cancelDownload();
  set({ download: { status: 'none', size: 0, total: 0, failed: false } });
}

/** Uploads a package; on success the confirm dialog follows (SPEC 4). */
export async function uploadFirmware(file: File): Promise<void> {
  // GL's upload resets the download (total_size 0): stop following it.
  stopPolling();
  set({ download: { status: 'none', size: 0, total: 0, failed: false } });
  await uploadPackage(firmwareUploader, file);
  requestConfirm('upload');
}

function describeFailure(result: UpgradeStartResult): StartOutcome {
  const check: FailedCheck =
    result.signature_valid === false
      ? 'signature'
      : result.firmware_valid === false
        ? 'firmware'
        : null;
  return { kind: 'failed', check, message: result.message ?? '' };
}

/** The device's 409 for an older release (UpgradeDowngradeError), with its two versions. */
function downgradeOf(err: unknown): StartOutcome | null {
  if (!(err instanceof ApiError) || err.error !== 'UpgradeDowngradeError') return null;
  const str = (v: unknown) => (typeof v === 'string' ? v : '');
  return {
    kind: 'downgrade',
    packageVersion: str(err.details['package_version']),
    localVersion: str(err.details['local_version']),
  };
}

function writeSession(key: string, value: string | null | undefined): void {
  try {
    if (value) sessionStorage.setItem(key, value);
    else sessionStorage.removeItem(key);
  } catch {
    // Without session storage /upgrading falls back to asking the device's version.
  }
}

/**
 * Starts the upgrade. /upgrading finds this upgrade's outcome in the device's status by the id
 * start answered (session storage); the version before it and save_config are kept too, for
 * devices whose status has no outcome (another version answering = done).
 */
export async function runUpgrade(
  saveConfig: boolean,
  opts: { allowDowngrade?: boolean } = {},
): Promise<StartOutcome> {
  let from = get().compare?.local_version;
  if (!from)
    from = await getVersion().then(
      (v) => v.version,
      () => undefined,
    );
  writeSession(UPGRADE_FROM_KEY, from);
  writeSession(UPGRADE_SAVE_CONFIG_KEY, saveConfig ? '1' : '0');
  // A previous upgrade's id must not be taken for this one's.
  writeSession(UPGRADE_ID_KEY, null);
  writeSession(UPGRADE_TO_KEY, null);
  set({ confirm: null, askCancelDownload: false, downgrade: null });
  try {
    const result = await startUpgrade(saveConfig, opts.allowDowngrade === true);
    if (result.status !== 'Upgrade started') return describeFailure(result);
    writeSession(UPGRADE_ID_KEY, result.id);
    writeSession(UPGRADE_TO_KEY, result.version);
    return { kind: 'started' };
  } catch (err) {
    const downgrade = downgradeOf(err);
    if (downgrade?.kind === 'downgrade') {
      // Asked in a dialog of its own (UpgradeHost); confirming starts again with the flag.
      set({
        downgrade: {
          packageVersion: downgrade.packageVersion,
          localVersion: downgrade.localVersion,
          saveConfig,
        },
      });
      return downgrade;
    }
    return { kind: 'failed', check: null, message: errorMessage(err, '') };
  }
}

/** The admin did not confirm the downgrade: nothing is installed, the package stays. */
export function dismissDowngrade(): void {
  set({ downgrade: null });
}

/** Tests: back to a fresh console. */
export function resetUpgradeStore(): void {
  stopPolling();
  polling = false;
  lastGrowth = { size: -1, still: 0 };
  firmwareUploader.cancel();
  firmwareUploader.clear();
  set(initialState(), true);
}

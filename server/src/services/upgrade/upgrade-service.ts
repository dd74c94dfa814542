/**
 * Firmware packages on the device (issue 12; GL's answers in wire-protocol.md 5.6 and 5.13): the
 * version, the channel lookup (`compare`, channel.ts), the online download that answers early
 * and goes on in the background (download.ts), and the upload. Both end as
 * `<data>/upgrade/update.pkg`, which `start` verifies with package-reader.ts, unpacks into the
 * idle slot of the install folder and hands to the launcher (install.ts; install/boot.ts: trial,
 * health check, rollback; docs/upgrade.md). The flow's states are checked (upgrade-flow.ts).
 */
import { createWriteStream, existsSync } from 'node:fs';
import { mkdir, rename, rm, stat, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  formatVersion,
  type UpgradeStartResult,
  type UpgradeStatus,
  type UpgradeCompare,
  type UpgradeDownloadCancel,
  type UpgradeDownloadInfo,
  type UpgradeUploaded,
  type UpgradeVersion,
} from '@kvm/protocol';
import {
  BadRequestError,
  IsBusyError,
  PayloadTooLargeError,
  ServiceUnavailableError,
} from '../../errors';
import {
  readOutcome,
  readTrial,
  trialFileExists,
  type InstallLayout,
} from '../../install/install-dir';
import type { Logger } from '../../log';
import { ExclusiveRegion } from '../../sync/exclusive-region';
import { SerialQueue } from '../../sync/serial-queue';
import {
  CHANNEL_TIMEOUT_MS,
  channelRelease,
  messageOf,
  withSlash,
  type ChannelRelease,
} from './channel';
import { receivePackage } from './download';
import { failed, installPackage, type UpgradeStartRequest } from './install';
import {
  FlowState,
  INSTALL_TRANSITIONS,
  PACKAGE_TRANSITIONS,
  type InstallPhase,
  type PackagePhase,
} from './upgrade-flow';

export { UpgradeDowngradeError, type UpgradeStartRequest } from './install';

/** The largest package accepted, downloaded or uploaded. */
export const PACKAGE_MAX_BYTES = 1024 * 1024 * 1024;

export interface UpgradeConfig {
  channel_url: string | null;
  beta_channel_url: string | null;
  trusted_keys?: readonly string[];
  allow_skip_verify?: boolean;
}

/** GL answers `start` 200 `Upgrade started` this long before the device goes down. */
export const START_EXIT_DELAY_MS = 1000;

export interface UpgradeDeps {
  dataDir: string;
  config: UpgradeConfig;
  model: string;
  /** The running version (package.json's, e.g. `0.1.0`). */
  version: string;
  log: Logger;
  /** Free bytes under the data folder (tests fake a full disk); statfs by default. */
  freeBytes?: (dir: string) => Promise<number>;
  /** The install folder, only under the launcher (npm start, systemd): `start` needs it. */
  install?: InstallLayout;
  /** Stops the server so the launcher boots the prepared version (main.ts: exit 3). */
  exitForUpgrade?: () => void;
}

/** The upload is refused: another upload runs. */
export class UpgradeUploadBusyError extends IsBusyError {}

/** A second `start` while one verifies and unpacks (start answers it with GL's 200 refusal). */
class UpgradeInstallBusyError extends IsBusyError {}

/** The channel or its package could not be fetched (the download's answer). */
export class UpgradeDownloadError extends ServiceUnavailableError {}

interface Download {
  controller: AbortController;
  totalSize: number;
  done: Promise<void>;
}

export class UpgradeService {
  readonly dir: string;
  /** Where a complete package waits for `start`. */
  readonly packagePath: string;
  private readonly partPath: string;
  private download: Download | null = null;
  /** What download_info reports as total_size; upload and download_cancel reset it (5.13). */
  private totalSize = 0;
  /** One upload at a time: a second is refused (409) before its body is read. */
  readonly uploads = new ExclusiveRegion(
    () => new UpgradeUploadBusyError('An upload is in progress'),
  );
  /** A `start` verifying and unpacking (`start` answers the refusal itself, GL's 200). */
  readonly installs = new ExclusiveRegion(
    () => new UpgradeInstallBusyError('An upgrade is already in progress'),
  );
  /** What the package slot holds or receives (upgrade-flow.ts). */
  readonly packagePhase = new FlowState<PackagePhase>(
    'UpgradePackage',
    PACKAGE_TRANSITIONS,
    'none',
  );
  /** Where `start` is; `handed_over` refuses every later one until the restart. */
  readonly installPhase = new FlowState<InstallPhase>(
    'UpgradeInstall',
    INSTALL_TRANSITIONS,
    'idle',
  );
  private exitTimer: NodeJS.Timeout | null = null;
  /** Download starts and the upload's start run one at a time (they share the part file). */
  private readonly starts = new SerialQueue();

  /** A package completed before a restart is still complete after it: its size is known. */
  private readonly restored: Promise<void>;

  constructor(private readonly deps: UpgradeDeps) {
    this.dir = join(deps.dataDir, 'upgrade');
    this.packagePath = join(this.dir, 'update.pkg');
    this.partPath = join(this.dir, 'update.pkg.part');
    // A part file is what a restart cut short: nothing resumes it.
    this.restored = rm(this.partPath, { force: true })
      .catch(() => undefined)
      .then(() => stat(this.packagePath))
      .then(
        (s) => {
          if (this.totalSize === 0 && !this.download && !this.uploads.busy) this.totalSize = s.size;
          if (this.packagePhase.value === 'none') this.packagePhase.set('ready');
        },
        () => undefined,
      );
  }

  localVersion(): string {
    return formatVersion(this.deps.version) ?? this.deps.version;
  }

  version(): UpgradeVersion {
    return { version: this.localVersion(), model: this.deps.model };
  }

  /** GL 5.6/5.13: always an answer; a failed lookup fills `error` / `beta_error`. */
  async compare(): Promise<UpgradeCompare> {
    const answer: UpgradeCompare = {
      local_model: this.deps.model,
      local_version: this.localVersion(),
      server_model: this.deps.model,
      server_version: null,
      beta_version: null,
      beta_error: null,
      error: null,
    };
    const [release, beta] = await Promise.allSettled([
      channelRelease(this.deps.config.channel_url, 'release'),
      channelRelease(this.deps.config.beta_channel_url, 'beta'),
    ]);
    if (release.status === 'fulfilled') {
      answer.server_version = release.value.version;
      answer.release_note = release.value.release_note;
      answer.release_note_cn = release.value.release_note_cn;
    } else answer.error = messageOf(release.reason);
    if (beta.status === 'fulfilled') {
      answer.beta_version = beta.value.version;
      answer.beta_release_note = beta.value.release_note;
      answer.beta_release_note_cn = beta.value.release_note_cn;
    } else answer.beta_error = messageOf(beta.reason);
    return answer;
  }

  /**
   * Starts the download of the channel's current package and answers its size once the remote
   * sent it; the rest goes on in the background. A second download cancels the first.
   */
  startDownload(beta: boolean): Promise<{ size: number }> {
    return this.starts.run(() => this.downloadNow(beta));
  }

  private async downloadNow(beta: boolean): Promise<{ size: number }> {
    await this.restored;
    const base = beta ? this.deps.config.beta_channel_url : this.deps.config.channel_url;
    let release: ChannelRelease;
    try {
      release = await channelRelease(base, beta ? 'beta' : 'release');
    } catch (e) {
      if (!base) throw new BadRequestError(messageOf(e));
      throw new UpgradeDownloadError(messageOf(e));
    }
    await this.cancelRunning();
    if (this.uploads.busy) throw new UpgradeUploadBusyError('An upload is in progress');
    await mkdir(this.dir, { recursive: true });
    await rm(this.partPath, { force: true });
    const controller = new AbortController();
    const headers = setTimeout(() => controller.abort(), CHANNEL_TIMEOUT_MS);
    let res: Response;
    try {
      res = await fetch(new URL(release.file, withSlash(base!)), {
        signal: controller.signal,
        redirect: 'follow',
      });
    } catch (e) {
      throw new UpgradeDownloadError(`Download failed: ${messageOf(e)}`);
    } finally {
      clearTimeout(headers);
    }
    const size = Number(res.headers.get('content-length'));
    if (!res.ok || !res.body || !Number.isSafeInteger(size) || size <= 0) {
      controller.abort();
      throw new UpgradeDownloadError(`Download failed: HTTP ${res.status}, size ${String(size)}`);
    }
    try {
      await this.ensureSpace(size);
    } catch (e) {
      controller.abort();
      throw e;
    }
    this.totalSize = size;
    const download: Download = {
      controller,
      totalSize: size,
      done: Promise.resolve(),
    };
    const target = { partPath: this.partPath, packagePath: this.packagePath, log: this.deps.log };
    download.done = receivePackage(target, res.body, release, size, controller)
      .then((outcome) => {
        if (outcome === 'failed') this.totalSize = 0;
      })
      .finally(() => {
        if (this.download === download) {
          this.download = null;
          this.packagePhase.set(this.settled());
        }
      });
    this.download = download;
    this.packagePhase.set('downloading');
    return { size };
  }

  /** GL: `{size: bytes on disk, total_size}`, zeros when there is nothing. */
  async downloadInfo(): Promise<UpgradeDownloadInfo> {
    await this.restored;
    if (this.totalSize === 0) return { size: 0, total_size: 0 };
    if (this.download) {
      const size = await stat(this.partPath).then(
        (s) => s.size,
        () => 0,
      );
      return { size, total_size: this.totalSize };
    }
    // Nothing is transferring: what counts is the complete package, if it is still there. The
    // launcher removes it once the version it installed is healthy (issue 21: a size kept from
    // before the upgrade read as a download stuck at 0 %).
    const size = await stat(this.packagePath).then(
      (s) => s.size,
      () => null,
    );
    if (size === null) {
      this.totalSize = 0;
      if (this.packagePhase.value === 'ready') this.packagePhase.set('none');
      return { size: 0, total_size: 0 };
    }
    this.totalSize = size;
    return { size, total_size: size };
  }

  async cancelDownload(): Promise<UpgradeDownloadCancel> {
    const running = this.download !== null;
    await this.cancelRunning();
    this.totalSize = 0;
    return running
      ? { status: 'success', message: 'Download cancelled' }
      : { status: 'warning', message: 'No download in progress' };
  }

  /** Before the body is read: busy (409) and space (413, with the sizes) checks. */
  async prepareUpload(declared: number): Promise<void> {
    if (this.uploads.busy) throw new UpgradeUploadBusyError('An upload is in progress');
    await mkdir(this.dir, { recursive: true });
    await this.ensureSpace(declared);
  }

  /**
   * Streams an uploaded package to disk (no timeout: a slow link may take minutes); the body
   * is bounded by its Content-Length (multipart's fileSize limit sets `truncated`).
   */
  upload(filename: string, body: Readable): Promise<UpgradeUploaded> {
    return this.uploads.enter(async () => {
      await this.starts.run(async () => {
        await this.restored;
        await this.cancelRunning();
        this.totalSize = 0;
        await mkdir(this.dir, { recursive: true });
        await rm(this.partPath, { force: true });
      });
      this.packagePhase.set('uploading');
      let size = 0;
      const counter = new Transform({
        transform(chunk: Buffer, _enc, cb) {
          size += chunk.length;
          cb(null, chunk);
        },
      });
      try {
        await pipeline(body, counter, createWriteStream(this.partPath));
        if ((body as Readable & { truncated?: boolean }).truncated) {
          throw new PayloadTooLargeError('The package is larger than its Content-Length');
        }
        await rename(this.partPath, this.packagePath);
      } catch (e) {
        await rm(this.partPath, { force: true });
        this.packagePhase.set(this.settled());
        throw e;
      }
      this.packagePhase.set('ready');
      this.deps.log.info({ filename, size }, 'upgrade package uploaded');
      return { filename, size };
    });
  }

  /** GL's `{enabled}` and ours: can this device install, is one under way, the last outcome. */
  status(): UpgradeStatus {
    const install = this.deps.install;
    return {
      enabled: true,
      can_install: install !== undefined,
      in_progress:
        this.installPhase.value !== 'idle' || (install !== undefined && trialFileExists(install)),
      last_upgrade: install ? readOutcome(install) : null,
    };
  }

  /**
   * GL's `start`: HTTP 200 either way. Verifies the waiting package (signature, every hash,
   * model, min_version) while unpacking it into the idle slot, records the trial, answers, and
   * one second later stops the server; the launcher boots the new version and keeps it only
   * once it is healthy (install/boot.ts).
   */
  async start(opts: UpgradeStartRequest): Promise<UpgradeStartResult> {
    const install = this.deps.install;
    if (!install) {
      return failed(
        'This device does not run under the launcher (npm start or the systemd unit), so it cannot install upgrades',
      );
    }
    if (
      this.installs.busy ||
      this.installPhase.value !== 'idle' ||
      trialFileExists(install) ||
      readTrial(install)
    ) {
      return failed('An upgrade is already in progress');
    }
    if (this.download || this.uploads.busy) {
      return failed('The package is still being downloaded or uploaded');
    }
    if (opts.skipVerify && !this.deps.config.allow_skip_verify) {
      return failed('skip_verify is not allowed on this device (upgrade.allow_skip_verify)');
    }
    if (!existsSync(this.packagePath)) {
      return failed('No firmware package: download or upload one first');
    }
    return this.installs.enter(async () => {
      this.installPhase.set('installing');
      let result: UpgradeStartResult;
      try {
        result = await installPackage(
          {
            packagePath: this.packagePath,
            install,
            trustedKeys: this.deps.config.trusted_keys ?? [],
            model: this.deps.model,
            localVersion: this.localVersion(),
            dataDir: this.deps.dataDir,
            log: this.deps.log,
          },
          opts,
        );
      } catch (e) {
        this.installPhase.set('idle');
        throw e;
      }
      if (result.status !== 'Upgrade started') {
        this.installPhase.set('idle');
        return result;
      }
      this.installPhase.set('handed_over');
      this.exitTimer = setTimeout(() => {
        this.exitTimer = null;
        (this.deps.exitForUpgrade ?? (() => undefined))();
      }, START_EXIT_DELAY_MS);
      return result;
    });
  }

  /** Fails with 413 and the sizes when the data folder cannot hold `bytes` more. */
  async ensureSpace(bytes: number): Promise<void> {
    if (bytes > PACKAGE_MAX_BYTES) {
      throw new PayloadTooLargeError(
        `The package (${bytes} bytes) is larger than the limit (${PACKAGE_MAX_BYTES} bytes)`,
      );
    }
    const available = this.deps.freeBytes
      ? await this.deps.freeBytes(this.dir)
      : await statfs(this.dir).then((fs) => fs.bavail * fs.bsize);
    // The old package goes when the new one is complete: count it as free.
    const old = await stat(this.packagePath).then(
      (s) => s.size,
      () => 0,
    );
    const free = available + old;
    if (bytes > free) {
      throw new PayloadTooLargeError(
        `Not enough space: the package needs ${bytes} bytes, ${free} bytes are free`,
      );
    }
  }

  async dispose(): Promise<void> {
    if (this.exitTimer) clearTimeout(this.exitTimer);
    await this.cancelRunning();
  }

  /** Where a transfer that did not complete leaves the slot: an older package may still wait. */
  private settled(): PackagePhase {
    return existsSync(this.packagePath) ? 'ready' : 'none';
  }

  private async cancelRunning(): Promise<void> {
    const d = this.download;
    if (!d) return;
    d.controller.abort();
    await d.done.catch(() => {});
  }
}

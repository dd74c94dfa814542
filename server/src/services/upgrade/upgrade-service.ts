/**
 * Firmware packages on the device (issue 12; GL's answers in wire-protocol.md 5.6 and 5.13): the
 * version, the channel lookup (`compare`), the online download that answers early and goes on in
 * the background, and the upload. Both end as `<data>/upgrade/update.pkg`, which `start`
 * verifies with package-reader.ts, unpacks into the idle slot of the install folder and hands to
 * the launcher (install/boot.ts: trial, health check, rollback; docs/upgrade.md).
 */
import { execFile } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { createWriteStream, existsSync } from 'node:fs';
import { mkdir, rename, rm, stat, statfs } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
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
  ConflictError,
  IsBusyError,
  PayloadTooLargeError,
  ServiceUnavailableError,
} from '../../errors';
import {
  idleSlot,
  readCurrent,
  readOutcome,
  readTrial,
  slotRoot,
  slotUsable,
  syncDir,
  trialFileExists,
  writeTrial,
  type InstallLayout,
} from '../../install/install-dir';
import type { Logger } from '../../log';
import { loadTrustedKeys, verifyPackage } from './package-reader';

/** Channel lookups and the download's answer wait this long (GL's requests use 5 s too). */
const CHANNEL_TIMEOUT_MS = 5000;
/** A download that receives nothing for this long is abandoned. */
const DOWNLOAD_IDLE_MS = 30_000;
/** The largest package accepted, downloaded or uploaded. */
export const PACKAGE_MAX_BYTES = 1024 * 1024 * 1024;
/** list-sha256.txt and metadata are small: bound what a channel can make us read. */
const CHANNEL_TEXT_MAX = 64 * 1024;

export interface UpgradeConfig {
  channel_url: string | null;
  beta_channel_url: string | null;
  trusted_keys?: readonly string[];
  allow_skip_verify?: boolean;
}

const execFileAsync = promisify(execFile);

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

/**
 * 409: the waiting package is a signed, valid release older than the running one; `start`
 * installs it only with `allow_downgrade=1` (the console asks the admin first). The envelope
 * carries both versions.
 */
export class UpgradeDowngradeError extends ConflictError {}

/** The channel or its package could not be fetched (the download's answer). */
export class UpgradeDownloadError extends ServiceUnavailableError {}

interface ChannelRelease {
  version: string;
  file: string;
  sha256: string;
  release_note: string;
  release_note_cn: string;
}

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
  private uploading = false;
  /** A `start` verifies and unpacks, or has handed over: the next one is refused. */
  private installing = false;
  private exitTimer: NodeJS.Timeout | null = null;
  /** Download starts and the upload's start run one at a time (they share the part file). */
  private starting: Promise<unknown> = Promise.resolve();

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
          if (this.totalSize === 0 && !this.download && !this.uploading) this.totalSize = s.size;
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
      this.channel(this.deps.config.channel_url, 'release'),
      this.channel(this.deps.config.beta_channel_url, 'beta'),
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
    return this.serial(() => this.downloadNow(beta));
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.starting.then(fn, fn);
    this.starting = run.catch(() => {});
    return run;
  }

  private async downloadNow(beta: boolean): Promise<{ size: number }> {
    await this.restored;
    const base = beta ? this.deps.config.beta_channel_url : this.deps.config.channel_url;
    let release: ChannelRelease;
    try {
      release = await this.channel(base, beta ? 'beta' : 'release');
    } catch (e) {
      if (!base) throw new BadRequestError(messageOf(e));
      throw new UpgradeDownloadError(messageOf(e));
    }
    await this.cancelRunning();
    if (this.uploading) throw new UpgradeUploadBusyError('An upload is in progress');
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
    download.done = this.receive(res.body, release, size, controller).finally(() => {
      if (this.download === download) this.download = null;
    });
    this.download = download;
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
    if (this.uploading) throw new UpgradeUploadBusyError('An upload is in progress');
    await mkdir(this.dir, { recursive: true });
    await this.ensureSpace(declared);
  }

  /**
   * Streams an uploaded package to disk (no timeout: a slow link may take minutes); the body
   * is bounded by its Content-Length (multipart's fileSize limit sets `truncated`).
   */
  async upload(filename: string, body: Readable): Promise<UpgradeUploaded> {
    if (this.uploading) throw new UpgradeUploadBusyError('An upload is in progress');
    this.uploading = true;
    try {
      await this.serial(async () => {
        await this.restored;
        await this.cancelRunning();
        this.totalSize = 0;
        await mkdir(this.dir, { recursive: true });
        await rm(this.partPath, { force: true });
      });
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
        throw e;
      }
      this.deps.log.info({ filename, size }, 'upgrade package uploaded');
      return { filename, size };
    } finally {
      this.uploading = false;
    }
  }

  /** GL's `{enabled}` and ours: can this device install, is one under way, the last outcome. */
  status(): UpgradeStatus {
    const install = this.deps.install;
    return {
      enabled: true,
      can_install: install !== undefined,
      in_progress: this.installing || (install !== undefined && trialFileExists(install)),
      last_upgrade: install ? readOutcome(install) : null,
    };
  }

  /**
   * GL's `start`: HTTP 200 either way. Verifies the waiting package (signature, every hash,
   * model, min_version) while unpacking it into the idle slot, records the trial, answers, and
   * one second later stops the server; the launcher boots the new version and keeps it only
   * once it is healthy (install/boot.ts).
   */
  async start(opts: {
    saveConfig: boolean;
    skipVerify: boolean;
    allowDowngrade?: boolean;
  }): Promise<UpgradeStartResult> {
    const install = this.deps.install;
    if (!install) {
      return failed(
        'This device does not run under the launcher (npm start or the systemd unit), so it cannot install upgrades',
      );
    }
    if (this.installing || trialFileExists(install) || readTrial(install)) {
      return failed('An upgrade is already in progress');
    }
    if (this.download || this.uploading) {
      return failed('The package is still being downloaded or uploaded');
    }
    if (opts.skipVerify && !this.deps.config.allow_skip_verify) {
      return failed('skip_verify is not allowed on this device (upgrade.allow_skip_verify)');
    }
    if (!existsSync(this.packagePath)) {
      return failed('No firmware package: download or upload one first');
    }
    this.installing = true;
    let handedOver = false;
    try {
      let keys;
      try {
        keys = await loadTrustedKeys(this.deps.config.trusted_keys ?? []);
      } catch (e) {
        return failed(messageOf(e));
      }
      const from = readCurrent(install);
      const slot = idleSlot(from);
      const dest = slotRoot(install, slot);
      const staging = `${dest}.new`;
      await rm(staging, { recursive: true, force: true });
      await mkdir(staging, { recursive: true });
      const began = performance.now();
      const result = await verifyPackage(
        this.packagePath,
        keys,
        this.deps.model,
        this.localVersion(),
        {
          extractTo: staging,
          allowUnsigned: opts.skipVerify,
          allowDowngrade: opts.allowDowngrade === true,
        },
      );
      const trusted = result.signature_valid || opts.skipVerify;
      if (result.downgrade && result.manifest) {
        await rm(staging, { recursive: true, force: true });
        const pkgVersion = formatVersion(result.manifest.version) ?? result.manifest.version;
        this.deps.log.warn(
          { version: pkgVersion, running: this.localVersion() },
          'upgrade refused: an older release needs allow_downgrade',
        );
        throw new UpgradeDowngradeError(
          `The package (${pkgVersion}) is older than the running version (${this.localVersion()}): confirm the downgrade (allow_downgrade=1) to install it`,
          { package_version: pkgVersion, local_version: this.localVersion() },
        );
      }
      if (!trusted || !result.firmware_valid || !result.manifest) {
        await rm(staging, { recursive: true, force: true });
        this.deps.log.warn({ reason: result.reason }, 'upgrade package refused');
        return {
          status: 'Upgrade failed',
          signature_valid: result.signature_valid,
          firmware_valid: result.firmware_valid,
          message: result.reason ?? 'The package was refused',
          stdout: '',
          stderr: '',
        };
      }
      // The idle slot is replaced only by a complete, verified tree (one rename).
      await rm(dest, { recursive: true, force: true });
      await rename(staging, dest);
      syncDir(dirname(dest));
      // The slot's files reach the disk before the trial that boots them is recorded.
      await execFileAsync('sync', ['-f', dest], { timeout: 60_000 }).catch((e: unknown) =>
        this.deps.log.warn({ err: messageOf(e) }, 'sync of the new slot failed'),
      );
      if (!slotUsable(install, slot)) {
        await rm(dest, { recursive: true, force: true });
        return failed('The package has no server/dist/main.js or package.json');
      }
      const version = formatVersion(result.manifest.version) ?? result.manifest.version;
      const id = randomUUID();
      writeTrial(install, {
        id,
        from_slot: from,
        to_slot: slot,
        from_version: this.localVersion(),
        to_version: version,
        save_config: opts.saveConfig,
        data_dir: resolve(this.deps.dataDir),
        data_aside: null,
        attempts: 0,
        created_at: new Date().toISOString(),
      });
      this.deps.log.warn(
        {
          id,
          version,
          slot,
          saveConfig: opts.saveConfig,
          skipVerify: opts.skipVerify,
          downgrade: opts.allowDowngrade === true,
          ms: Math.round(performance.now() - began),
        },
        'upgrade started: restarting into the new version',
      );
      handedOver = true;
      this.exitTimer = setTimeout(() => {
        this.exitTimer = null;
        (this.deps.exitForUpgrade ?? (() => undefined))();
      }, START_EXIT_DELAY_MS);
      return {
        status: 'Upgrade started',
        signature_valid: result.signature_valid,
        firmware_valid: true,
        stdout: `Installed ${version} into slot ${slot}; restarting`,
        stderr: '',
        id,
        version,
      };
    } catch (e) {
      if (e instanceof UpgradeDowngradeError) throw e;
      this.deps.log.error({ err: e }, 'upgrade start failed');
      return failed(`The package could not be installed: ${messageOf(e)}`);
    } finally {
      if (!handedOver) this.installing = false;
    }
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

  private async cancelRunning(): Promise<void> {
    const d = this.download;
    if (!d) return;
    d.controller.abort();
    await d.done.catch(() => {});
  }

  private async receive(
    body: ReadableStream<Uint8Array>,
    release: ChannelRelease,
    size: number,
    controller: AbortController,
  ): Promise<void> {
    const hash = createHash('sha256');
    let received = 0;
    let stalled = false;
    const stall = (): void => {
      stalled = true;
      controller.abort();
    };
    let idle = setTimeout(stall, DOWNLOAD_IDLE_MS);
    const tap = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        received += chunk.length;
        if (received > size) return cb(new Error('more bytes than announced'));
        hash.update(chunk);
        clearTimeout(idle);
        idle = setTimeout(stall, DOWNLOAD_IDLE_MS);
        cb(null, chunk);
      },
    });
    try {
      await pipeline(
        Readable.fromWeb(body as Parameters<typeof Readable.fromWeb>[0]),
        tap,
        createWriteStream(this.partPath),
        { signal: controller.signal },
      );
      const sha = hash.digest('hex');
      if (received !== size) throw new Error(`received ${received} of ${size} bytes`);
      if (sha !== release.sha256) throw new Error(`sha256 ${sha} is not the channel's`);
      await rename(this.partPath, this.packagePath);
      this.deps.log.info({ version: release.version, size }, 'upgrade package downloaded');
    } catch (e) {
      // GL: silent after the answer; the console watches download_info (it stops growing).
      await rm(this.partPath, { force: true });
      if (stalled || !controller.signal.aborted) {
        this.totalSize = 0;
        this.deps.log.warn({ err: messageOf(e) }, 'upgrade download failed');
      }
    } finally {
      clearTimeout(idle);
    }
  }

  /** The channel's current release: list-sha256.txt's first line and its metadata file. */
  private async channel(base: string | null, kind: string): Promise<ChannelRelease> {
    if (!base) throw new Error(`No ${kind} channel is configured (upgrade.channel_url)`);
    const list = await fetchText(new URL('list-sha256.txt', withSlash(base)));
    const [version, file, sha256] = (list.split('\n')[0] ?? '').trim().split(/\s+/);
    if (
      !version ||
      !file ||
      !sha256 ||
      !/^[0-9a-f]{64}$/i.test(sha256) ||
      !/^[\w+-][\w.+-]*$/.test(file) ||
      !/^[\w.+-]+$/.test(version)
    ) {
      throw new Error(`The ${kind} channel's list-sha256.txt is malformed`);
    }
    const meta = JSON.parse(await fetchText(new URL(`metadata_${version}`, withSlash(base)))) as {
      version?: { release?: unknown; firmware_type?: unknown };
      release_note?: unknown;
      release_note_cn?: unknown;
    };
    const release = typeof meta.version?.release === 'string' ? meta.version.release : version;
    const type = typeof meta.version?.firmware_type === 'string' ? meta.version.firmware_type : '';
    return {
      // GL: "V<release> <firmware_type>".
      version: `V${release.replace(/^v/i, '')} ${type}`.trim(),
      file,
      sha256: sha256.toLowerCase(),
      release_note: typeof meta.release_note === 'string' ? meta.release_note : '',
      release_note_cn: typeof meta.release_note_cn === 'string' ? meta.release_note_cn : '',
    };
  }
}

/** A refusal before any check of the package: GL's shape without the two flags. */
function failed(message: string): UpgradeStartResult {
  return {
    status: 'Upgrade failed',
    message,
    stdout: '',
    stderr: '',
  };
}

function withSlash(base: string): string {
  return base.endsWith('/') ? base : `${base}/`;
}

function messageOf(e: unknown): string {
  if (e instanceof Error) {
    if (e.name === 'TimeoutError' || e.name === 'AbortError')
      return 'The channel did not answer in time';
    return e.message;
  }
  return String(e);
}

async function fetchText(url: URL): Promise<string> {
  const res = await fetch(url, { signal: AbortSignal.timeout(CHANNEL_TIMEOUT_MS) });
  if (!res.ok) {
    await res.body?.cancel();
    throw new Error(`${url.pathname.split('/').pop()}: HTTP ${res.status}`);
  }
  const text = await res.text();
  if (text.length > CHANNEL_TEXT_MAX) throw new Error(`${url.pathname}: too large`);
  return text;
}

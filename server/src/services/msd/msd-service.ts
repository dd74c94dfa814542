/**
 * Virtual media (SPEC 4 "Virtual media", wire-protocol.md 1.6 and 2.6): the image storage, the
 * drive's selection (image, CD-ROM or flash, rw), lending it through the driver, GL's storage
 * "partition" drive, uploads and downloads with progress, and the `msd` state and events.
 *
 * Regions (ExclusiveRegion: a second caller gets MsdIsBusyError, 409, at once):
 * - `region`, the drive's: set_params, set_connected, remove, partition_connect, _disconnect
 *   and _format;
 * - `transfers`: one upload or download at a time.
 * An image can be mounted while another one uploads; partition_connect and partition_format
 * hold both (the storage must not change under them). `reset` stops the transfer, then takes
 * both regions after whatever holds them, so no plug it did not see can land after it. `busy`
 * in the state is true while either is taken (kvmd shows busy during a write too). A name
 * being written or removed is claimed: a second verb on it is busy too.
 *
 * Persisted in `<data_dir>/msd/state.json`: enabled, and the selection (image, cdrom, rw). What
 * is connected is not: a restarted server lends nothing until asked.
 */
import { EventEmitter } from 'node:events';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import {
  MSD_PARTITION_LABEL,
  sortImagesNewestFirst,
  type MsdDrive,
  type MsdDrivePartition,
  type MsdImageInfo,
  type MsdPartitionShow,
  type MsdState,
  type MsdStatePartial,
  type MsdWriteResult,
} from '@kvm/protocol';
import { ApiError, ValidatorError } from '../../errors';
import type { MsdDriver } from '../../drivers/msd/types';
import { JsonFile } from '../../storage/json-store';
import { ExclusiveRegion } from '../exclusive-region';
import {
  MsdConnectError,
  MsdConnectedError,
  MsdDisabledError,
  MsdDisconnectError,
  MsdDisconnectedError,
  MsdImageExistsError,
  MsdImageInUseError,
  MsdImageNotSelected,
  MsdIsBusyError,
  MsdNoSpaceError,
  MsdOfflineError,
  MsdRemoteError,
  MsdStorageError,
  MsdStorageLinkError,
  MsdTransferAbortedError,
  MsdUnknownImageError,
} from './msd-errors';
import {
  baseOfSuggestedName,
  filenameFromUrl,
  openRemote,
  type RemoteBody,
  type RemotePolicy,
} from './remote';
import {
  ImageStorage,
  StorageLinkError,
  type ImageWriter,
  type StorageSpace,
  type StoredImage,
} from './storage';
import type { Logger } from '../../log';

export interface MsdServiceOptions {
  dataDir: string;
  driver: MsdDriver;
  log?: Logger;
  /** Called after set_enabled saved a change: the device restarts to apply it (SPEC 4). */
  requestRestart?: () => void;
  /** Progress updates of the `msd` state, ms (at most ~4 per second). */
  progressIntervalMs?: number;
  /** An upload that sends nothing for this long ends; default UPLOAD_IDLE_MS. */
  uploadIdleMs?: number;
  /** Where write_remote may fetch from (`msd.remote` of the config); default: public only. */
  remote?: RemotePolicy;
}

/** `<data_dir>/msd/state.json`. */
export interface MsdSettings {
  enabled: boolean;
  /** Selected image name, or null. */
  image: string | null;
  cdrom: boolean;
  rw: boolean;
}

export const DEFAULT_MSD_SETTINGS: MsdSettings = {
  enabled: true,
  image: null,
  cdrom: true,
  rw: false,
};

function settingsFile(dataDir: string): JsonFile<MsdSettings> {
  return new JsonFile(join(dataDir, 'msd', 'state.json'), (raw) => {
    const r = (raw ?? {}) as Partial<MsdSettings>;
    const cdrom = typeof r.cdrom === 'boolean' ? r.cdrom : DEFAULT_MSD_SETTINGS.cdrom;
    return {
      enabled: typeof r.enabled === 'boolean' ? r.enabled : DEFAULT_MSD_SETTINGS.enabled,
      image: typeof r.image === 'string' && r.image !== '' ? r.image : null,
      cdrom,
      rw: !cdrom && r.rw === true,
    };
  });
}

interface Transfer {
  kind: 'upload' | 'download';
  name: string;
  size: number;
  writer: ImageWriter | null;
  /** Why the service stopped it (cancel, reset), if it did. */
  stopped: Error | null;
  /** Frees the name's claim. */
  release: () => void;
  /** Aborted by `abort`: the copy stops (an upload's request is left open for the answer). */
  readonly signal: AbortSignal;
  abort(reason: Error): void;
}

/** An upload without a byte for this long is ended (the partial file follows remove_incomplete). */
export const UPLOAD_IDLE_MS = 120_000;

class SourceIdleError extends Error {
  constructor(ms: number) {
    super(`No data for ${Math.round(ms / 1000)} s`);
    this.name = 'SourceIdleError';
  }
}

/** The source of a transfer closed before its last byte (a client or a remote that hung up). */
class SourceClosedError extends Error {
  constructor(message = 'The connection closed before the last byte') {
    super(message);
    this.name = 'SourceClosedError';
  }
}

/** Writing the image to the storage failed (the disk, not the source). Keeps the errno code. */
class StorageWriteError extends Error {
  readonly code: string | undefined;
  constructor(cause: Error) {
    super(cause.message);
    this.name = 'StorageWriteError';
    this.code = (cause as NodeJS.ErrnoException).code;
  }
}

export interface DownloadRequest {
  url: URL;
  /** `image` argument, or '' to take the remote's file name. */
  image: string;
  prefix: string;
  insecure: boolean;
  timeoutMs: number;
  removeIncomplete: boolean;
  /** Resolves the name from the arguments and the answer (the route's validation rules). */
  nameOf(image: string, prefix: string): string;
  /** Aborted when the caller went away: the download stops, before or after its stream began. */
  signal?: AbortSignal;
}

/** A download whose stream has begun. */
export interface DownloadJob {
  readonly name: string;
  readonly size: number;
  written(): number;
  /** Settles when the image is complete, or with the error that ended it. */
  readonly done: Promise<void>;
  cancel(): void;
}

export function writeResult(name: string, size: number, written: number): MsdWriteResult {
  return { image: { name, size, written } };
}

/** The keys of a partial `msd` event (wire-protocol.md 2.6). */
const TOP_KEYS = ['busy', 'drive', 'drive_partition'] as const;
const STORAGE_KEYS = ['images', 'parts', 'downloading', 'uploading'] as const;

export class MsdService extends EventEmitter<{ state: [MsdState | MsdStatePartial] }> {
  private images = new Map<string, StoredImage>();
  private space: StorageSpace = { size: 0, free: 0, writable: false, filesystem: '' };
  private connected = false;
  private partitionConnected = false;
  /** The drive's region (see the file comment). */
  private readonly region = new ExclusiveRegion(() => new MsdIsBusyError());
  private readonly transfers = new ExclusiveRegion(() => new MsdIsBusyError());
  /** The running transfer (its progress); set and cleared inside `transfers`. */
  private transfer: Transfer | null = null;
  /** Names being written or removed. */
  private readonly claimed = new Set<string>();
  private ticker: NodeJS.Timeout | null = null;
  /** JSON of each key of the last state sent, to send only what changed. */
  private sent: Map<string, string> | null = null;
  private sentOnline: boolean | null = null;
  private readonly offDriver: () => void;
  private readonly log: Logger | undefined;

  private constructor(
    private readonly opts: MsdServiceOptions,
    readonly storage: ImageStorage,
    private readonly file: JsonFile<MsdSettings>,
    private settings: MsdSettings,
  ) {
    super();
    this.log = opts.log;
    this.offDriver = opts.driver.onState(() => this.publish());
    this.region.onChange(() => this.publish());
    this.transfers.onChange(() => this.publish());
  }

  static async open(opts: MsdServiceOptions): Promise<MsdService> {
    const storage = await ImageStorage.open(join(opts.dataDir, 'msd', 'images'));
    const file = settingsFile(opts.dataDir);
    const settings = await file.load();
    const msd = new MsdService(opts, storage, file, settings);
    await msd.refresh();
    // The selection survives a restart only while its image is still there and complete.
    if (settings.image !== null && !msd.images.get(settings.image)?.complete) {
      msd.settings = { ...settings, image: null };
      await file.save(msd.settings);
    }
    return msd;
  }

  get enabled(): boolean {
    return this.settings.enabled;
  }

  /** The storage folder (lent whole as the partition drive). */
  get root(): string {
    return this.storage.root;
  }

  getState(): MsdState {
    const enabled = this.settings.enabled;
    const images: Record<string, MsdImageInfo> = {};
    for (const img of this.images.values()) images[img.name] = imageInfo(img);
    const t = this.transfer;
    return {
      enabled,
      online: enabled && this.opts.driver.getState().online,
      busy: this.region.busy || this.transfers.busy,
      storage: {
        images: sortImagesNewestFirst(images),
        parts: {
          '': { size: this.space.size, free: this.space.free, writable: this.space.writable },
        },
        // shown once the name is known and its file exists
        downloading:
          t?.kind === 'download' && t.writer
            ? { name: t.name, size: t.size, readed: t.writer.written }
            : null,
        uploading:
          t?.kind === 'upload' && t.writer
            ? { name: t.name, size: t.size, written: t.writer.written }
            : null,
      },
      drive: this.drive(),
      drive_partition: this.drivePartition(),
    };
  }

  /** Re-reads the folder and its free space (a shell may have changed it); sends what changed. */
  async refresh(): Promise<void> {
    const [images, space] = await Promise.all([this.storage.scan(), this.storage.space()]);
    this.images = images;
    this.space = space;
    this.publish();
  }

  /** Full state for a new event-socket client. */
  async snapshot(): Promise<MsdState> {
    await this.refresh().catch((err: unknown) =>
      this.log?.warn({ err: (err as Error).message }, 'msd: storage scan failed'),
    );
    return this.getState();
  }

  assertEnabled(): void {
    if (!this.settings.enabled) throw new MsdDisabledError();
  }

  // ---- the drive ----

  /** `set_params`: only while disconnected. cdrom=true forces rw=false; rw=true forces flash. */
  async setParams(p: { image?: string; cdrom?: boolean; rw?: boolean }): Promise<void> {
    this.assertEnabled();
    await this.region.enter(async () => {
      if (this.connected) throw new MsdConnectedError();
      const next = { ...this.settings };
      if (p.image !== undefined) {
        if (p.image === '') next.image = null;
        else {
          const img = await this.storage.get(p.image);
          if (!img) throw new MsdUnknownImageError();
          if (!img.complete || this.transfer?.name === p.image) {
            throw new MsdUnknownImageError('The image is not complete');
          }
          next.image = p.image;
        }
      }
      if (p.rw !== undefined) {
        next.rw = p.rw;
        if (p.rw) next.cdrom = false;
      }
      if (p.cdrom !== undefined) {
        next.cdrom = p.cdrom;
        if (p.cdrom) next.rw = false;
      }
      await this.saveSettings(next);
    });
    await this.refresh();
  }

  async setConnected(connected: boolean): Promise<void> {
    this.assertEnabled();
    await this.region.enter(() => (connected ? this.connectImage() : this.disconnectImage()));
  }

  // ---- GL's partition drive: the storage folder itself ----

  async partitionConnect(): Promise<void> {
    this.assertEnabled();
    await this.region.enter(() =>
      this.transfers.enter(async () => {
        if (this.partitionConnected) {
          throw new MsdConnectedError('The storage is connected already');
        }
        if (!this.opts.driver.getState().online) throw new MsdOfflineError();
        // The drive lends the folder whole, and QEMU's vvfat follows links.
        const link = await this.storage.findLink();
        if (link !== null) throw new MsdStorageLinkError(link);
        try {
          await this.opts.driver.connectPartition(this.storage.root);
        } catch (err) {
          throw new MsdConnectError((err as Error).message);
        }
        this.partitionConnected = true;
      }),
    );
  }

  async partitionDisconnect(): Promise<void> {
    this.assertEnabled();
    await this.region.enter(async () => {
      if (!this.partitionConnected) {
        throw new MsdDisconnectedError('The storage is not connected');
      }
      try {
        await this.opts.driver.disconnectPartition();
      } catch (err) {
        throw new MsdDisconnectError((err as Error).message);
      }
      this.partitionConnected = false;
    });
  }

  /** Removes every image: refused while anything is lent or moving. */
  async partitionFormat(): Promise<void> {
    this.assertEnabled();
    await this.region.enter(() =>
      this.transfers.enter(async () => {
        if (this.connected || this.partitionConnected) {
          throw new MsdConnectedError('Disconnect the drive and the storage before formatting');
        }
        try {
          await this.storage.format();
          if (this.settings.image !== null) {
            await this.saveSettings({ ...this.settings, image: null });
          }
          this.log?.info({}, 'msd: storage formatted');
        } finally {
          await this.refresh();
        }
      }),
    );
  }

  async partitionShow(): Promise<MsdPartitionShow> {
    this.assertEnabled();
    const space = await this.storage.space();
    const root = this.storage.root;
    return {
      devices: {
        [root]: {
          path: root,
          size: space.size,
          free: space.free,
          uuid: '',
          filesystem: space.filesystem,
          label: MSD_PARTITION_LABEL,
          is_current: true,
        },
      },
    };
  }

  // ---- storage ----

  async remove(name: string): Promise<void> {
    this.assertEnabled();
    await this.region.enter(async () => {
      if (this.partitionConnected) {
        throw new MsdConnectedError('The storage is connected to the remote computer');
      }
      const release = this.claim(name);
      try {
        const img = await this.storage.get(name);
        if (!img) throw new MsdUnknownImageError();
        if (this.settings.image === name && this.connected) throw new MsdImageInUseError();
        try {
          await this.storage.remove(name);
        } catch (err) {
          // gone or turned into a link since get(): not an image of the storage
          if (err instanceof StorageLinkError || isErrno(err, 'ENOENT')) {
            throw new MsdUnknownImageError();
          }
          throw err;
        }
        if (this.settings.image === name) {
          await this.saveSettings({ ...this.settings, image: null });
        }
        this.log?.info({ image: name }, 'msd: image removed');
      } finally {
        release();
      }
    });
    await this.refresh();
  }

  /**
   * `write`: streams `body` (exactly `size` bytes) into a new image. Every check comes before
   * the first byte is read; the answer comes after the image is on disk.
   */
  async upload(p: {
    name: string;
    size: number;
    body: Readable;
    removeIncomplete: boolean;
  }): Promise<MsdWriteResult> {
    this.assertEnabled();
    return this.transfers.enter(async () => {
      const t = this.beginTransfer('upload', p.name, p.size);
      try {
        t.release = this.claim(p.name);
        await this.prepareImage(p.name, p.size, p.removeIncomplete);
        t.writer = await this.createWriter(p.name, p.size);
        this.publish();
        await pump(p.body, t.writer.sink, this.opts.uploadIdleMs ?? UPLOAD_IDLE_MS, t.signal);
        await this.finishWriter(t.writer);
        this.log?.info({ image: p.name, size: p.size }, 'msd: image uploaded');
        return writeResult(p.name, p.size, t.writer.written);
      } catch (err) {
        throw await this.failTransfer(t, err, p.removeIncomplete);
      } finally {
        await this.endTransfer(t);
      }
    });
  }

  /**
   * `write_remote` up to the moment the stream may begin: the remote answered with a size,
   * the name is free and fits. Throws the pre-stream errors (plain JSON answers). The returned
   * job then copies the body; its `done` settles at the end. The transfer region is held from
   * the call to `done`.
   */
  startDownload(p: DownloadRequest): Promise<DownloadJob> {
    this.assertEnabled();
    return new Promise<DownloadJob>((resolveJob, rejectJob) => {
      let job: DownloadJob | null = null;
      let finished!: (err?: Error) => void;
      const done = new Promise<void>((resolve, reject) => {
        finished = (err) => (err ? reject(err) : resolve());
      });
      // the route handles `done`; this one only keeps Node from calling it unhandled
      done.catch(() => undefined);
      this.transfers
        .enter(async () => {
          const t = this.beginTransfer('download', '', 0);
          const onCallerGone = (): void =>
            t.abort(new MsdTransferAbortedError('The download was cancelled: its caller left'));
          if (p.signal?.aborted) onCallerGone();
          p.signal?.addEventListener('abort', onCallerGone, { once: true });
          let remote: RemoteBody | null = null;
          t.signal.addEventListener('abort', () => remote?.body.destroy(t.stopped ?? undefined), {
            once: true,
          });
          try {
            let writer: ImageWriter;
            try {
              remote = await openRemote(p.url, {
                insecure: p.insecure,
                timeoutMs: p.timeoutMs,
                signal: t.signal,
                policy: this.opts.remote,
              });
              const suggested =
                baseOfSuggestedName(remote.filename ?? '') || filenameFromUrl(remote.url);
              // a remote's name (often decomposed by macOS) is normalized, not refused
              const name = p.nameOf(
                p.image || baseOfSuggestedName(suggested).normalize('NFC'),
                p.prefix,
              );
              t.name = name;
              t.size = remote.size;
              t.release = this.claim(name);
              await this.prepareImage(name, remote.size, p.removeIncomplete);
              writer = await this.createWriter(name, remote.size);
              t.writer = writer;
            } catch (err) {
              remote?.abort();
              throw await this.failTransfer(t, err, p.removeIncomplete);
            }
            this.publish();
            job = {
              name: writer.name,
              size: writer.size,
              written: () => writer.written,
              done,
              cancel: () => t.abort(new MsdTransferAbortedError('The download was cancelled')),
            };
            resolveJob(job);
            try {
              await pump(remote.body, writer.sink, 0, t.signal);
              if (writer.written !== writer.size) {
                throw new MsdRemoteError('ClientPayloadError', 'Response payload is not completed');
              }
              await this.finishWriter(writer);
              this.log?.info({ image: writer.name, size: writer.size }, 'msd: image downloaded');
            } catch (err) {
              remote.abort();
              throw await this.failTransfer(t, err, p.removeIncomplete);
            }
          } finally {
            p.signal?.removeEventListener('abort', onCallerGone);
            await this.endTransfer(t);
          }
        })
        .then(
          () => finished(),
          (err: Error) => (job ? finished(err) : rejectJob(err)),
        );
    });
  }

  // ---- the rest ----

  /**
   * `reset`: stops a transfer (its client gets MsdTransferAbortedError), waits for it and for a
   * running plug to end, then unplugs everything. Other verbs are busy until it is done.
   */
  async reset(): Promise<void> {
    this.assertEnabled();
    const t = this.transfer;
    t?.abort(new MsdTransferAbortedError(`The ${t.kind} was stopped by a reset`));
    await this.transfers.enterAfter(() =>
      this.region.enterAfter(async () => {
        const driver = this.opts.driver;
        await driver.disconnectImage().catch((err: unknown) => {
          this.log?.warn({ err: (err as Error).message }, 'msd reset: disconnect failed');
        });
        await driver.disconnectPartition().catch((err: unknown) => {
          this.log?.warn({ err: (err as Error).message }, 'msd reset: storage disconnect failed');
        });
        this.connected = false;
        this.partitionConnected = false;
      }),
    );
    await this.refresh();
  }

  /** Saves `enabled`; a change restarts the device (SPEC 4: enabling or disabling reboots). */
  async setEnabled(enabled: boolean): Promise<void> {
    if (enabled === this.settings.enabled) return;
    await this.saveSettings({ ...this.settings, enabled });
    this.log?.info({ enabled }, 'msd: enabled changed, restarting');
    this.opts.requestRestart?.();
  }

  dispose(): void {
    this.offDriver();
    this.transfer?.abort(new MsdTransferAbortedError('The server is stopping', 503));
    this.stopTicker();
  }

  // ---- internals ----

  private drive(): MsdDrive {
    const name = this.settings.image;
    const img = name !== null ? this.images.get(name) : undefined;
    return {
      image: img ? { name: img.name, in_storage: true, ...imageInfo(img) } : null,
      connected: this.connected,
      cdrom: this.settings.cdrom,
      rw: !this.settings.cdrom && this.settings.rw,
    };
  }

  private drivePartition(): MsdDrivePartition {
    // Lent read-only (QEMU: a read-only vvfat node), so rw is false where GL shows true.
    return { image: null, connected: this.partitionConnected, cdrom: false, rw: false };
  }

  /** set_connected=1, inside the region. */
  private async connectImage(): Promise<void> {
    if (this.connected) throw new MsdConnectedError();
    const name = this.settings.image;
    if (name === null) throw new MsdImageNotSelected();
    if (!this.opts.driver.getState().online) throw new MsdOfflineError();
    const img = await this.storage.get(name);
    if (!img) throw new MsdUnknownImageError();
    if (!img.complete) throw new MsdUnknownImageError('The image is not complete');
    let path: string;
    try {
      // a regular file reached without a link: the driver opens the path itself
      path = await this.storage.realFile(name);
    } catch (err) {
      if (err instanceof StorageLinkError || isErrno(err, 'ENOENT')) {
        throw new MsdUnknownImageError();
      }
      throw err;
    }
    const { cdrom, rw } = this.settings;
    try {
      await this.opts.driver.connectImage({ path, cdrom, rw: !cdrom && rw });
    } catch (err) {
      this.log?.warn({ err: (err as Error).message, image: name, cdrom }, 'msd: connect failed');
      throw new MsdConnectError((err as Error).message);
    }
    this.connected = true;
    this.log?.info({ image: name, cdrom, rw: !cdrom && rw }, 'msd: image connected');
  }

  /** set_connected=0, inside the region. */
  private async disconnectImage(): Promise<void> {
    if (!this.connected) throw new MsdDisconnectedError();
    try {
      await this.opts.driver.disconnectImage();
    } catch (err) {
      throw new MsdDisconnectError((err as Error).message);
    }
    this.connected = false;
  }

  /** Reserves `name` for a write or a remove; the returned function frees it. */
  private claim(name: string): () => void {
    if (this.claimed.has(name)) throw new MsdIsBusyError();
    this.claimed.add(name);
    let released = false;
    return () => {
      if (!released) this.claimed.delete(name);
      released = true;
    };
  }

  private async saveSettings(next: MsdSettings): Promise<void> {
    await this.file.save(next);
    this.settings = next;
  }

  /** Inside `transfers`: the state shows the transfer from here. */
  private beginTransfer(kind: Transfer['kind'], name: string, size: number): Transfer {
    if (this.partitionConnected) {
      throw new MsdConnectedError('The storage is connected to the remote computer');
    }
    const aborter = new AbortController();
    const t: Transfer = {
      kind,
      name,
      size,
      writer: null,
      stopped: null,
      signal: aborter.signal,
      release: () => undefined,
      abort: (reason) => {
        t.stopped ??= reason;
        aborter.abort(reason);
      },
    };
    this.transfer = t;
    this.startTicker();
    return t;
  }

  private async endTransfer(t: Transfer): Promise<void> {
    t.release();
    if (this.transfer !== t) return;
    this.transfer = null;
    this.stopTicker();
    await this.refresh().catch((err: unknown) =>
      this.log?.warn({ err: (err as Error).message }, 'msd: storage scan failed'),
    );
  }

  /** The name is free (an incomplete image of it goes with remove_incomplete) and fits. */
  private async prepareImage(name: string, size: number, removeIncomplete: boolean): Promise<void> {
    const existing = await this.storage.get(name);
    if (existing) {
      const inUse = this.settings.image === name && this.connected;
      if (existing.complete || !removeIncomplete || inUse) throw new MsdImageExistsError();
      await this.storage.remove(name).catch((err: unknown) => {
        if (!isErrno(err, 'ENOENT')) throw err;
      });
    }
    const space = await this.storage.space();
    this.space = space;
    if (size > space.free) {
      throw new MsdNoSpaceError(
        `The storage space is insufficient: the image needs ${size} bytes, ${space.free} are free`,
      );
    }
  }

  private async createWriter(name: string, size: number): Promise<ImageWriter> {
    try {
      return await this.storage.createWriter(name, size);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EEXIST' || code === 'EISDIR') throw new MsdImageExistsError();
      if (code === 'ENOTDIR') {
        throw new ValidatorError(`A folder of the name '${name}' is an image, not a folder`);
      }
      if (code === 'EXDEV') {
        throw new ValidatorError(
          `The image name '${name}' goes through a symbolic link in the storage: refused`,
        );
      }
      if (code === 'ENAMETOOLONG') throw new ValidatorError(`The image name '${name}' is too long`);
      if (code === 'ENOSPC' || code === 'EDQUOT') throw new MsdNoSpaceError();
      throw err;
    }
  }

  private async finishWriter(writer: ImageWriter): Promise<void> {
    if (writer.written !== writer.size) {
      throw new SourceClosedError(`Only ${writer.written} of ${writer.size} bytes arrived`);
    }
    await writer.commit();
  }

  /**
   * Ends a failed transfer's file: removed when the disk filled up or with remove_incomplete,
   * else left incomplete (marker kept). Returns the error to report.
   */
  private async failTransfer(
    t: Transfer,
    error: unknown,
    removeIncomplete: boolean,
  ): Promise<Error> {
    const err = t.stopped ?? error;
    const full = isNoSpace(err);
    if (t.writer) {
      await t.writer.abandon(full || removeIncomplete);
      this.log?.warn(
        {
          image: t.name,
          written: t.writer.written,
          size: t.size,
          err: (err as Error).message,
          removed: full || removeIncomplete,
        },
        `msd: ${t.kind} failed`,
      );
    }
    // An ApiError says what happened (MsdNoSpaceError before a byte was written included).
    if (err instanceof ApiError) return err;
    if (full) return new MsdNoSpaceError('The storage filled up while writing the image');
    // the disk failed, not the client or the remote: say so (500, logged as an error)
    if (err instanceof StorageWriteError) {
      return new MsdStorageError(err.message);
    }
    if (
      t.kind === 'upload' &&
      (err instanceof SourceClosedError || err instanceof SourceIdleError)
    ) {
      return new ApiError('ClientPayloadError', 400, `The upload ended early: ${err.message}`);
    }
    if (t.kind === 'download' && t.writer) {
      const e = err as Error;
      if (e instanceof MsdRemoteError) return e;
      return new MsdRemoteError(
        'ClientPayloadError',
        `Response payload is not completed${e?.message ? ` (${e.message})` : ''}`,
      );
    }
    return err as Error;
  }

  private startTicker(): void {
    this.stopTicker();
    this.ticker = setInterval(() => {
      // free space shrinks as the image grows
      this.storage.space().then(
        (space) => {
          this.space = space;
          this.publish();
        },
        () => this.publish(),
      );
    }, this.opts.progressIntervalMs ?? 250);
    this.ticker.unref();
  }

  private stopTicker(): void {
    if (this.ticker) clearInterval(this.ticker);
    this.ticker = null;
  }

  /**
   * Sends what changed since the last event: the full state first and whenever `online` flips,
   * else only the changed keys (wire-protocol.md 2.6).
   */
  private publish(): void {
    const state = this.getState();
    const parts = new Map<string, string>();
    for (const k of TOP_KEYS) parts.set(k, JSON.stringify(state[k]));
    for (const k of STORAGE_KEYS) parts.set(`storage.${k}`, JSON.stringify(state.storage[k]));
    parts.set('enabled', JSON.stringify(state.enabled));
    const previous = this.sent;
    this.sent = parts;
    if (
      previous === null ||
      this.sentOnline !== state.online ||
      parts.get('enabled') !== previous.get('enabled')
    ) {
      this.sentOnline = state.online;
      this.emit('state', state);
      return;
    }
    const partial: MsdStatePartial = {};
    for (const k of TOP_KEYS) {
      if (parts.get(k) !== previous.get(k)) (partial as Record<string, unknown>)[k] = state[k];
    }
    for (const k of STORAGE_KEYS) {
      if (parts.get(`storage.${k}`) !== previous.get(`storage.${k}`)) {
        partial.storage ??= {};
        (partial.storage as Record<string, unknown>)[k] = state.storage[k];
      }
    }
    if (Object.keys(partial).length > 0) this.emit('state', partial);
  }
}

function imageInfo(img: StoredImage): MsdImageInfo {
  return { complete: img.complete, removable: true, size: img.size, mod_ts: img.modTs };
}

function isErrno(err: unknown, code: string): boolean {
  return (err as NodeJS.ErrnoException)?.code === code;
}

function isNoSpace(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT' || err instanceof MsdNoSpaceError;
}

/**
 * Pipes `source` into `sink` with backpressure. Unlike stream.pipeline, a failing sink does not
 * destroy the source: for an upload the source is the request, and destroying it would close
 * the socket before the 507 answer could go out.
 */
function pump(source: Readable, sink: Writable, idleMs = 0, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    let settled = false;
    let lastData = Date.now();
    const onData = (): void => {
      lastData = Date.now();
    };
    // A client that stops sending would hold the transfer region for ever.
    const idle = idleMs
      ? setInterval(
          () => {
            if (Date.now() - lastData > idleMs) settle(new SourceIdleError(idleMs));
          },
          Math.min(idleMs, 5000),
        )
      : null;
    idle?.unref();
    if (idle) source.on('data', onData);
    const settle = (err?: Error): void => {
      if (settled) return;
      settled = true;
      if (idle) clearInterval(idle);
      source.off('data', onData);
      source.off('error', onSourceError);
      source.off('aborted', onAborted);
      source.off('close', onClose);
      sink.off('error', onSinkError);
      sink.off('finish', onFinish);
      signal?.removeEventListener('abort', onAbort);
      if (err) {
        source.unpipe(sink);
        source.pause();
        sink.destroy();
        reject(err);
      } else resolve();
    };
    const onSourceError = (err: Error): void => settle(err);
    const onSinkError = (err: Error): void => settle(new StorageWriteError(err));
    const onAborted = (): void => settle(new SourceClosedError());
    const onClose = (): void => {
      if (!source.readableEnded) settle(new SourceClosedError());
    };
    const onFinish = (): void => settle();
    // Stopped by the service (reset): the source stays open so the answer can still go out.
    const onAbort = (): void => settle(signal?.reason as Error);
    if (signal?.aborted) {
      settle(signal.reason as Error);
      return;
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    source.on('error', onSourceError);
    source.on('aborted', onAborted);
    source.on('close', onClose);
    sink.on('error', onSinkError);
    sink.on('finish', onFinish);
    if (source.destroyed) {
      settle(new SourceClosedError());
      return;
    }
    source.pipe(sink);
  });
}

/**
 * Virtual media (SPEC 4 "Virtual media", wire-protocol.md 1.6 and 2.6): the drive's selection
 * (image, CD-ROM or flash, rw), lending it through the driver, GL's storage "partition" drive,
 * and the `msd` state and events. The image folder is storage.ts, uploads and downloads are
 * transfers.ts, the HTTP side is routes/msd.ts.
 *
 * Every verb that touches the drive or the storage runs inside the subsystem's exclusive
 * region (msd-region.ts: which verb holds which part). An image can be mounted while another
 * one uploads; `reset` stops the transfer, then runs after whatever holds the region.
 *
 * The verbs do not check `enabled`: the routes refuse every verb while MSD is disabled, once,
 * through `requireEnabled()` (routes/msd.ts).
 *
 * Persisted in `<data_dir>/msd/state.json`: enabled, and the selection (image, cdrom, rw). What
 * is connected is not: a restarted server lends nothing until asked.
 */
import { EventEmitter } from 'node:events';
import { join } from 'node:path';
import type { ReadStream } from 'node:fs';
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
import type { MsdDriver } from '../../drivers/msd/types';
import type { Logger } from '../../log';
import { JsonFile } from '../../storage/json-store';
import type { StateProvider } from '../../ws/state-registry';
import {
  MsdConnectError,
  MsdConnectedError,
  MsdDisabledError,
  MsdDisconnectError,
  MsdDisconnectedError,
  MsdImageInUseError,
  MsdImageNotSelected,
  MsdOfflineError,
  MsdStorageLinkError,
  MsdTransferAbortedError,
  MsdUnknownImageError,
} from './msd-errors';
import { MsdRegion } from './msd-region';
import type { RemotePolicy } from './remote';
import {
  ImageStorage,
  StorageLinkError,
  isErrno,
  type StorageSpace,
  type StoredImage,
} from './storage';
import {
  Transfers,
  downloadJob,
  type DownloadJob,
  type DownloadRequest,
  type UploadRequest,
} from './transfers';

export interface MsdServiceOptions {
  dataDir: string;
  driver: MsdDriver;
  log?: Logger;
  /** Called after set_enabled saved a change: the device restarts to apply it (SPEC 4). */
  requestRestart?: () => void;
  /** Progress updates of the `msd` state, ms (at most ~4 per second; tests go faster). */
  progressIntervalMs?: number;
  /** An upload that sends nothing for this long ends; default UPLOAD_IDLE_MS (120 s). */
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

/** A complete image opened for `read`. */
export interface ImageRead {
  size: number;
  body: ReadStream;
}

/** The keys of a partial `msd` event (wire-protocol.md 2.6). */
const TOP_KEYS = ['busy', 'drive', 'drive_partition'] as const;
const STORAGE_KEYS = ['images', 'parts', 'downloading', 'uploading'] as const;

export class MsdService extends EventEmitter<{ state: [MsdState | MsdStatePartial] }> {
  private images = new Map<string, StoredImage>();
  private space: StorageSpace = { size: 0, free: 0, writable: false, filesystem: '' };
  private connected = false;
  private partitionConnected = false;
  private readonly region = new MsdRegion();
  private readonly transfers: Transfers;
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
    this.transfers = new Transfers({
      storage,
      region: this.region,
      log: opts.log,
      progressIntervalMs: opts.progressIntervalMs,
      uploadIdleMs: opts.uploadIdleMs,
      remote: opts.remote,
      host: {
        inUse: (name) => this.settings.image === name && this.connected,
        storageLent: () => this.partitionConnected,
        changed: (space) => {
          if (space) this.space = space;
          this.publish();
        },
        ended: () =>
          this.refresh().catch((err: unknown) =>
            this.log?.warn({ err: (err as Error).message }, 'msd: storage scan failed'),
          ),
      },
    });
    this.offDriver = opts.driver.onState(() => this.publish());
    this.region.onChange(() => this.publish());
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

  /** Every verb but the state and set_enabled is refused while MSD is disabled. */
  requireEnabled(): void {
    if (!this.settings.enabled) throw new MsdDisabledError();
  }

  /** The storage folder (lent whole as the partition drive). */
  get root(): string {
    return this.storage.root;
  }

  getState(): MsdState {
    const enabled = this.settings.enabled;
    const images: Record<string, MsdImageInfo> = {};
    for (const img of this.images.values()) images[img.name] = imageInfo(img);
    return {
      enabled,
      online: enabled && this.opts.driver.getState().online,
      busy: this.region.busy,
      storage: {
        images: sortImagesNewestFirst(images),
        parts: {
          '': { size: this.space.size, free: this.space.free, writable: this.space.writable },
        },
        // shown once the name is known and its file exists
        ...this.transfers.progress(),
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

  /** The `msd` events of `/api/ws`: the full state first, then what changed. */
  provider(): StateProvider {
    return {
      name: 'msd',
      snapshot: async () => [{ event_type: 'msd', event: await this.snapshot() }],
      subscribe: (emit) => {
        const on = (state: MsdState | MsdStatePartial): void =>
          emit({ event_type: 'msd', event: state });
        this.on('state', on);
        return () => this.off('state', on);
      },
    };
  }

  // ---- the drive ----

  /** `set_params`: only while disconnected. cdrom=true forces rw=false; rw=true forces flash. */
  async setParams(p: { image?: string; cdrom?: boolean; rw?: boolean }): Promise<void> {
    await this.region.enterDrive(async () => {
      if (this.connected) throw new MsdConnectedError();
      const next = { ...this.settings };
      if (p.image !== undefined) {
        if (p.image === '') next.image = null;
        else {
          const img = await this.storage.get(p.image);
          if (!img) throw new MsdUnknownImageError();
          if (!img.complete || this.transfers.writing === p.image) {
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
    await this.region.enterDrive(() => (connected ? this.connectImage() : this.disconnectImage()));
  }

  // ---- GL's partition drive: the storage folder itself ----

  async partitionConnect(): Promise<void> {
    await this.region.enterBoth(async () => {
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
    });
  }

  async partitionDisconnect(): Promise<void> {
    await this.region.enterDrive(async () => {
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
    await this.region.enterBoth(async () => {
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
    });
  }

  async partitionShow(): Promise<MsdPartitionShow> {
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

  // ---- the storage ----

  async remove(name: string): Promise<void> {
    await this.region.enterDrive(async () => {
      if (this.partitionConnected) {
        throw new MsdConnectedError('The storage is connected to the remote computer');
      }
      const release = this.region.claim(name);
      try {
        const img = await this.storage.get(name);
        if (!img) throw new MsdUnknownImageError();
        if (this.settings.image === name && this.connected) throw new MsdImageInUseError();
        try {
          await this.storage.remove(name);
        } catch (err) {
          throw unknownIfGone(err);
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

  /** `read`: a complete image's bytes (no region: reading never changes the storage). */
  async read(name: string): Promise<ImageRead> {
    await this.refresh();
    const img = this.images.get(name);
    if (!img?.complete) throw new MsdUnknownImageError();
    try {
      return { size: img.size, body: await this.storage.readStream(name) };
    } catch (err) {
      throw unknownIfGone(err);
    }
  }

  /**
   * `write`: streams `body` (exactly `size` bytes) into a new image. Every check comes before
   * the first byte is read; the answer comes after the image is on disk.
   */
  upload(p: UploadRequest): Promise<MsdWriteResult> {
    return this.region.enterTransfer(() => this.transfers.upload(p));
  }

  /**
   * `write_remote` up to the moment the stream may begin: the remote answered with a size,
   * the name is free and fits. Throws the pre-stream errors (plain JSON answers). The returned
   * job then copies the body; its `done` settles at the end. The transfer part of the region
   * is held from the call to `done`.
   */
  startDownload(p: DownloadRequest): Promise<DownloadJob> {
    return downloadJob((started) =>
      this.region.enterTransfer(() => this.transfers.download(p, started)),
    );
  }

  // ---- the rest ----

  /**
   * `reset`: stops a transfer (its client gets MsdTransferAbortedError), waits for it and for a
   * running plug to end, then unplugs everything. Other verbs are busy until it is done.
   */
  async reset(): Promise<void> {
    this.transfers.stop(
      (kind) => new MsdTransferAbortedError(`The ${kind} was stopped by a reset`),
    );
    await this.region.enterAfterAll(async () => {
      const driver = this.opts.driver;
      await driver.disconnectImage().catch((err: unknown) => {
        this.log?.warn({ err: (err as Error).message }, 'msd reset: disconnect failed');
      });
      await driver.disconnectPartition().catch((err: unknown) => {
        this.log?.warn({ err: (err as Error).message }, 'msd reset: storage disconnect failed');
      });
      this.connected = false;
      this.partitionConnected = false;
    });
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
    this.transfers.dispose();
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
      throw unknownIfGone(err);
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

  private async saveSettings(next: MsdSettings): Promise<void> {
    await this.file.save(next);
    this.settings = next;
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
  return {
    complete: img.complete,
    removable: true,
    // kvmd 4.2xx: a disc image (`.iso`) is read-only; every other uploaded image is writable.
    writable: !img.name.toLowerCase().endsWith('.iso'),
    size: img.size,
    mod_ts: img.modTs,
  };
}

/** A name gone, or turned into a link, since it was looked up: not an image of the storage. */
function unknownIfGone(err: unknown): unknown {
  return err instanceof StorageLinkError || isErrno(err, 'ENOENT')
    ? new MsdUnknownImageError()
    : err;
}

/**
 * Virtual media (SPEC 4 "Virtual media", wire-protocol.md 1.6 and 2.6): the image storage, the
 * drive's selection (image, CD-ROM or flash, rw), lending it through the driver, GL's storage
 * "partition" drive, uploads and downloads with progress, and the `msd` state and events.
 *
 * Regions (what refuses with MsdIsBusyError, 409):
 * - one transfer (upload or download) at a time;
 * - one plug or unplug of the driver at a time.
 * They are independent: an image can be mounted while another one uploads. `busy` in the
 * state is true while either runs (kvmd shows busy during a write too).
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
  MsdUnknownImageError,
} from './msd-errors';
import { baseOfSuggestedName, filenameFromUrl, openRemote, type RemoteBody } from './remote';
import { ImageStorage, type ImageWriter, type StorageSpace, type StoredImage } from './storage';

interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
}

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

/** A transfer cut by the client, by `reset`, or by the service's dispose. */
export class MsdTransferAborted extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'MsdTransferAborted';
  }
}

interface Transfer {
  kind: 'upload' | 'download';
  name: string;
  size: number;
  writer: ImageWriter | null;
  /** Why the service stopped it (cancel, reset), if it did. */
  stopped: Error | null;
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
  constructor() {
    super('The connection closed before the last byte');
    this.name = 'SourceClosedError';
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
  /** A plug or unplug is running. */
  private plugging = false;
  private transfer: Transfer | null = null;
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
      busy: this.plugging || t !== null,
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
    if (this.plugging) throw new MsdIsBusyError();
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
    // a connect may have begun while the image was looked up
    if (this.connected || this.plugging) throw new MsdConnectedError();
    await this.saveSettings(next);
    await this.refresh();
  }

  async setConnected(connected: boolean): Promise<void> {
    this.assertEnabled();
    if (this.plugging) throw new MsdIsBusyError();
    if (!connected) {
      if (!this.connected) throw new MsdDisconnectedError();
      await this.plug(async () => {
        try {
          await this.opts.driver.disconnectImage();
        } catch (err) {
          throw new MsdDisconnectError((err as Error).message);
        }
        this.connected = false;
      });
      return;
    }
    if (this.connected) throw new MsdConnectedError();
    const name = this.settings.image;
    if (name === null) throw new MsdImageNotSelected();
    if (!this.opts.driver.getState().online) throw new MsdOfflineError();
    await this.plug(async () => {
      const img = await this.storage.get(name);
      if (!img) throw new MsdUnknownImageError();
      if (!img.complete) throw new MsdUnknownImageError('The image is not complete');
      const { cdrom, rw } = this.settings;
      try {
        await this.opts.driver.connectImage({
          path: this.storage.pathOf(name),
          cdrom,
          rw: !cdrom && rw,
        });
      } catch (err) {
        this.log?.warn({ err: (err as Error).message, image: name, cdrom }, 'msd: connect failed');
        throw new MsdConnectError((err as Error).message);
      }
      this.connected = true;
      this.log?.info({ image: name, cdrom, rw: !cdrom && rw }, 'msd: image connected');
    });
  }

  // ---- GL's partition drive: the storage folder itself ----

  async partitionConnect(): Promise<void> {
    this.assertEnabled();
    if (this.plugging || this.transfer) throw new MsdIsBusyError();
    if (this.partitionConnected) throw new MsdConnectedError('The storage is connected already');
    if (!this.opts.driver.getState().online) throw new MsdOfflineError();
    await this.plug(async () => {
      try {
        await this.opts.driver.connectPartition(this.storage.root);
      } catch (err) {
        throw new MsdConnectError((err as Error).message);
      }
      this.partitionConnected = true;
    });
  }

  async partitionDisconnect(): Promise<void> {
    this.assertEnabled();
    if (this.plugging) throw new MsdIsBusyError();
    if (!this.partitionConnected) {
      throw new MsdDisconnectedError('The storage is not connected');
    }
    await this.plug(async () => {
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
    if (this.plugging || this.transfer) throw new MsdIsBusyError();
    if (this.connected || this.partitionConnected) {
      throw new MsdConnectedError('Disconnect the drive and the storage before formatting');
    }
    this.plugging = true;
    this.publish();
    try {
      await this.storage.format();
      if (this.settings.image !== null) await this.saveSettings({ ...this.settings, image: null });
      this.log?.info({}, 'msd: storage formatted');
    } finally {
      this.plugging = false;
      await this.refresh();
    }
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
    if (this.transfer?.name === name) throw new MsdIsBusyError();
    if (this.partitionConnected) {
      throw new MsdConnectedError('The storage is connected to the remote computer');
    }
    const img = await this.storage.get(name);
    if (!img) throw new MsdUnknownImageError();
    if (this.settings.image === name && (this.connected || this.plugging)) {
      throw new MsdImageInUseError();
    }
    await this.storage.remove(name);
    if (this.settings.image === name) await this.saveSettings({ ...this.settings, image: null });
    this.log?.info({ image: name }, 'msd: image removed');
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
    const t = this.beginTransfer('upload', p.name, p.size, (reason) => p.body.destroy(reason));
    try {
      await this.prepareImage(p.name, p.size, p.removeIncomplete);
      t.writer = await this.createWriter(p.name, p.size);
      this.publish();
      await pump(p.body, t.writer.sink, this.opts.uploadIdleMs ?? UPLOAD_IDLE_MS);
      await this.finishWriter(t.writer);
      this.log?.info({ image: p.name, size: p.size }, 'msd: image uploaded');
      return writeResult(p.name, p.size, t.writer.written);
    } catch (err) {
      throw await this.failTransfer(t, err, p.removeIncomplete);
    } finally {
      await this.endTransfer(t);
    }
  }

  /**
   * `write_remote` up to the moment the stream may begin: the remote answered with a size,
   * the name is free and fits. Throws the pre-stream errors (plain JSON answers). The returned
   * job then copies the body; its `done` settles at the end.
   */
  async startDownload(p: DownloadRequest): Promise<DownloadJob> {
    const aborter = new AbortController();
    let remote: RemoteBody | null = null;
    const t = this.beginTransfer('download', '', 0, (reason) => {
      aborter.abort(reason);
      remote?.body.destroy(reason);
    });
    try {
      remote = await openRemote(p.url, {
        insecure: p.insecure,
        timeoutMs: p.timeoutMs,
        signal: aborter.signal,
      });
      const suggested = baseOfSuggestedName(remote.filename ?? '') || filenameFromUrl(remote.url);
      const name = p.nameOf(p.image || baseOfSuggestedName(suggested), p.prefix);
      t.name = name;
      t.size = remote.size;
      await this.prepareImage(name, remote.size, p.removeIncomplete);
      t.writer = await this.createWriter(name, remote.size);
    } catch (err) {
      remote?.abort();
      const failure = await this.failTransfer(t, err, p.removeIncomplete);
      await this.endTransfer(t);
      throw failure;
    }
    this.publish();
    const writer = t.writer;
    const body = remote.body;
    const done = (async () => {
      try {
        await pump(body, writer.sink);
        if (writer.written !== writer.size) {
          throw new MsdRemoteError('ClientPayloadError', 'Response payload is not completed');
        }
        await this.finishWriter(writer);
        this.log?.info({ image: writer.name, size: writer.size }, 'msd: image downloaded');
      } catch (err) {
        remote?.abort();
        throw await this.failTransfer(t, err, p.removeIncomplete);
      } finally {
        await this.endTransfer(t);
      }
    })();
    return {
      name: writer.name,
      size: writer.size,
      written: () => writer.written,
      done,
      cancel: () => t.abort(new MsdTransferAborted('The download was cancelled')),
    };
  }

  // ---- the rest ----

  /** `reset`: unplugs everything, stops a transfer, clears busy. */
  async reset(): Promise<void> {
    this.assertEnabled();
    this.transfer?.abort(new MsdTransferAborted('MSD reset'));
    const driver = this.opts.driver;
    await driver.disconnectImage().catch((err: unknown) => {
      this.log?.warn({ err: (err as Error).message }, 'msd reset: disconnect failed');
    });
    await driver.disconnectPartition().catch((err: unknown) => {
      this.log?.warn({ err: (err as Error).message }, 'msd reset: storage disconnect failed');
    });
    this.connected = false;
    this.partitionConnected = false;
    this.plugging = false;
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
    this.transfer?.abort(new MsdTransferAborted('The server is stopping'));
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

  private async plug(fn: () => Promise<void>): Promise<void> {
    this.plugging = true;
    this.publish();
    try {
      await fn();
    } finally {
      this.plugging = false;
      this.publish();
    }
  }

  private async saveSettings(next: MsdSettings): Promise<void> {
    await this.file.save(next);
    this.settings = next;
  }

  private beginTransfer(
    kind: Transfer['kind'],
    name: string,
    size: number,
    abort: (reason: Error) => void,
  ): Transfer {
    this.assertEnabled();
    if (this.transfer) throw new MsdIsBusyError();
    if (this.partitionConnected) {
      throw new MsdConnectedError('The storage is connected to the remote computer');
    }
    const t: Transfer = {
      kind,
      name,
      size,
      writer: null,
      stopped: null,
      abort: (reason) => {
        t.stopped ??= reason;
        abort(reason);
      },
    };
    this.transfer = t;
    this.startTicker();
    return t;
  }

  private async endTransfer(t: Transfer): Promise<void> {
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
      await this.storage.remove(name);
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
      if (code === 'EXDEV') throw new ValidatorError(`The name '${name}' leaves the storage`);
      if (code === 'ENOSPC' || code === 'EDQUOT') throw new MsdNoSpaceError();
      throw err;
    }
  }

  private async finishWriter(writer: ImageWriter): Promise<void> {
    if (writer.written !== writer.size) {
      throw new Error(`Only ${writer.written} of ${writer.size} bytes arrived`);
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
    if (full) return new MsdNoSpaceError('The storage filled up while writing the image');
    if (err instanceof ApiError || err instanceof MsdTransferAborted) return err;
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

function isNoSpace(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT' || err instanceof MsdNoSpaceError;
}

/**
 * Pipes `source` into `sink` with backpressure. Unlike stream.pipeline, a failing sink does not
 * destroy the source: for an upload the source is the request, and destroying it would close
 * the socket before the 507 answer could go out.
 */
function pump(source: Readable, sink: Writable, idleMs = 0): Promise<void> {
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
      if (err) {
        source.unpipe(sink);
        source.pause();
        sink.destroy();
        reject(err);
      } else resolve();
    };
    const onSourceError = (err: Error): void => settle(err);
    const onSinkError = (err: Error): void => settle(err);
    const onAborted = (): void => settle(new SourceClosedError());
    const onClose = (): void => {
      if (!source.readableEnded) settle(new SourceClosedError());
    };
    const onFinish = (): void => settle();
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

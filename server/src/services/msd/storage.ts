/**
 * The image storage: `<data_dir>/msd/images/`. An image is a regular file there, possibly in a
 * folder (`isos/x.iso`); names are checked by the protocol's `checkImageName` before they reach
 * this file, so a name's text can never leave the folder.
 *
 * A symbolic link placed in the folder by hand (a shell, a restore) could still lead outside:
 * no path here is used through one. Every folder on the way to an image must resolve
 * (realpath) to the same place inside the folder, an image is a regular file opened with
 * O_NOFOLLOW, the listing skips links, and folders of an upload are made one level at a time,
 * each checked before the next. A name that goes through a link is not an image
 * (StorageLinkError where a write or a lend is refused, "not found" where one is looked up).
 *
 * While an image is written, a marker `.__<basename>.incomplete` sits beside it; it goes only
 * after the last byte and the folder entry are on disk (fsync of the file, then of its folder).
 * A marker left by a crash or a cut upload keeps the image `complete:false`; an orphan marker
 * (its image never got created) is removed when the storage opens.
 */
import { constants as fsConstants, type ReadStream } from 'node:fs';
import {
  access,
  lstat,
  mkdir,
  open,
  readdir,
  realpath,
  rm,
  rmdir,
  statfs,
  unlink,
  type FileHandle,
} from 'node:fs/promises';
import { basename, dirname, join, relative, sep } from 'node:path';
import { Writable } from 'node:stream';
import { fsyncDir } from '../../storage/atomic';

export const MARKER_PREFIX = '.__';
export const MARKER_SUFFIX = '.incomplete';

/** The marker file name of an image file name. */
export function markerName(imageBase: string): string {
  return `${MARKER_PREFIX}${imageBase}${MARKER_SUFFIX}`;
}

export interface StoredImage {
  name: string;
  complete: boolean;
  size: number;
  /** Unix seconds, fractional. */
  modTs: number;
}

export interface StorageSpace {
  size: number;
  free: number;
  writable: boolean;
  /** File system name from statfs (ext4, tmpfs, ...), or its magic number in hex. */
  filesystem: string;
}

/** statfs magic numbers (linux/magic.h) of the file systems a device storage may sit on. */
const FS_NAMES: Record<number, string> = {
  0xef53: 'ext4',
  0x01021994: 'tmpfs',
  0x58465342: 'xfs',
  0x9123683e: 'btrfs',
  0x2011bab0: 'exfat',
  0x4d44: 'vfat',
  0x5346544e: 'ntfs',
  0x794c7630: 'overlay',
  0xf2f52010: 'f2fs',
  0x6969: 'nfs',
  0x2fc12fc1: 'zfs',
  0x858458f6: 'ramfs',
  0x73717368: 'squashfs',
};

/** Whether `err` is a Node system error with one of these codes. */
export function isErrno(err: unknown, ...codes: string[]): boolean {
  return codes.includes((err as NodeJS.ErrnoException)?.code ?? '');
}

/** A name that reaches outside the storage, or a non-file, through a symbolic link. */
export class StorageLinkError extends Error {
  readonly code = 'EXDEV';
  constructor(readonly image: string) {
    super(`'${image}' goes through a symbolic link`);
    this.name = 'StorageLinkError';
  }
}

const O_READ_NOFOLLOW = fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW;
const O_CREATE_NOFOLLOW =
  fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW;

export class ImageStorage {
  private constructor(
    readonly root: string,
    /** realpath of root: the root itself may sit behind a link the admin chose. */
    private readonly realRoot: string,
  ) {}

  /** Creates the folder if needed and drops orphan markers. */
  static async open(root: string): Promise<ImageStorage> {
    await mkdir(root, { recursive: true });
    const storage = new ImageStorage(root, await realpath(root));
    await storage.sweepOrphanMarkers(root);
    return storage;
  }

  /** Absolute path of a checked name. */
  pathOf(name: string): string {
    return join(this.root, ...name.split('/'));
  }

  markerOf(name: string): string {
    const path = this.pathOf(name);
    return join(dirname(path), markerName(basename(path)));
  }

  /** Every image (regular files, not hidden; symlinks are not followed). */
  async scan(): Promise<Map<string, StoredImage>> {
    const found = new Map<string, StoredImage>();
    await this.walk(this.root, found);
    return found;
  }

  /** One image, or null if there is no regular file of that name (reached without links). */
  async get(name: string): Promise<StoredImage | null> {
    let st;
    try {
      if (!(await this.folderIsReal(name))) return null;
      st = await lstat(this.pathOf(name));
    } catch (err) {
      if (isErrno(err, 'ENOENT', 'ENOTDIR')) return null;
      throw err;
    }
    if (!st.isFile()) return null;
    const marker = await lstat(this.markerOf(name)).then(
      () => true,
      () => false,
    );
    return { name, complete: !marker, size: st.size, modTs: st.mtimeMs / 1000 };
  }

  async space(): Promise<StorageSpace> {
    const s = await statfs(this.root);
    const writable = await access(this.root, fsConstants.W_OK).then(
      () => true,
      () => false,
    );
    return {
      size: s.blocks * s.bsize,
      free: s.bavail * s.bsize,
      writable,
      filesystem: FS_NAMES[s.type] ?? `0x${s.type.toString(16)}`,
    };
  }

  /**
   * The path of image `name` for a reader outside this process (the driver): a regular file
   * reached without a link. Throws StorageLinkError, or ENOENT if it is not there.
   */
  async realFile(name: string): Promise<string> {
    const handle = await this.openImage(name);
    await handle.close();
    return this.pathOf(name);
  }

  /** A read stream of image `name` (opened with O_NOFOLLOW, its folders checked). */
  async readStream(name: string): Promise<ReadStream> {
    const handle = await this.openImage(name);
    return handle.createReadStream();
  }

  /**
   * The first symbolic link (or other non-file, non-folder entry) in the storage, as a name
   * relative to it, or null: the partition drive lends the folder whole, and QEMU's vvfat
   * follows links.
   */
  async findLink(dir = this.root): Promise<string | null> {
    for (const e of await readdir(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) {
        const inner = await this.findLink(path);
        if (inner !== null) return inner;
      } else if (!e.isFile()) {
        return relative(this.root, path).split(sep).join('/');
      }
    }
    return null;
  }

  /**
   * Starts writing `name`: folders, marker (exclusive), then the file (exclusive). Throws
   * `EEXIST` if the name is taken, `ENOTDIR` if a folder of the name is a file,
   * StorageLinkError if a folder of the name is a link.
   */
  async createWriter(name: string, size: number): Promise<ImageWriter> {
    const path = this.pathOf(name);
    const dir = await this.makeFolders(name);
    const marker = this.markerOf(name);
    const markerHandle = await open(marker, O_CREATE_NOFOLLOW, 0o644);
    await markerHandle.close();
    let handle: FileHandle;
    try {
      handle = await open(path, O_CREATE_NOFOLLOW, 0o644);
    } catch (err) {
      await unlink(marker).catch(() => undefined);
      throw err;
    }
    // The marker's entry is on disk before any byte of the image: a crash shows it incomplete.
    await fsyncDir(dir);
    return new ImageWriter(this, name, size, path, marker, handle);
  }

  /** Removes an image and its marker, then folders left empty by it (not the root). */
  async remove(name: string): Promise<void> {
    const path = this.pathOf(name);
    // unlink never follows the last component; the folders above it are checked here.
    if (!(await this.folderIsReal(name))) throw new StorageLinkError(name);
    await unlink(path);
    await unlink(this.markerOf(name)).catch(() => undefined);
    await this.pruneEmptyFolders(dirname(path));
  }

  /** Empties the storage (every image, marker and folder); the root stays. */
  async format(): Promise<void> {
    for (const entry of await readdir(this.root)) {
      await rm(join(this.root, entry), { recursive: true, force: true });
    }
    await fsyncDir(this.root);
  }

  async pruneEmptyFolders(from: string): Promise<void> {
    let dir = from;
    while (dir !== this.root && dir.startsWith(this.root + sep)) {
      try {
        await rmdir(dir);
      } catch {
        break; // not empty (or gone): the folders above it are not empty either
      }
      dir = dirname(dir);
    }
    await fsyncDir(dir).catch(() => undefined);
  }

  /**
   * Whether the folder that holds `name` is where its name says, with no link on the way
   * (realpath of it is the real root joined with the name's folders). False if it is missing.
   */
  private async folderIsReal(name: string): Promise<boolean> {
    const folders = name.split('/').slice(0, -1);
    if (folders.length === 0) return true;
    try {
      return (await realpath(join(this.root, ...folders))) === join(this.realRoot, ...folders);
    } catch (err) {
      if (isErrno(err, 'ENOENT', 'ENOTDIR')) return false;
      throw err;
    }
  }

  /** Opens image `name` for reading: its folders real, the file regular, never a link. */
  private async openImage(name: string): Promise<FileHandle> {
    if (!(await this.folderIsReal(name))) throw new StorageLinkError(name);
    let handle: FileHandle;
    try {
      handle = await open(this.pathOf(name), O_READ_NOFOLLOW);
    } catch (err) {
      if (isErrno(err, 'ELOOP')) throw new StorageLinkError(name);
      throw err;
    }
    const st = await handle.stat();
    if (!st.isFile()) {
      await handle.close();
      throw new StorageLinkError(name);
    }
    return handle;
  }

  /**
   * Makes the folders of `name` one level at a time, refusing a link or a file on the way
   * (mkdir -p would follow a link and make folders outside). Returns the last folder.
   */
  private async makeFolders(name: string): Promise<string> {
    let dir = this.root;
    for (const segment of name.split('/').slice(0, -1)) {
      dir = join(dir, segment);
      await mkdir(dir).catch((err: unknown) => {
        if (!isErrno(err, 'EEXIST')) throw err;
      });
      const st = await lstat(dir);
      if (st.isSymbolicLink()) throw new StorageLinkError(name);
      if (!st.isDirectory()) {
        throw Object.assign(new Error(`${dir} is not a folder`), { code: 'ENOTDIR' });
      }
    }
    // a link swapped in between two steps
    if (!(await this.folderIsReal(name))) throw new StorageLinkError(name);
    return dir;
  }

  private async walk(dir: string, found: Map<string, StoredImage>): Promise<void> {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (err) {
      if (isErrno(err, 'ENOENT', 'ENOTDIR')) return;
      throw err;
    }
    const names = new Set(entries.map((e) => e.name));
    for (const e of entries) {
      if (e.name.startsWith('.')) continue;
      const path = join(dir, e.name);
      if (e.isDirectory()) {
        await this.walk(path, found);
      } else if (e.isFile()) {
        const st = await lstat(path).catch(() => null);
        if (!st?.isFile()) continue; // removed or replaced meanwhile
        const name = relative(this.root, path).split(sep).join('/');
        found.set(name, {
          name,
          complete: !names.has(markerName(e.name)),
          size: st.size,
          modTs: st.mtimeMs / 1000,
        });
      }
    }
  }

  private async sweepOrphanMarkers(dir: string): Promise<void> {
    const entries = await readdir(dir, { withFileTypes: true });
    const names = new Set(entries.map((e) => e.name));
    for (const e of entries) {
      if (e.isDirectory() && !e.name.startsWith('.')) {
        await this.sweepOrphanMarkers(join(dir, e.name));
      } else if (e.name.startsWith(MARKER_PREFIX) && e.name.endsWith(MARKER_SUFFIX)) {
        const image = e.name.slice(MARKER_PREFIX.length, -MARKER_SUFFIX.length);
        if (!names.has(image)) await unlink(join(dir, e.name)).catch(() => undefined);
      }
    }
  }
}

/**
 * How the sink pushes back on its source: it buffers up to SINK_HIGH_WATER bytes and keeps up
 * to SINK_IN_FLIGHT writes running at once (at their own offsets). A single write at a time
 * leaves the socket idle while the kernel copies into the page cache; a few in parallel keep
 * both busy (about twice the rate on our 2-core machines).
 *
 * While a write runs, what arrives is batched until WRITE_BATCH bytes: a socket hands over
 * 64 KiB at a time, and one thread-pool round trip per 64 KiB, not the copy, was where an
 * upload's time went (the sink held its source most of the time while dd wrote 3x faster to
 * the same disk). With no write running, bytes go at once (a slow client's progress is exact).
 * Memory stays bounded by SINK_HIGH_WATER + WRITE_BATCH * (SINK_IN_FLIGHT + 1).
 */
const SINK_HIGH_WATER = 1024 * 1024;
const SINK_IN_FLIGHT = 3;
const WRITE_BATCH = 2 * 1024 * 1024;

/**
 * One image being written. `sink` takes the bytes (with backpressure: a socket piped into it
 * stops reading while the disk is behind); `commit` makes it complete, `abandon` ends it
 * incomplete or removes it.
 */
export class ImageWriter {
  /** Bytes on disk (the file may have holes until the writes in flight land). */
  written = 0;
  /** Bytes handed to writes so far: the offset of the next one. */
  private queued = 0;
  /** Bytes taken from the sink while writes ran, not yet handed to one (< WRITE_BATCH). */
  private batch: Buffer[] = [];
  private batchBytes = 0;
  private readonly inFlight = new Set<Promise<void>>();
  /** The sink's callback held back while SINK_IN_FLIGHT writes run. */
  private held: ((err?: Error | null) => void) | null = null;
  private closed = false;
  readonly sink: Writable;

  constructor(
    private readonly storage: ImageStorage,
    readonly name: string,
    readonly size: number,
    readonly path: string,
    private readonly marker: string,
    private readonly handle: FileHandle,
  ) {
    this.sink = new Writable({
      highWaterMark: SINK_HIGH_WATER,
      writev: (chunks, callback) =>
        this.take(
          chunks.map((c) => c.chunk as Buffer),
          callback,
        ),
      final: (callback) => {
        if (this.batchBytes > 0) this.enqueue(this.takeBatch(), () => undefined);
        Promise.all(this.inFlight).then(() => callback(), callback);
      },
    });
  }

  /** fsync the file, close it, drop the marker, fsync the folder: the image is complete. */
  async commit(): Promise<void> {
    await Promise.all(this.inFlight);
    await this.handle.sync();
    await this.close();
    const dir = dirname(this.path);
    await fsyncDir(dir);
    await unlink(this.marker);
    await fsyncDir(dir);
  }

  /** Ends a write that did not finish: the file goes (with `remove`) or stays incomplete. */
  async abandon(remove: boolean): Promise<void> {
    this.sink.destroy();
    await Promise.allSettled(this.inFlight);
    await this.close().catch(() => undefined);
    if (remove) {
      await unlink(this.path).catch(() => undefined);
      await unlink(this.marker).catch(() => undefined);
      await this.storage.pruneEmptyFolders(dirname(this.path));
    }
  }

  private async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.handle.close();
  }

  /** Adds the sink's chunks to the batch; it becomes a write when full or the disk is idle. */
  private take(buffers: Buffer[], callback: (err?: Error | null) => void): void {
    const total = buffers.reduce((n, b) => n + b.length, 0);
    if (this.queued + this.batchBytes + total > this.size) {
      callback(new Error('More bytes than announced'));
      return;
    }
    this.batch.push(...buffers);
    this.batchBytes += total;
    if (this.inFlight.size === 0 || this.batchBytes >= WRITE_BATCH) {
      this.enqueue(this.takeBatch(), callback);
    } else callback();
  }

  private takeBatch(): Buffer[] {
    const buffers = this.batch;
    this.batch = [];
    this.batchBytes = 0;
    return buffers;
  }

  private enqueue(buffers: Buffer[], callback: (err?: Error | null) => void): void {
    const total = buffers.reduce((n, b) => n + b.length, 0);
    const at = this.queued;
    this.queued += total;
    const write = this.writeAt(buffers, at).then(
      () => {
        this.written += total;
        this.inFlight.delete(write);
        // the disk went idle: what was batched meanwhile goes now (SINK_IN_FLIGHT > 1, so this
        // never takes the held callback's place)
        if (this.inFlight.size === 0 && this.batchBytes > 0) {
          this.enqueue(this.takeBatch(), () => undefined);
        }
        this.release();
      },
      (err: Error) => {
        this.inFlight.delete(write);
        // the sink fails at once: its source stops, the caller sees the error
        this.sink.destroy(err);
        this.release(err);
      },
    );
    this.inFlight.add(write);
    if (this.inFlight.size < SINK_IN_FLIGHT) callback();
    else this.held = callback;
  }

  private release(err?: Error): void {
    const held = this.held;
    this.held = null;
    held?.(err);
  }

  /** writev at `position`, again for the rest after a short write (a full disk, a signal). */
  private async writeAt(buffers: Buffer[], position: number): Promise<void> {
    let pending = buffers;
    let at = position;
    while (pending.length > 0) {
      const total = pending.reduce((n, b) => n + b.length, 0);
      const { bytesWritten } = await this.handle.writev(pending, at);
      if (bytesWritten <= 0) {
        throw Object.assign(new Error('No byte written'), { code: 'ENOSPC' });
      }
      if (bytesWritten === total) return;
      at += bytesWritten;
      let skip = bytesWritten;
      const rest: Buffer[] = [];
      for (const b of pending) {
        if (skip >= b.length) skip -= b.length;
        else {
          rest.push(skip > 0 ? b.subarray(skip) : b);
          skip = 0;
        }
      }
      pending = rest;
    }
  }
}

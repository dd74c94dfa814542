/**
 * Virtual media ("msd", mass storage device): the `msd` state and event (wire-protocol.md 2.6),
 * the answers of `/api/msd/*` (wire-protocol.md 1.6) and the image-name rules that the console
 * and the server share (SPEC 5 "Upload").
 */
import type { ApiEnvelope } from './envelope';

/** SPEC 3: the names the ISO list keeps (case-insensitive). */
export const MSD_MOUNTABLE_EXTENSIONS = ['.iso', '.img', '.bin'] as const;

/** Whether the console lists `name` as a mountable image (SPEC 3 "The ISO list keeps only..."). */
export function isMountableImage(name: string): boolean {
  const lower = name.toLowerCase();
  return MSD_MOUNTABLE_EXTENSIONS.some((ext) => lower.endsWith(ext));
}

/** One image of the storage. */
export interface MsdImageInfo {
  /** False while it is being written, or when a write was cut (its marker file is still there). */
  complete: boolean;
  removable: boolean;
  /**
   * kvmd 4.2xx: the remote computer may write to it through a read-write flash drive. False for
   * `.iso` names (kvmd's rule: a disc image is read-only), true for every other uploaded image.
   */
  writable: boolean;
  /** Bytes on disk (for an incomplete image: bytes written so far). */
  size: number;
  /** Modification time, Unix seconds (fractional). */
  mod_ts: number;
}

/** One storage partition; ours has exactly one, named `''`. */
export interface MsdPartInfo {
  size: number;
  free: number;
  writable: boolean;
}

export interface MsdDownloading {
  name: string;
  size: number;
  /** kvmd's spelling. */
  readed: number;
}

export interface MsdUploading {
  name: string;
  size: number;
  written: number;
}

export interface MsdStorage {
  /** Keyed by name (may hold a folder, `isos/x.iso`), newest first (by `mod_ts`). */
  images: Record<string, MsdImageInfo>;
  parts: Record<string, MsdPartInfo>;
  downloading: MsdDownloading | null;
  uploading: MsdUploading | null;
}

/** The image of the drive: the storage's entry plus where it lives. */
export interface MsdDriveImage extends MsdImageInfo {
  name: string;
  /** Always true here: images only ever come from the storage folder. */
  in_storage: boolean;
}

export interface MsdDrive {
  image: MsdDriveImage | null;
  /** Lent to the remote computer right now. */
  connected: boolean;
  /** CD-ROM (read-only, "image mounting") or flash drive ("file sharing"). */
  cdrom: boolean;
  /** Flash drive only: the remote computer may write to it. */
  rw: boolean;
}

/** GL's second drive: the whole storage lent as a read-only disk. */
export interface MsdDrivePartition {
  image: null;
  connected: boolean;
  cdrom: false;
  rw: boolean;
}

/** `GET /api/msd` and the first `msd` event (wire-protocol.md 2.6, GL shape). */
export interface MsdState {
  enabled: boolean;
  online: boolean;
  busy: boolean;
  storage: MsdStorage;
  drive: MsdDrive;
  drive_partition: MsdDrivePartition;
}

/**
 * A later `msd` event: only the keys that changed. Each key present replaces the client's value
 * whole (`storage.images` is the complete new list, not a patch of it).
 */
export interface MsdStatePartial {
  busy?: boolean;
  drive?: MsdDrive;
  drive_partition?: MsdDrivePartition;
  storage?: Partial<MsdStorage>;
}

/** Applies a partial `msd` event to the last full state (what the console's store does). */
export function applyMsdEvent(base: MsdState | null, event: MsdState | MsdStatePartial): MsdState {
  if (isFullMsdState(event) || base === null) return event as MsdState;
  return {
    ...base,
    ...(event.busy !== undefined ? { busy: event.busy } : {}),
    ...(event.drive !== undefined ? { drive: event.drive } : {}),
    ...(event.drive_partition !== undefined ? { drive_partition: event.drive_partition } : {}),
    storage: { ...base.storage, ...(event.storage ?? {}) },
  };
}

/** A full state has `enabled` and `online`; partial events never carry them. */
export function isFullMsdState(event: MsdState | MsdStatePartial): event is MsdState {
  return 'online' in event && 'enabled' in event;
}

/** Answer of `/api/msd/write` and each record of `/api/msd/write_remote`. */
export interface MsdWriteResult {
  image: { name: string; size: number; written: number };
}

/**
 * One `\r\n`-terminated line of the `write_remote` body (application/x-ndjson): progress
 * records `{ok:true,result:{image}}`, and on a failure after the stream began a last
 * `{ok:false,result:{error,error_msg}}` (the body is then cut, without a final chunk).
 */
export type MsdWriteRemoteRecord = ApiEnvelope<MsdWriteResult>;

/** The record separator of `write_remote`. */
export const MSD_NDJSON_EOL = '\r\n';

/** The last complete record of a `write_remote` body (the console reads only that one). */
export function lastWriteRemoteRecord(body: string): MsdWriteRemoteRecord | null {
  const lines = body.split(MSD_NDJSON_EOL).filter((l) => l.trim() !== '');
  for (let i = lines.length - 1; i >= 0; i--) {
    try {
      return JSON.parse(lines[i]!) as MsdWriteRemoteRecord;
    } catch {
      // a line cut in the middle: the one before it is the last whole record
    }
  }
  return null;
}

/** `GET /api/msd/partition_show` (GL shape). */
export interface MsdPartitionDevice {
  path: string;
  size: number;
  free: number;
  uuid: string;
  filesystem: string;
  label: string;
  is_current: boolean;
}

export interface MsdPartitionShow {
  devices: Record<string, MsdPartitionDevice>;
}

/** The partition label we report (GL reports "GLKVM"). */
export const MSD_PARTITION_LABEL = 'KVM';

/** Sorts images newest first (`mod_ts` descending, then by name), as the state lists them. */
export function sortImagesNewestFirst<T extends { mod_ts: number }>(
  images: Record<string, T> | Iterable<[string, T]>,
): Record<string, T> {
  const entries = Symbol.iterator in images ? [...images] : Object.entries(images);
  entries.sort(([an, a], [bn, b]) => b.mod_ts - a.mod_ts || (an < bn ? -1 : an > bn ? 1 : 0));
  const out: Record<string, T> = {};
  for (const [name, info] of entries) out[name] = info;
  return out;
}

/** Longest file or folder name in bytes (Linux NAME_MAX). */
export const MSD_NAME_MAX_BYTES = 255;
/** Longest image path in bytes, prefix included (well under Linux PATH_MAX). */
export const MSD_PATH_MAX_BYTES = 1024;

/** UTF-8 length of a string whose surrogates are paired (checked before). */
function utf8Bytes(s: string): number {
  let n = 0;
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    n += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
  }
  return n;
}

function hasLoneSurrogate(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (!(next >= 0xdc00 && next <= 0xdfff)) return true;
      i++;
    } else if (c >= 0xdc00 && c <= 0xdfff) return true;
  }
  return false;
}

/** C0 controls (NUL included), DEL and C1 controls. */
function hasControl(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return true;
  }
  return false;
}

/**
 * Checks a relative path of the storage: one or more `/`-separated segments. Returns null when
 * it is fine, else the reason in English. Refused: empty, absolute, empty segments (`a//b`,
 * trailing `/`), any segment starting with `.` (so `.`, `..`, hidden files and our own
 * `.__name.incomplete` markers), NUL and control characters, backslashes, segments over 255
 * bytes of UTF-8, and strings that are not valid Unicode.
 */
export function checkStoragePath(path: string, what = 'image name'): string | null {
  if (path === '') return `The ${what} is empty`;
  if (hasLoneSurrogate(path)) return `The ${what} is not valid Unicode`;
  if (hasControl(path)) return `The ${what} contains a control character`;
  if (path.includes('\\')) return `The ${what} contains a backslash`;
  if (path.startsWith('/')) return `The ${what} must not be an absolute path`;
  if (utf8Bytes(path) > MSD_PATH_MAX_BYTES) {
    return `The ${what} is longer than ${MSD_PATH_MAX_BYTES} bytes`;
  }
  for (const segment of path.split('/')) {
    if (segment === '') return `The ${what} has an empty path segment`;
    if (segment.startsWith('.')) return `A part of the ${what} starts with '.'`;
    if (utf8Bytes(segment) > MSD_NAME_MAX_BYTES) {
      return `A part of the ${what} is longer than ${MSD_NAME_MAX_BYTES} bytes`;
    }
  }
  return null;
}

/** `checkStoragePath` for an image name (may itself hold folders: `isos/x.iso`). */
export function checkImageName(name: string): string | null {
  return checkStoragePath(name, 'image name');
}

/** A `prefix` (folder of the storage): same rules; `''` (none) is fine, one trailing `/` too. */
export function checkImagePrefix(prefix: string): string | null {
  const p = trimPrefix(prefix);
  return p === '' ? null : checkStoragePath(p, 'prefix');
}

function trimPrefix(prefix: string): string {
  return prefix.endsWith('/') && prefix !== '/' ? prefix.slice(0, -1) : prefix;
}

/**
 * The storage name of an upload: `prefix + "/" + image` (kvmd), or just `image` without a prefix.
 * Returns the name, or the reason it is refused.
 */
export function joinImageName(
  prefix: string,
  image: string,
): { ok: true; name: string } | { ok: false; reason: string } {
  const badPrefix = checkImagePrefix(prefix);
  if (badPrefix) return { ok: false, reason: badPrefix };
  const badImage = checkImageName(image);
  if (badImage) return { ok: false, reason: badImage };
  const p = trimPrefix(prefix);
  const name = p === '' ? image : `${p}/${image}`;
  const badName = checkImageName(name);
  if (badName) return { ok: false, reason: badName };
  return { ok: true, name };
}

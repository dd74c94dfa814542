/**
 * The one ZIP module (PKWARE APPNOTE 4.3), in memory, no dependency (zlib's raw deflate and
 * crc32 are in Node 20):
 *
 * - the writer (`buildZip`): local headers, central directory, end record; deflate or store, no
 *   ZIP64. Enough for the log export and support bundles, capped well under 4 GiB.
 * - the reader (`zipEntries`, `zipRead`, `readZip`): small and strict, for packages a client
 *   hands in (fingerbot firmware). Anything it does not need is refused rather than guessed at:
 *   ZIP64, multi-disk archives, encryption, other compression methods, more than
 *   ZIP_MAX_ENTRIES entries, duplicate names, an entry declared larger than
 *   ZIP_ENTRY_MAX_BYTES or entries declared larger than ZIP_TOTAL_MAX_BYTES together (each
 *   bound can be lowered or raised per call with ZipLimits). An entry is inflated to at most
 *   its declared size, and must be exactly that size with the declared CRC-32; the local header
 *   must agree with the central directory.
 *
 * Why not a maintained reader such as yauzl: it does not check CRC-32 (its documentation says
 * so), and what a package needs here (a few entries of a buffer of at most 16 MiB, each bounded
 * and checked) is this file.
 */
import { promisify } from 'node:util';
import { crc32, deflateRawSync, inflateRaw, inflateRawSync } from 'node:zlib';

export interface ZipEntry {
  /** Path inside the archive, `/`-separated, no leading slash. */
  name: string;
  data: Buffer | string;
}

/** Largest archive this writer makes (no zip64): 4 GiB minus a margin. */
export const ZIP_MAX_BYTES = 0xffff_0000;

function dosTime(date: Date): { time: number; date: number } {
  const year = Math.max(1980, date.getFullYear());
  return {
    time: (date.getHours() << 11) | (date.getMinutes() << 5) | Math.floor(date.getSeconds() / 2),
    date: ((year - 1980) << 9) | ((date.getMonth() + 1) << 5) | date.getDate(),
  };
}

/** Builds the archive; already-compressed data (images) is stored when deflate does not help. */
export function buildZip(entries: ZipEntry[], now = new Date()): Buffer {
  const { time, date } = dosTime(now);
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name.replace(/^\/+/, ''), 'utf8');
    const raw = typeof entry.data === 'string' ? Buffer.from(entry.data, 'utf8') : entry.data;
    const deflated = deflateRawSync(raw);
    const method = deflated.length < raw.length ? 8 : 0;
    const body = method === 8 ? deflated : raw;
    const crc = crc32(raw);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed
    local.writeUInt16LE(0x0800, 6); // UTF-8 names
    local.writeUInt16LE(method, 8);
    local.writeUInt16LE(time, 10);
    local.writeUInt16LE(date, 12);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(body.length, 18);
    local.writeUInt32LE(raw.length, 22);
    local.writeUInt16LE(name.length, 26);
    local.writeUInt16LE(0, 28);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(0x0314, 4); // made by: Unix, 2.0
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt16LE(method, 10);
    central.writeUInt16LE(time, 12);
    central.writeUInt16LE(date, 14);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(body.length, 20);
    central.writeUInt32LE(raw.length, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE((0o100644 << 16) >>> 0, 38); // external attrs: a regular file, 0644
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, body);
    centrals.push(central, name);
    offset += local.length + name.length + body.length;
    if (offset > ZIP_MAX_BYTES) throw new RangeError('zip: archive too large');
  }
  const cdSize = centrals.reduce((n, b) => n + b.length, 0);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(cdSize, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, ...centrals, end]);
}

/* ---- The reader ---- */

const inflateRawAsync = promisify(inflateRaw);

const EOCD = 0x06054b50;
const EOCD_SIZE = 22;
const ZIP64_LOCATOR = 0x07064b50;
const CENTRAL = 0x02014b50;
const CENTRAL_SIZE = 46;
const LOCAL = 0x04034b50;
const LOCAL_SIZE = 30;
const ZIP64_EXTRA = 0x0001;

/** General purpose flags (APPNOTE 4.4.4). */
const FLAG_ENCRYPTED = 1 << 0;
/** Sizes and CRC follow the data; the central directory still has them. */
const FLAG_DATA_DESCRIPTOR = 1 << 3;
const FLAG_STRONG_ENCRYPTION = 1 << 6;
const FLAG_MASKED_HEADERS = 1 << 13;

const METHOD_STORED = 0;
const METHOD_DEFLATED = 8;

/** The most entries an archive may have by default (a firmware package has three or four). */
export const ZIP_MAX_ENTRIES = 64;
/** The largest uncompressed size one entry may declare by default. */
export const ZIP_ENTRY_MAX_BYTES = 16 * 1024 * 1024;
/** The largest uncompressed size all entries together may declare by default. */
export const ZIP_TOTAL_MAX_BYTES = 16 * 1024 * 1024;

/** What the reader accepts; the defaults are a firmware package's. */
export interface ZipLimits {
  maxEntries: number;
  entryMaxBytes: number;
  totalMaxBytes: number;
}

export const ZIP_READ_LIMITS: ZipLimits = {
  maxEntries: ZIP_MAX_ENTRIES,
  entryMaxBytes: ZIP_ENTRY_MAX_BYTES,
  totalMaxBytes: ZIP_TOTAL_MAX_BYTES,
};

/** One entry of the central directory, as the reader checked it. */
export interface ZipDirEntry {
  name: string;
  method: number;
  flags: number;
  crc32: number;
  compressedSize: number;
  size: number;
  localOffset: number;
}

export class ZipError extends Error {}

function findEndRecord(zip: Buffer): number {
  // 22 bytes plus a comment of up to 65535, searched from the end.
  for (let i = zip.length - EOCD_SIZE; i >= Math.max(0, zip.length - EOCD_SIZE - 0xffff); i--) {
    if (zip.readUInt32LE(i) === EOCD && i + EOCD_SIZE + zip.readUInt16LE(i + 20) === zip.length) {
      return i;
    }
  }
  throw new ZipError('not a ZIP file (no end of central directory record)');
}

function hasZip64Extra(extra: Buffer): boolean {
  for (let at = 0; at + 4 <= extra.length;) {
    if (extra.readUInt16LE(at) === ZIP64_EXTRA) return true;
    at += 4 + extra.readUInt16LE(at + 2);
  }
  return false;
}

/**
 * The entries of the central directory, checked against the limits and the file.
 * @throws ZipError naming what is wrong
 */
export function zipEntries(zip: Buffer, limits: ZipLimits = ZIP_READ_LIMITS): ZipDirEntry[] {
  const eocd = findEndRecord(zip);
  if (eocd >= 20 && zip.readUInt32LE(eocd - 20) === ZIP64_LOCATOR) {
    throw new ZipError('ZIP64 archives are not supported');
  }
  const disk = zip.readUInt16LE(eocd + 4);
  const cdDisk = zip.readUInt16LE(eocd + 6);
  const onDisk = zip.readUInt16LE(eocd + 8);
  const count = zip.readUInt16LE(eocd + 10);
  const cdSize = zip.readUInt32LE(eocd + 12);
  const cdOffset = zip.readUInt32LE(eocd + 16);
  if (count === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) {
    throw new ZipError('ZIP64 archives are not supported');
  }
  if (disk !== 0 || cdDisk !== 0 || onDisk !== count) {
    throw new ZipError('multi-disk archives are not supported');
  }
  if (count > limits.maxEntries) {
    throw new ZipError(`too many entries (${count}, at most ${limits.maxEntries})`);
  }
  if (cdOffset + cdSize > eocd) throw new ZipError('the central directory is out of the file');

  const entries: ZipDirEntry[] = [];
  const names = new Set<string>();
  let total = 0;
  let at = cdOffset;
  const cdEnd = cdOffset + cdSize;
  for (let n = 0; n < count; n++) {
    if (at + CENTRAL_SIZE > cdEnd || zip.readUInt32LE(at) !== CENTRAL) {
      throw new ZipError('broken central directory');
    }
    const nameLen = zip.readUInt16LE(at + 28);
    const extraLen = zip.readUInt16LE(at + 30);
    const commentLen = zip.readUInt16LE(at + 32);
    const next = at + CENTRAL_SIZE + nameLen + extraLen + commentLen;
    if (next > cdEnd) throw new ZipError('broken central directory');
    const entry: ZipDirEntry = {
      flags: zip.readUInt16LE(at + 8),
      method: zip.readUInt16LE(at + 10),
      crc32: zip.readUInt32LE(at + 16),
      compressedSize: zip.readUInt32LE(at + 20),
      size: zip.readUInt32LE(at + 24),
      localOffset: zip.readUInt32LE(at + 42),
      name: zip.toString('utf8', at + 46, at + 46 + nameLen),
    };
    const extra = zip.subarray(at + 46 + nameLen, at + 46 + nameLen + extraLen);
    if (
      entry.size === 0xffffffff ||
      entry.compressedSize === 0xffffffff ||
      entry.localOffset === 0xffffffff ||
      hasZip64Extra(extra)
    ) {
      throw new ZipError(`entry ${entry.name}: ZIP64 is not supported`);
    }
    if (entry.flags & (FLAG_ENCRYPTED | FLAG_STRONG_ENCRYPTION | FLAG_MASKED_HEADERS)) {
      throw new ZipError(`entry ${entry.name} is encrypted`);
    }
    if (entry.method !== METHOD_STORED && entry.method !== METHOD_DEFLATED) {
      throw new ZipError(`entry ${entry.name}: unsupported compression method ${entry.method}`);
    }
    if (entry.method === METHOD_STORED && entry.size !== entry.compressedSize) {
      throw new ZipError(`entry ${entry.name}: stored, but its two sizes differ`);
    }
    if (entry.size > limits.entryMaxBytes) {
      throw new ZipError(
        `entry ${entry.name} declares ${entry.size} bytes (at most ${limits.entryMaxBytes})`,
      );
    }
    total += entry.size;
    if (total > limits.totalMaxBytes) {
      throw new ZipError(`the entries declare more than ${limits.totalMaxBytes} bytes together`);
    }
    if (entry.localOffset + LOCAL_SIZE + entry.compressedSize > cdOffset) {
      throw new ZipError(`entry ${entry.name} is out of the file`);
    }
    if (names.has(entry.name)) throw new ZipError(`entry ${entry.name} is there twice`);
    names.add(entry.name);
    entries.push(entry);
    at = next;
  }
  return entries;
}

/** The entry's stored bytes, once its local header agrees with the central directory. */
function packedData(zip: Buffer, entry: ZipDirEntry): Buffer {
  const at = entry.localOffset;
  if (at + LOCAL_SIZE > zip.length || zip.readUInt32LE(at) !== LOCAL) {
    throw new ZipError(`entry ${entry.name}: broken local header`);
  }
  const nameLen = zip.readUInt16LE(at + 26);
  const start = at + LOCAL_SIZE + nameLen + zip.readUInt16LE(at + 28);
  if (zip.toString('utf8', at + LOCAL_SIZE, at + LOCAL_SIZE + nameLen) !== entry.name) {
    throw new ZipError(`entry ${entry.name}: the local header names another file`);
  }
  // Without a data descriptor the local header repeats the method, CRC and sizes: a package
  // whose two copies disagree was made to read differently by different readers.
  const local = {
    method: zip.readUInt16LE(at + 8),
    crc32: zip.readUInt32LE(at + 14),
    compressedSize: zip.readUInt32LE(at + 18),
    size: zip.readUInt32LE(at + 22),
  };
  if (
    local.method !== entry.method ||
    (!(entry.flags & FLAG_DATA_DESCRIPTOR) &&
      (local.crc32 !== entry.crc32 ||
        local.compressedSize !== entry.compressedSize ||
        local.size !== entry.size))
  ) {
    throw new ZipError(`entry ${entry.name}: the local header disagrees with the directory`);
  }
  const data = zip.subarray(start, start + entry.compressedSize);
  if (data.length !== entry.compressedSize) throw new ZipError(`entry ${entry.name} is truncated`);
  return data;
}

/** zlib's error of an inflate bounded at size + 1, in the reader's words. */
function inflateError(entry: ZipDirEntry, err: unknown): ZipError {
  if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') {
    return new ZipError(`entry ${entry.name} inflates to more than its declared size`);
  }
  return new ZipError(`entry ${entry.name} is not valid deflate data`);
}

function checked(entry: ZipDirEntry, out: Buffer): Buffer {
  if (out.length !== entry.size) {
    throw new ZipError(
      `entry ${entry.name} is ${out.length} bytes, not the declared ${entry.size}`,
    );
  }
  if (crc32(out) !== entry.crc32) throw new ZipError(`entry ${entry.name}: CRC-32 mismatch`);
  return out;
}

/**
 * One entry's content, inflated off the event loop: exactly its declared size and CRC-32,
 * never inflated past the size (one byte more than declared fails, having made at most
 * size + 1 bytes).
 * @throws ZipError naming what is wrong
 */
export async function zipRead(zip: Buffer, entry: ZipDirEntry): Promise<Buffer> {
  const data = packedData(zip, entry);
  if (entry.method === METHOD_STORED) return checked(entry, Buffer.from(data));
  let out: Buffer;
  try {
    out = await inflateRawAsync(data, { maxOutputLength: entry.size + 1 });
  } catch (err) {
    throw inflateError(entry, err);
  }
  return checked(entry, out);
}

/**
 * Every entry, name → content, with the same checks as zipEntries and zipRead, inflated on the
 * calling thread (for archives already bounded by `limits`: tests, small local files).
 * @throws ZipError naming what is wrong
 */
export function readZip(zip: Buffer, limits: ZipLimits = ZIP_READ_LIMITS): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const entry of zipEntries(zip, limits)) {
    const data = packedData(zip, entry);
    let content: Buffer;
    if (entry.method === METHOD_STORED) content = Buffer.from(data);
    else {
      try {
        content = inflateRawSync(data, { maxOutputLength: entry.size + 1 });
      } catch (err) {
        throw inflateError(entry, err);
      }
    }
    out.set(entry.name, checked(entry, content));
  }
  return out;
}

/**
 * A small, strict ZIP reader for firmware packages (PKWARE APPNOTE 4.3): the end of central
 * directory record, the central directory, and stored or deflated entries, all in one buffer.
 * A firmware package is a few small files, so anything else is refused rather than guessed at:
 * ZIP64, multi-disk archives, encryption, other compression methods, more than ZIP_MAX_ENTRIES
 * entries, duplicate names, an entry declared larger than ZIP_ENTRY_MAX_BYTES or entries
 * declared larger than ZIP_TOTAL_MAX_BYTES together. An entry is inflated (off the event loop)
 * to at most its declared size, and must be exactly that size with the declared CRC-32.
 *
 * Why not a maintained reader such as yauzl: it does not check CRC-32 (its documentation says
 * so), and what a package needs here (two entries of a buffer of at most 16 MiB, each bounded
 * and checked) is this file.
 */
import { promisify } from 'node:util';
import { crc32, inflateRaw } from 'node:zlib';

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

/** The most entries a package may have (a firmware package has three or four). */
export const ZIP_MAX_ENTRIES = 64;
/** The largest uncompressed size one entry may declare. */
export const ZIP_ENTRY_MAX_BYTES = 16 * 1024 * 1024;
/** The largest uncompressed size all entries together may declare. */
export const ZIP_TOTAL_MAX_BYTES = 16 * 1024 * 1024;

export interface ZipEntry {
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
export function zipEntries(zip: Buffer): ZipEntry[] {
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
  if (count > ZIP_MAX_ENTRIES) {
    throw new ZipError(`too many entries (${count}, at most ${ZIP_MAX_ENTRIES})`);
  }
  if (cdOffset + cdSize > eocd) throw new ZipError('the central directory is out of the file');

  const entries: ZipEntry[] = [];
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
    const entry: ZipEntry = {
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
    if (entry.size > ZIP_ENTRY_MAX_BYTES) {
      throw new ZipError(
        `entry ${entry.name} declares ${entry.size} bytes (at most ${ZIP_ENTRY_MAX_BYTES})`,
      );
    }
    total += entry.size;
    if (total > ZIP_TOTAL_MAX_BYTES) {
      throw new ZipError(`the entries declare more than ${ZIP_TOTAL_MAX_BYTES} bytes together`);
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

/**
 * One entry's content: exactly its declared size and CRC-32, never inflated past the size.
 * @throws ZipError naming what is wrong
 */
export async function zipRead(zip: Buffer, entry: ZipEntry): Promise<Buffer> {
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

  let out: Buffer;
  if (entry.method === METHOD_STORED) out = Buffer.from(data);
  else {
    try {
      // One byte more than declared: an entry that inflates past its size fails here, having
      // made at most size + 1 bytes.
      out = await inflateRawAsync(data, { maxOutputLength: entry.size + 1 });
    } catch (err) {
      if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') {
        throw new ZipError(`entry ${entry.name} inflates to more than its declared size`);
      }
      throw new ZipError(`entry ${entry.name} is not valid deflate data`);
    }
  }
  if (out.length !== entry.size) {
    throw new ZipError(
      `entry ${entry.name} is ${out.length} bytes, not the declared ${entry.size}`,
    );
  }
  if (crc32(out) !== entry.crc32) throw new ZipError(`entry ${entry.name}: CRC-32 mismatch`);
  return out;
}

/**
 * Ogg pages (RFC 3533) for Opus (RFC 7845): the reader takes ffmpeg's Ogg Opus output apart
 * into Opus packets (the sound going to the browser), the writer wraps the browser's
 * microphone packets for ffmpeg's decoder.
 *
 * Page: "OggS", version 0, header type (1 continued, 2 first, 4 last), granule position
 * (int64 LE), serial, page sequence, CRC32 (uint32 LE, computed with the field zeroed), segment
 * count, lacing values, data. A packet is the lacing values up to one below 255; a page that
 * ends on 255 continues the packet on the next page.
 */

const CAPTURE = Buffer.from('OggS');
const HEADER_BYTES = 27;
/** The largest page: header, 255 lacing values, 255 segments of 255 bytes. */
export const MAX_PAGE_BYTES = HEADER_BYTES + 255 + 255 * 255;
/** A packet spanning pages longer than this is dropped (Opus packets are at most 1275 bytes per frame). */
const MAX_PACKET_BYTES = 64 * 1024;
const FLAG_CONTINUED = 0x01;
const FLAG_BOS = 0x02;

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let i = 0; i < 256; i += 1) {
    let r = i << 24;
    for (let j = 0; j < 8; j += 1) r = r & 0x80000000 ? (r << 1) ^ 0x04c11db7 : r << 1;
    table[i] = r >>> 0;
  }
  return table;
})();

/** Ogg's CRC32: polynomial 0x04C11DB7, initial 0, not reflected, no final xor. */
export function oggCrc(buf: Uint8Array): number {
  let crc = 0;
  for (const b of buf) crc = ((crc << 8) ^ CRC_TABLE[((crc >>> 24) ^ b) & 0xff]!) >>> 0;
  return crc;
}

export interface OggReaderStats {
  pages: number;
  packets: number;
  /** Pages refused: bad CRC or version, or bytes skipped to find the next page. */
  badPages: number;
}

/**
 * Streaming page reader: `push` ffmpeg's stdout as it comes, get the Opus packets back. The
 * two header packets (OpusHead, OpusTags) are skipped; a new first page (ffmpeg restarted)
 * starts over. Memory is bounded to about one page.
 */
export class OggOpusReader {
  private buf: Buffer = Buffer.alloc(0);
  private partial: Buffer[] = [];
  private partialBytes = 0;
  /** Header packets still to skip in the current stream. */
  private headers = 2;
  readonly stats: OggReaderStats = { pages: 0, packets: 0, badPages: 0 };

  /** Takes bytes, returns the complete Opus packets they finish. */
  push(data: Buffer): Buffer[] {
    this.buf = this.buf.length ? Buffer.concat([this.buf, data]) : data;
    const out: Buffer[] = [];
    for (;;) {
      const start = this.buf.indexOf(CAPTURE);
      if (start < 0) {
        // keep a possible start of "OggS" only
        this.buf = this.buf.subarray(Math.max(0, this.buf.length - 3));
        break;
      }
      if (start > 0) {
        this.stats.badPages += 1;
        this.dropPartial();
        this.buf = this.buf.subarray(start);
      }
      if (this.buf.length < HEADER_BYTES) break;
      const segments = this.buf[26]!;
      const headerLen = HEADER_BYTES + segments;
      if (this.buf.length < headerLen) break;
      let bodyLen = 0;
      for (let i = 0; i < segments; i += 1) bodyLen += this.buf[HEADER_BYTES + i]!;
      const pageLen = headerLen + bodyLen;
      if (this.buf.length < pageLen) break;
      const page = this.buf.subarray(0, pageLen);
      this.buf = this.buf.subarray(pageLen);
      if (!validPage(page)) {
        // not a page after all: look for the next capture pattern past this one
        this.stats.badPages += 1;
        this.dropPartial();
        this.buf = Buffer.concat([page.subarray(1), this.buf]);
        continue;
      }
      this.stats.pages += 1;
      this.page(page, segments, out);
    }
    // the unparsed tail is copied so the pushed chunk is not held
    this.buf = Buffer.from(this.buf);
    return out;
  }

  private page(page: Buffer, segments: number, out: Buffer[]): void {
    const flags = page[5]!;
    if (flags & FLAG_BOS) {
      this.headers = 2;
      this.dropPartial();
    }
    // a continuation without the start of its packet: its first packet is incomplete
    let skipFirst = (flags & FLAG_CONTINUED) !== 0 && this.partialBytes === 0;
    if (!(flags & FLAG_CONTINUED)) this.dropPartial();
    let off = HEADER_BYTES + segments;
    for (let i = 0; i < segments; i += 1) {
      const len = page[HEADER_BYTES + i]!;
      if (len > 0) {
        this.partial.push(page.subarray(off, off + len));
        this.partialBytes += len;
        off += len;
      }
      if (len === 255) {
        if (this.partialBytes > MAX_PACKET_BYTES) {
          this.dropPartial();
          skipFirst = true;
        }
        continue;
      }
      const packet = Buffer.concat(this.partial, this.partialBytes);
      this.partial = [];
      this.partialBytes = 0;
      if (skipFirst) {
        skipFirst = false;
        continue;
      }
      if (this.headers > 0 && isOpusHeader(packet)) {
        this.headers -= 1;
        continue;
      }
      this.stats.packets += 1;
      out.push(packet);
    }
    // a packet continuing on the next page keeps its bytes, copied off the page
    if (this.partial.length) this.partial = [Buffer.concat(this.partial, this.partialBytes)];
  }

  private dropPartial(): void {
    this.partial = [];
    this.partialBytes = 0;
  }
}

function validPage(page: Buffer): boolean {
  if (page[4] !== 0) return false;
  const crc = page.readUInt32LE(22);
  const copy = Buffer.from(page);
  copy.writeUInt32LE(0, 22);
  return oggCrc(copy) === crc;
}

function isOpusHeader(packet: Buffer): boolean {
  if (packet.length < 8) return false;
  const magic = packet.toString('latin1', 0, 8);
  return magic === 'OpusHead' || magic === 'OpusTags';
}

/** One Ogg page: header type flags, granule position, the packets it holds whole. */
export function oggPage(
  serial: number,
  sequence: number,
  flags: number,
  granule: bigint,
  packets: readonly Buffer[],
): Buffer {
  const lacing: number[] = [];
  for (const p of packets) {
    for (let n = p.length; ; n -= 255) {
      lacing.push(Math.min(n, 255));
      if (n < 255) break;
    }
  }
  if (lacing.length > 255) throw new RangeError('packets too large for one Ogg page');
  const header = Buffer.alloc(HEADER_BYTES + lacing.length);
  CAPTURE.copy(header, 0);
  header[4] = 0;
  header[5] = flags;
  header.writeBigInt64LE(granule, 6);
  header.writeUInt32LE(serial >>> 0, 14);
  header.writeUInt32LE(sequence >>> 0, 18);
  header[26] = lacing.length;
  Buffer.from(lacing).copy(header, HEADER_BYTES);
  const page = Buffer.concat([header, ...packets]);
  page.writeUInt32LE(oggCrc(page), 22);
  return page;
}

/** OpusHead (RFC 7845 5.1): version 1, channels, pre-skip, input rate, gain 0, family 0. */
export function opusHead(channels: number, preSkip: number, inputRate: number): Buffer {
  const b = Buffer.alloc(19);
  b.write('OpusHead', 0, 'latin1');
  b[8] = 1;
  b[9] = channels;
  b.writeUInt16LE(preSkip, 10);
  b.writeUInt32LE(inputRate, 12);
  b.writeInt16LE(0, 16);
  b[18] = 0;
  return b;
}

/** OpusTags (RFC 7845 5.2) with a vendor string and no comments. */
export function opusTags(vendor: string): Buffer {
  const v = Buffer.from(vendor, 'utf8');
  const b = Buffer.alloc(8 + 4 + v.length + 4);
  b.write('OpusTags', 0, 'latin1');
  b.writeUInt32LE(v.length, 8);
  v.copy(b, 12);
  b.writeUInt32LE(0, 12 + v.length);
  return b;
}

/**
 * Ogg Opus writer for the microphone: the two header pages, then one page per packet so
 * ffmpeg can decode each as soon as it arrives. Granule positions count 48 kHz samples.
 */
export class OggOpusWriter {
  private sequence = 0;
  private granule = 0n;

  constructor(
    private readonly serial: number,
    private readonly channels = 2,
  ) {}

  /** OpusHead page (first of the stream) and OpusTags page. */
  headers(): Buffer {
    // pre-skip 0: the browser's encoder already started, nothing to trim
    const head = oggPage(this.serial, this.sequence++, FLAG_BOS, 0n, [
      opusHead(this.channels, 0, 48000),
    ]);
    const tags = oggPage(this.serial, this.sequence++, 0, 0n, [opusTags('kvm')]);
    return Buffer.concat([head, tags]);
  }

  /** One packet of `samples` 48 kHz samples on its own page. */
  packet(data: Buffer, samples: number): Buffer {
    this.granule += BigInt(samples);
    return oggPage(this.serial, this.sequence++, 0, this.granule, [data]);
  }
}

/**
 * Access units out of ffmpeg's NUT muxer (the H.265 encoder's output, hevc-encoder.ts).
 *
 * Why NUT: ffmpeg 5.1's FLV muxer refuses HEVC ("not compatible with flv", enhanced FLV came
 * in 6.1), IVF takes only VP8/VP9/AV1, and MP4 (fragmented), Matroska and AVI were measured
 * here to hold each frame until the next one arrives (one frame of delay). A raw `-f hevc`
 * stream has no frame boundary before the next frame either. NUT writes each frame at once,
 * with its size in front (measured: out 25-40 ms after the frame went in, like raw H.265).
 *
 * The format (ffmpeg's doc/nut.texi, version 3 as ffmpeg writes it by default):
 *   file id "nut/multimedia container\0", then packets and frames;
 *   a packet: 8-byte startcode beginning with 'N' (0x4E), forward_ptr (v), a header checksum
 *     (u32) when forward_ptr > 4096, then forward_ptr bytes (the last 4 a checksum). The main
 *     header's packet holds the frame code table; stream headers, syncpoints, info and index
 *     packets are skipped;
 *   a frame: frame_code (u8, never 'N'), the fields its flags ask for, then the data (with the
 *     elided header of header_idx in front).
 * v: unsigned, 7 bits a byte, high bit = more bytes follow; s: signed, zigzag of v.
 * Checksums are not verified: the bytes come from our own ffmpeg through a pipe.
 */

export class NutFormatError extends Error {}

const FILE_ID = Buffer.from('nut/multimedia container\0', 'latin1');
const MAIN_STARTCODE = 0x4e4d7a561f5f04adn;

/** Frame flags (nut.texi "frame_flags"). */
const FLAG_KEY = 1;
const FLAG_CODED_PTS = 8;
const FLAG_STREAM_ID = 16;
const FLAG_SIZE_MSB = 32;
const FLAG_CHECKSUM = 64;
const FLAG_RESERVED = 128;
const FLAG_SM_DATA = 256;
const FLAG_HEADER_IDX = 1024;
const FLAG_MATCH_TIME = 2048;
const FLAG_CODED = 4096;
const FLAG_INVALID = 8192;
const N = 0x4e;

interface FrameCode {
  flags: number;
  streamId: number;
  sizeMul: number;
  sizeLsb: number;
  reserved: number;
  headerIdx: number;
}

/** Thrown inside a parse that ran out of bytes: it is tried again with the next chunk. */
const MORE = Symbol('more');

class Cursor {
  constructor(
    readonly buf: Buffer,
    public pos: number,
    readonly end = buf.length,
  ) {}

  u8(): number {
    if (this.pos >= this.end) throw MORE;
    return this.buf[this.pos++]!;
  }

  v(): number {
    let value = 0;
    for (let i = 0; i < 9; i += 1) {
      const b = this.u8();
      value = value * 128 + (b & 0x7f);
      if ((b & 0x80) === 0) return value;
    }
    throw new NutFormatError('variable-length number too long');
  }

  s(): number {
    const t = this.v() + 1;
    return t % 2 === 1 ? -(t - 1) / 2 : t / 2;
  }

  skip(n: number): void {
    if (this.pos + n > this.end) throw MORE;
    this.pos += n;
  }

  bytes(n: number): Buffer {
    this.skip(n);
    return this.buf.subarray(this.pos - n, this.pos);
  }
}

export class NutReader {
  private buf: Buffer = Buffer.alloc(0);
  private started = false;
  private codes: FrameCode[] | null = null;
  private headers: Buffer[] = [Buffer.alloc(0)];

  constructor(private readonly onUnit: (unit: { data: Buffer; key: boolean }) => void) {}

  /** Takes the next bytes of the stream; every whole frame in them is handed on. */
  push(chunk: Buffer): void {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    let pos = 0;
    try {
      if (!this.started) {
        if (this.buf.length < FILE_ID.length) return;
        if (!this.buf.subarray(0, FILE_ID.length).equals(FILE_ID)) {
          throw new NutFormatError('not a NUT stream');
        }
        this.started = true;
        pos = FILE_ID.length;
      }
      for (;;) {
        const c = new Cursor(this.buf, pos);
        if (c.pos >= c.end) break;
        if (this.buf[c.pos] === N) this.packet(c);
        else this.frame(c);
        pos = c.pos;
      }
    } catch (err) {
      if (err !== MORE) throw err;
    }
    this.buf = pos >= this.buf.length ? Buffer.alloc(0) : this.buf.subarray(pos);
  }

  private packet(c: Cursor): void {
    const code = c.bytes(8).readBigUInt64BE(0);
    const forward = c.v();
    if (forward > 4096) c.skip(4);
    const body = new Cursor(c.buf, c.pos, c.pos + forward);
    c.skip(forward);
    if (code === MAIN_STARTCODE) this.mainHeader(body);
  }

  private mainHeader(c: Cursor): void {
    const guard = (): never => {
      throw new NutFormatError('truncated main header');
    };
    try {
      const version = c.v();
      if (version > 3) c.v(); // minor version
      c.v(); // stream count
      c.v(); // max distance
      const timeBases = c.v();
      // numerator and denominator of each time base
      for (let i = 0; i < timeBases * 2; i += 1) c.v();
      const codes: FrameCode[] = [];
      let mul = 1;
      let stream = 0;
      let headerIdx = 0;
      while (codes.length < 256) {
        const flags = c.v();
        const fields = c.v();
        if (fields > 0) c.s(); // pts delta
        if (fields > 1) mul = c.v();
        if (fields > 2) stream = c.v();
        const size = fields > 3 ? c.v() : 0;
        const reserved = fields > 4 ? c.v() : 0;
        const count = fields > 5 ? c.v() : mul - size;
        if (fields > 6) c.s(); // match time delta
        if (fields > 7) headerIdx = c.v();
        for (let f = 8; f < fields; f += 1) c.v();
        if (count <= 0 && codes.length !== N) throw new NutFormatError('bad frame code table');
        for (let j = 0; j < count && codes.length < 256; j += 1) {
          if (codes.length === N) {
            codes.push({
              flags: FLAG_INVALID,
              streamId: 0,
              sizeMul: 1,
              sizeLsb: 0,
              reserved: 0,
              headerIdx: 0,
            });
            j -= 1;
            continue;
          }
          codes.push({
            flags,
            streamId: stream,
            sizeMul: mul,
            sizeLsb: size + j,
            reserved,
            headerIdx,
          });
        }
      }
      const headers = [Buffer.alloc(0)];
      if (c.end > c.pos + 4) {
        const count = c.v() + 1;
        for (let i = 1; i < count; i += 1) headers.push(Buffer.from(c.bytes(c.v())));
      }
      this.codes = codes;
      this.headers = headers;
    } catch (err) {
      if (err === MORE) guard();
      throw err;
    }
  }

  private frame(c: Cursor): void {
    const codes = this.codes;
    if (!codes) throw new NutFormatError('frame before the main header');
    const code = codes[c.u8()]!;
    let flags = code.flags;
    if (flags & FLAG_INVALID) throw new NutFormatError('invalid frame code');
    if (flags & FLAG_CODED) flags ^= c.v();
    if (flags & FLAG_STREAM_ID) c.v();
    if (flags & FLAG_CODED_PTS) c.v();
    let size = code.sizeLsb;
    if (flags & FLAG_SIZE_MSB) size += code.sizeMul * c.v();
    if (flags & FLAG_MATCH_TIME) c.s();
    let headerIdx = code.headerIdx;
    if (flags & FLAG_HEADER_IDX) headerIdx = c.v();
    const reserved = flags & FLAG_RESERVED ? c.v() : code.reserved;
    for (let i = 0; i < reserved; i += 1) c.v();
    if (flags & FLAG_CHECKSUM) c.skip(4);
    if (flags & FLAG_SM_DATA) throw new NutFormatError('side data is not supported');
    if (size > 4096) headerIdx = 0;
    const header = this.headers[headerIdx];
    if (!header) throw new NutFormatError(`no elision header ${headerIdx}`);
    const data = c.bytes(size - header.length);
    this.onUnit({
      data: header.length > 0 ? Buffer.concat([header, data]) : Buffer.from(data),
      key: (flags & FLAG_KEY) !== 0,
    });
  }
}

/**
 * Reads ffmpeg's FLV output into H.264 access units. FLV frames every packet with its size,
 * so an access unit is complete the moment its tag is, with no wait for the next start code:
 * a raw `-f h264` stream only shows where a unit ends when the next one begins, one whole
 * frame later (architecture.md: group by structure, never by read() boundaries).
 *
 * FLV (Adobe FLV spec v10, annex E): header 'FLV' ver flags u32 headerSize, then
 * [u32 prevTagSize][tag]...; tag = u8 type, u24 dataSize, u24 ts, u8 tsExt, u24 streamId, data.
 * Video data (type 9): u8 frameType<<4|codecId (7 = AVC), u8 AVCPacketType (0 config record,
 * 1 NAL units, 2 end of sequence), s24 composition time, then for type 1 NAL units each
 * prefixed with a 4-byte big-endian length (AVCC).
 */
import { NalType } from './annexb';

export interface FlvUnit {
  /** Annex B access unit (4-byte start codes), SPS and PPS in front when it is a key frame. */
  data: Buffer;
  key: boolean;
  /** FLV timestamp, ms. */
  ts: number;
}

const START = Buffer.from([0, 0, 0, 1]);

/**
 * A tag larger than this is not ffmpeg's: x264's VBV buffer (`-bufsize`, at most the 20 Mbit/s
 * of STREAMER_LIMITS, 2.5 MB) bounds every frame. Without it a garbage size field would make
 * the reader buffer up to 16 MiB per tag.
 */
export const MAX_TAG_BYTES = 8 * 1024 * 1024;

export class FlvReader {
  private buf: Buffer = Buffer.alloc(0);
  private headerDone = false;
  private sps: Buffer[] = [];
  private pps: Buffer[] = [];

  constructor(private readonly onUnit: (unit: FlvUnit) => void) {}

  /** Feeds bytes as they arrive; calls onUnit for every complete video tag. */
  push(chunk: Buffer): void {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    let off = 0;
    if (!this.headerDone) {
      if (this.buf.length < 13) return;
      if (this.buf.toString('latin1', 0, 3) !== 'FLV') throw new Error('not an FLV stream');
      off = this.buf.readUInt32BE(5) + 4; // header, then PreviousTagSize0
      this.headerDone = true;
    }
    while (this.buf.length - off >= 11) {
      const type = this.buf[off]!;
      const size = this.buf.readUIntBE(off + 1, 3);
      if (size > MAX_TAG_BYTES) throw new Error(`FLV tag of ${size} bytes`);
      const total = 11 + size + 4;
      if (this.buf.length - off < total) break;
      // Every tag is followed by its own size (spec: PreviousTagSize): anything else means the
      // stream is not FLV any more, and reading on would turn garbage into units.
      if (this.buf.readUInt32BE(off + 11 + size) !== 11 + size)
        throw new Error('FLV tag size mismatch');
      const ts = this.buf.readUIntBE(off + 4, 3) | (this.buf[off + 7]! << 24);
      if (type === 9) this.videoTag(this.buf.subarray(off + 11, off + 11 + size), ts >>> 0);
      off += total;
    }
    this.buf = off >= this.buf.length ? Buffer.alloc(0) : Buffer.from(this.buf.subarray(off));
  }

  private videoTag(data: Buffer, ts: number): void {
    if (data.length < 5 || (data[0]! & 0x0f) !== 7) return;
    const packetType = data[1]!;
    if (packetType === 0) {
      this.readConfig(data.subarray(5));
      return;
    }
    if (packetType !== 1) return;
    const nals: Buffer[] = [];
    let p = 5;
    while (p + 4 <= data.length) {
      const len = data.readUInt32BE(p);
      p += 4;
      if (len === 0 || p + len > data.length) break;
      nals.push(data.subarray(p, p + len));
      p += len;
    }
    const key = nals.some((n) => (n[0]! & 0x1f) === NalType.sliceIdr);
    for (const nal of nals) {
      const t = nal[0]! & 0x1f;
      if (t === NalType.sps) this.sps = [Buffer.from(nal)];
      if (t === NalType.pps) this.pps = [Buffer.from(nal)];
    }
    const parts: Buffer[] = [];
    // A key unit starts with its parameter sets (kvmd-media's head bytes: 00 00 00 01 27/67),
    // so any viewer can start on it.
    if (key) for (const ps of [...this.sps, ...this.pps]) parts.push(START, ps);
    for (const nal of nals) {
      const t = nal[0]! & 0x1f;
      if (t === NalType.aud || t === NalType.sps || t === NalType.pps) continue;
      parts.push(START, nal);
    }
    if (parts.length) this.onUnit({ data: Buffer.concat(parts), key, ts });
  }

  /** AVCDecoderConfigurationRecord (ISO/IEC 14496-15 5.2.4.1): the SPS and PPS. */
  private readConfig(rec: Buffer): void {
    if (rec.length < 7) return;
    let p = 5;
    const numSps = rec[p]! & 0x1f;
    p += 1;
    const sps: Buffer[] = [];
    for (let i = 0; i < numSps && p + 2 <= rec.length; i += 1) {
      const len = rec.readUInt16BE(p);
      sps.push(Buffer.from(rec.subarray(p + 2, p + 2 + len)));
      p += 2 + len;
    }
    const numPps = rec[p] ?? 0;
    p += 1;
    const pps: Buffer[] = [];
    for (let i = 0; i < numPps && p + 2 <= rec.length; i += 1) {
      const len = rec.readUInt16BE(p);
      pps.push(Buffer.from(rec.subarray(p + 2, p + 2 + len)));
      p += 2 + len;
    }
    if (sps.length) this.sps = sps;
    if (pps.length) this.pps = pps;
  }
}

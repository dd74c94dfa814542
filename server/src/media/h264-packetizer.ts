/**
 * H.264 access units → RTP packets (RFC 6184, packetization-mode=1).
 *
 * - a NAL unit that fits is sent as it is (single NAL unit packet, 5.6);
 * - runs of small NAL units (SPS + PPS, the small slices of a static screen) are aggregated
 *   into STAP-A packets (5.7.1);
 * - a NAL unit larger than the payload budget is split into FU-A fragments (5.8).
 * The marker bit is set on the last packet of the access unit (5.1). The sequence number
 * belongs to the packetizer, not to the encoder, so it stays continuous when the encoder
 * restarts; timestamps are the 90 kHz clock of the access unit, wrapped to 32 bits.
 *
 * RTP fixed header (RFC 3550 5.1), 12 bytes, no CSRC, no extension:
 *   0: V=2 P=0 X=0 CC=0 → 0x80 | 1: M | PT(7) | 2-3: sequence | 4-7: timestamp | 8-11: SSRC
 */
import { NalType, nalType, splitNalUnits } from './annexb';

/** Conservative payload budget: 1200 + RTP/SRTP/UDP/IPv6 headers stays under 1280 bytes. */
export const DEFAULT_MAX_PAYLOAD = 1200;
export const RTP_HEADER_SIZE = 12;

export interface H264PacketizerOptions {
  payloadType: number;
  ssrc: number;
  /** Largest RTP payload in bytes, header excluded. */
  maxPayload?: number;
  /** First sequence number; random by default (RFC 3550 5.1). */
  initialSequence?: number;
  /** Aggregate consecutive small NAL units into STAP-A packets (default true). */
  stapA?: boolean;
}

/**
 * What RFC 6184 (H.264) and RFC 7798 (H.265) payloading share: the RTP header, the sequence
 * number, single NAL unit packets, greedy aggregation of small NAL units while the budget
 * allows, fragmentation of the large ones, and the marker on the access unit's last packet. A
 * subclass gives which NAL units are sent, the aggregation packet and the fragments.
 */
export abstract class NalPacketizer {
  readonly payloadType: number;
  readonly ssrc: number;
  readonly maxPayload: number;
  private readonly aggregation: boolean;
  private seq: number;

  /** `aggregationHeader`: the bytes in front of an aggregation packet's first size field. */
  protected constructor(
    opts: { payloadType: number; ssrc: number; maxPayload?: number; initialSequence?: number },
    aggregation: boolean,
    private readonly aggregationHeader: number,
  ) {
    this.payloadType = opts.payloadType & 0x7f;
    this.ssrc = opts.ssrc >>> 0;
    this.maxPayload = opts.maxPayload ?? DEFAULT_MAX_PAYLOAD;
    this.aggregation = aggregation;
    this.seq = (opts.initialSequence ?? Math.floor(Math.random() * 0x10000)) & 0xffff;
  }

  /** The sequence number the next packet will carry. */
  get nextSequence(): number {
    return this.seq;
  }

  /**
   * Packetizes one access unit given in Annex B. Access unit delimiters and filler data are
   * not sent (they carry nothing a WebRTC receiver needs).
   */
  packetizeAnnexB(accessUnit: Buffer, timestamp90k: number): Buffer[] {
    return this.packetize(splitNalUnits(accessUnit), timestamp90k);
  }

  /** Packetizes the NAL units (without start codes) of one access unit. */
  packetize(nals: readonly Uint8Array[], timestamp90k: number): Buffer[] {
    const units = nals.filter((nal) => this.sendable(nal));
    const ts = wrap32(timestamp90k);
    const out: Buffer[] = [];
    let i = 0;
    while (i < units.length) {
      const nal = units[i]!;
      if (this.aggregation) {
        // [aggregation header][size:u16][NAL]... while the budget allows
        let size = this.aggregationHeader;
        let j = i;
        while (j < units.length && size + 2 + units[j]!.length <= this.maxPayload) {
          size += 2 + units[j]!.length;
          j += 1;
        }
        if (j - i >= 2) {
          out.push(this.aggregate(units.slice(i, j), size, ts));
          i = j;
          continue;
        }
      }
      if (nal.length <= this.maxPayload) out.push(this.single(nal, ts));
      else this.fragment(nal, ts, out);
      i += 1;
    }
    const last = out[out.length - 1];
    if (last) last[1] = last[1]! | 0x80;
    return out;
  }

  /** Whether a NAL unit is sent at all. */
  protected abstract sendable(nal: Uint8Array): boolean;
  /** One aggregation packet of `nals`, its payload `size` bytes. */
  protected abstract aggregate(nals: readonly Uint8Array[], size: number, ts: number): Buffer;
  /** The fragments of a NAL unit larger than the budget, pushed onto `out`. */
  protected abstract fragment(nal: Uint8Array, ts: number, out: Buffer[]): void;

  /** A packet with its RTP header written and room for `payloadLength` bytes after it. */
  protected header(payloadLength: number, ts: number): Buffer {
    const pkt = Buffer.allocUnsafe(RTP_HEADER_SIZE + payloadLength);
    pkt[0] = 0x80;
    pkt[1] = this.payloadType;
    pkt.writeUInt16BE(this.seq, 2);
    pkt.writeUInt32BE(ts, 4);
    pkt.writeUInt32BE(this.ssrc, 8);
    this.seq = (this.seq + 1) & 0xffff;
    return pkt;
  }

  private single(nal: Uint8Array, ts: number): Buffer {
    const pkt = this.header(nal.length, ts);
    pkt.set(nal, RTP_HEADER_SIZE);
    return pkt;
  }
}

export class H264Packetizer extends NalPacketizer {
  constructor(opts: H264PacketizerOptions) {
    // Greedy STAP-A: a 1-byte STAP-A NAL header in front
    super(opts, opts.stapA ?? true, 1);
    if (this.maxPayload < 3) throw new RangeError('maxPayload must leave room for FU-A data');
  }

  protected sendable(nal: Uint8Array): boolean {
    return isSendable(nal);
  }

  protected aggregate(nals: readonly Uint8Array[], size: number, ts: number): Buffer {
    const pkt = this.header(size, ts);
    // STAP-A NAL header: F = OR of the F bits, NRI = the highest NRI (RFC 6184 5.7.1).
    let f = 0;
    let nri = 0;
    for (const nal of nals) {
      f |= nal[0]! & 0x80;
      nri = Math.max(nri, nal[0]! & 0x60);
    }
    pkt[RTP_HEADER_SIZE] = f | nri | NalType.stapA;
    return writeAggregated(pkt, nals, RTP_HEADER_SIZE + 1);
  }

  protected fragment(nal: Uint8Array, ts: number, out: Buffer[]): void {
    // FU indicator: F and NRI of the NAL, type 28; FU header: S | E | R=0 | NAL type.
    const indicator = (nal[0]! & 0xe0) | NalType.fuA;
    const type = nal[0]! & 0x1f;
    const chunk = this.maxPayload - 2;
    for (let o = 1; o < nal.length; o += chunk) {
      const end = Math.min(o + chunk, nal.length);
      const pkt = this.header(2 + end - o, ts);
      pkt[RTP_HEADER_SIZE] = indicator;
      pkt[RTP_HEADER_SIZE + 1] = (o === 1 ? 0x80 : 0) | (end === nal.length ? 0x40 : 0) | type;
      pkt.set(nal.subarray(o, end), RTP_HEADER_SIZE + 2);
      out.push(pkt);
    }
  }
}

function isSendable(nal: Uint8Array): boolean {
  const type = nalType(nal);
  // 0 and 24-31 never appear in a valid Annex B stream; 9 AUD and 12 filler are not sent.
  return nal.length > 0 && type !== 0 && type < 24 && type !== NalType.aud && type !== 12;
}

function wrap32(ts: number): number {
  const t = Math.round(ts) % 0x1_0000_0000;
  return t < 0 ? t + 0x1_0000_0000 : t;
}

/** An aggregation packet's units after its header: [size:u16][NAL]... from `offset`. */
export function writeAggregated(pkt: Buffer, nals: readonly Uint8Array[], offset: number): Buffer {
  let o = offset;
  for (const nal of nals) {
    pkt.writeUInt16BE(nal.length, o);
    pkt.set(nal, o + 2);
    o += 2 + nal.length;
  }
  return pkt;
}

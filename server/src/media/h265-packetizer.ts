/**
 * H.265 access units → RTP packets (RFC 7798, sprop-max-don-diff=0: no DONL fields,
 * tx-mode=SRST: one RTP stream).
 *
 * - a NAL unit that fits is sent as it is (single NAL unit packet, 4.4.1): its own 2-byte NAL
 *   header is the payload header;
 * - runs of small NAL units (VPS + SPS + PPS + SEI in front of an IRAP, the small slices of a
 *   static screen) go into aggregation packets (AP, type 48, 4.4.2):
 *     PayloadHdr (F = OR of the F bits, Type 48, LayerId and TID the lowest of the units)
 *     then [NALU size: u16][NAL unit] per unit, at least two units;
 * - a NAL unit larger than the payload budget is split into fragmentation units (FU, type 49,
 *   4.4.3): PayloadHdr (F, LayerId and TID of the NAL unit, Type 49), FU header
 *   S(1) | E(1) | FuType(6) = the NAL unit's type, then the NAL unit's bytes after its 2-byte
 *   header.
 * The marker bit is set on the last packet of the access unit (4.1). Sequence numbers belong to
 * the packetizer (continuous across encoder restarts); timestamps are 90 kHz, wrapped to 32 bits.
 * The RTP fixed header is h264-packetizer.ts's (RFC 3550 5.1, 12 bytes).
 */
import { NalPacketizer, RTP_HEADER_SIZE, writeAggregated } from './h264-packetizer';
import { HevcNalType, hevcLayerId, hevcNalType, hevcTid } from './hevc';

export interface H265PacketizerOptions {
  payloadType: number;
  ssrc: number;
  /** Largest RTP payload in bytes, header excluded. */
  maxPayload?: number;
  /** First sequence number; random by default (RFC 3550 5.1). */
  initialSequence?: number;
  /** Aggregate consecutive small NAL units into APs (default true). */
  aggregate?: boolean;
}

/** PayloadHdr (2) + FU header (1) in front of each fragment's data. */
const FU_OVERHEAD = 3;
/** PayloadHdr of an AP. */
const AP_HEADER = 2;

export class H265Packetizer extends NalPacketizer {
  constructor(opts: H265PacketizerOptions) {
    // APs: the 2-byte PayloadHdr in front
    super(opts, opts.aggregate ?? true, AP_HEADER);
    if (this.maxPayload < FU_OVERHEAD + 1) {
      throw new RangeError('maxPayload must leave room for FU data');
    }
  }

  protected sendable(nal: Uint8Array): boolean {
    return isSendable(nal);
  }

  protected aggregate(nals: readonly Uint8Array[], size: number, ts: number): Buffer {
    const pkt = this.header(size, ts);
    let f = 0;
    let layer = 63;
    let tid = 7;
    for (const nal of nals) {
      f |= nal[0]! & 0x80;
      layer = Math.min(layer, hevcLayerId(nal));
      tid = Math.min(tid, hevcTid(nal));
    }
    writePayloadHeader(pkt, f, HevcNalType.ap, layer, tid);
    return writeAggregated(pkt, nals, RTP_HEADER_SIZE + AP_HEADER);
  }

  protected fragment(nal: Uint8Array, ts: number, out: Buffer[]): void {
    const type = hevcNalType(nal);
    const chunk = this.maxPayload - FU_OVERHEAD;
    for (let o = 2; o < nal.length; o += chunk) {
      const end = Math.min(o + chunk, nal.length);
      const pkt = this.header(FU_OVERHEAD + end - o, ts);
      writePayloadHeader(pkt, nal[0]! & 0x80, HevcNalType.fu, hevcLayerId(nal), hevcTid(nal));
      pkt[RTP_HEADER_SIZE + 2] = (o === 2 ? 0x80 : 0) | (end === nal.length ? 0x40 : 0) | type;
      pkt.set(nal.subarray(o, end), RTP_HEADER_SIZE + FU_OVERHEAD);
      out.push(pkt);
    }
  }
}

/** F | Type(6) | LayerId(6) | TID(3) after the RTP header. */
function writePayloadHeader(
  pkt: Buffer,
  f: number,
  type: number,
  layer: number,
  tid: number,
): void {
  pkt[RTP_HEADER_SIZE] = f | (type << 1) | (layer >> 5);
  pkt[RTP_HEADER_SIZE + 1] = ((layer & 0x1f) << 3) | tid;
}

function isSendable(nal: Uint8Array): boolean {
  // a NAL unit needs its 2-byte header; 48-63 are RTP structures / unspecified, never sent
  // from a byte stream; AUD and filler data carry nothing a receiver needs
  if (nal.length < 3) return false;
  const type = hevcNalType(nal);
  return type < HevcNalType.ap && type !== HevcNalType.aud && type !== HevcNalType.fd;
}

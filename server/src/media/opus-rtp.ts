/**
 * Opus over RTP (RFC 7587 on RFC 3550): one Opus packet per RTP packet, the timestamp in
 * 48 kHz samples whatever the coded bandwidth, each packet's duration read from its TOC byte
 * (RFC 6716 3.1).
 */
import { AUDIO_FORMAT } from '@kvm/protocol';

const RTP_HEADER_BYTES = 12;
/** RFC 6716 3.1: frame sizes in 48 kHz samples by configuration (SILK, Hybrid, CELT). */
const SILK_SAMPLES = [480, 960, 1920, 2880];
const HYBRID_SAMPLES = [480, 960];
const CELT_SAMPLES = [120, 240, 480, 960];
/** RFC 6716 3.2.5: a packet holds at most 120 ms of audio. */
const MAX_PACKET_SAMPLES = 5760;

/** 48 kHz samples in one Opus packet, or null when its TOC (and frame count) is invalid. */
export function opusPacketSamples(packet: Uint8Array): number | null {
  if (packet.length < 1) return null;
  const toc = packet[0]!;
  const config = toc >> 3;
  const frame =
    config < 12
      ? SILK_SAMPLES[config % 4]!
      : config < 16
        ? HYBRID_SAMPLES[config % 2]!
        : CELT_SAMPLES[config % 4]!;
  let frames: number;
  switch (toc & 0x03) {
    case 0:
      frames = 1;
      break;
    case 1:
    case 2:
      frames = 2;
      break;
    default:
      if (packet.length < 2) return null;
      frames = packet[1]! & 0x3f;
      if (frames === 0) return null;
  }
  const samples = frame * frames;
  return samples > MAX_PACKET_SAMPLES ? null : samples;
}

export interface OpusPacketizerOptions {
  ssrc: number;
  payloadType?: number;
  /** First sequence number and timestamp; random when left out (RFC 3550 5.1). */
  sequence?: number;
  timestamp?: number;
}

/**
 * Writes RTP packets for one sender (one SSRC): sequence +1 per packet, timestamp + the
 * previous packet's samples, marker on the first packet of a talkspurt (the first packet, and
 * the first after `resume`).
 */
export class OpusPacketizer {
  private sequence: number;
  private timestamp: number;
  private readonly payloadType: number;
  private nextSamples = 0;
  private marker = true;

  constructor(private readonly opts: OpusPacketizerOptions) {
    this.payloadType = opts.payloadType ?? AUDIO_FORMAT.payloadType;
    this.sequence = (opts.sequence ?? randomUint(16)) & 0xffff;
    this.timestamp = (opts.timestamp ?? randomUint(32)) >>> 0;
  }

  /**
   * The sound resumes after a gap (the encoder restarted): the next packet is marked and its
   * timestamp advances by the gap's samples too, so the receiver's clock stays with ours.
   */
  resume(gapSamples: number): void {
    this.marker = true;
    this.nextSamples += Math.max(0, Math.round(gapSamples));
  }

  /** One RTP packet for `opus`, or null when it is not a valid Opus packet. */
  packetize(opus: Buffer): Buffer | null {
    const samples = opusPacketSamples(opus);
    if (samples === null) return null;
    this.timestamp = (this.timestamp + this.nextSamples) >>> 0;
    this.nextSamples = samples;
    const out = Buffer.allocUnsafe(RTP_HEADER_BYTES + opus.length);
    out[0] = 0x80;
    out[1] = (this.marker ? 0x80 : 0) | (this.payloadType & 0x7f);
    out.writeUInt16BE(this.sequence, 2);
    out.writeUInt32BE(this.timestamp, 4);
    out.writeUInt32BE(this.opts.ssrc >>> 0, 8);
    opus.copy(out, RTP_HEADER_BYTES);
    this.sequence = (this.sequence + 1) & 0xffff;
    this.marker = false;
    return out;
  }
}

export interface RtpPacketView {
  payloadType: number;
  marker: boolean;
  sequence: number;
  timestamp: number;
  ssrc: number;
  payload: Buffer;
}

/**
 * Reads one RTP packet (RFC 3550 5.1): CSRCs, a header extension and padding are skipped.
 * Null for anything malformed: wrong version, too short for its CSRCs or extension, padding
 * longer than the payload, an empty payload.
 */
export function depacketize(packet: Buffer): RtpPacketView | null {
  if (packet.length < RTP_HEADER_BYTES) return null;
  const b0 = packet[0]!;
  if (b0 >> 6 !== 2) return null;
  const padding = (b0 & 0x20) !== 0;
  const extension = (b0 & 0x10) !== 0;
  const csrcs = b0 & 0x0f;
  let off = RTP_HEADER_BYTES + csrcs * 4;
  if (extension) {
    if (packet.length < off + 4) return null;
    off += 4 + packet.readUInt16BE(off + 2) * 4;
  }
  let end = packet.length;
  if (padding) {
    if (end <= off) return null;
    const pad = packet[end - 1]!;
    if (pad === 0 || pad > end - off) return null;
    end -= pad;
  }
  if (end <= off) return null;
  return {
    payloadType: packet[1]! & 0x7f,
    marker: (packet[1]! & 0x80) !== 0,
    sequence: packet.readUInt16BE(2),
    timestamp: packet.readUInt32BE(4),
    ssrc: packet.readUInt32BE(8),
    payload: packet.subarray(off, end),
  };
}

function randomUint(bits: 16 | 32): number {
  const v = Math.floor(Math.random() * 2 ** bits);
  return bits === 32 ? v >>> 0 : v;
}

/**
 * RTP header extensions the video section writes (RFC 8285 one-byte header form), without
 * werift: werift parses a packet handed to `sendRtp` and sends the extensions it finds again,
 * next to its own.
 *
 * - playout-delay (webrtc.org): min=max=0, see peer.ts.
 * - abs-capture-time (webrtc.org, http://www.webrtc.org/experiments/rtp-hdrext/abs-capture-time):
 *   the 64-bit NTP time (RFC 5905: seconds since 1900 in the high 32 bits, the fraction in the
 *   low 32) when the frame was captured, on the device's wall clock. Written on the first packet
 *   of each frame (the extension's rules: at least on the first packet, the receiver keeps it
 *   for the frame). The optional 8-byte estimated capture clock offset is left out: the device
 *   is the capturer, its clock is the one the time is in.
 *
 * One-byte header extension block: 0xBEDE, length in 32-bit words, then elements
 * [id << 4 | (len - 1)][data...], padded with zero bytes to a word.
 */

export const ABS_CAPTURE_TIME_URI = 'http://www.webrtc.org/experiments/rtp-hdrext/abs-capture-time';
/** The id the offer asks for; packets carry the answer's (PLAYOUT_DELAY_EXT_ID says why). */
export const ABS_CAPTURE_TIME_EXT_ID = 7;

/** Seconds from the NTP epoch (1900-01-01) to the Unix epoch. */
const NTP_UNIX_OFFSET_S = 2_208_988_800;

/** The 8-byte NTP timestamp of an epoch time in ms (Date.now()'s clock). */
export function ntpFromEpochMs(epochMs: number): Buffer {
  const out = Buffer.allocUnsafe(8);
  const seconds = Math.floor(epochMs / 1000);
  const fraction = Math.floor(((epochMs - seconds * 1000) / 1000) * 0x1_0000_0000);
  out.writeUInt32BE((seconds + NTP_UNIX_OFFSET_S) >>> 0, 0);
  out.writeUInt32BE(Math.min(fraction, 0xffff_ffff) >>> 0, 4);
  return out;
}

/** The epoch ms an 8-byte NTP timestamp stands for (the inverse of ntpFromEpochMs). */
export function epochMsFromNtp(ntp: Uint8Array): number {
  const view = new DataView(ntp.buffer, ntp.byteOffset, 8);
  const seconds = view.getUint32(0) - NTP_UNIX_OFFSET_S;
  return seconds * 1000 + (view.getUint32(4) / 0x1_0000_0000) * 1000;
}

/**
 * The packet with one more one-byte-header element. A packet without an extension gets a new
 * block after the fixed header and its CSRCs; one with a one-byte block gets the element
 * appended to it (padding dropped, the block re-padded). A packet with a two-byte block (0x1000)
 * or another profile is returned as it is, as is an element that does not fit the form
 * (id 1-14, 1-16 bytes).
 */
export function withOneByteExtension(packet: Buffer, id: number, data: Uint8Array): Buffer {
  if (id < 1 || id > 14 || data.length < 1 || data.length > 16) return packet;
  const csrcEnd = 12 + (packet[0]! & 0x0f) * 4;
  if (packet.length < csrcEnd) return packet;
  const hasExtension = (packet[0]! & 0x10) !== 0;
  let elements: Buffer;
  let payloadStart: number;
  if (hasExtension) {
    if (packet.length < csrcEnd + 4 || packet.readUInt16BE(csrcEnd) !== 0xbede) return packet;
    const words = packet.readUInt16BE(csrcEnd + 2);
    payloadStart = csrcEnd + 4 + words * 4;
    if (packet.length < payloadStart) return packet;
    elements = trimPadding(packet.subarray(csrcEnd + 4, payloadStart));
  } else {
    elements = Buffer.alloc(0);
    payloadStart = csrcEnd;
  }
  const used = elements.length + 1 + data.length;
  const words = Math.ceil(used / 4);
  const out = Buffer.alloc(csrcEnd + 4 + words * 4 + (packet.length - payloadStart));
  packet.copy(out, 0, 0, csrcEnd);
  out[0] = packet[0]! | 0x10;
  out.writeUInt16BE(0xbede, csrcEnd);
  out.writeUInt16BE(words, csrcEnd + 2);
  let o = csrcEnd + 4;
  elements.copy(out, o);
  o += elements.length;
  out[o] = ((id & 0x0f) << 4) | (data.length - 1);
  out.set(data, o + 1);
  packet.copy(out, csrcEnd + 4 + words * 4, payloadStart);
  return out;
}

/** The elements of a one-byte block without the zero padding after the last one. */
function trimPadding(block: Buffer): Buffer {
  let o = 0;
  let end = 0;
  while (o < block.length) {
    const b = block[o]!;
    if (b === 0) {
      o += 1; // padding byte (RFC 8285 4.2 allows it between elements too)
      continue;
    }
    if (b >> 4 === 15) break; // id 15: stop reading (RFC 8285 4.2)
    o += 2 + (b & 0x0f);
    end = Math.min(o, block.length);
  }
  return block.subarray(0, end);
}

/** abs-capture-time on `packet` for a frame captured at `epochMs`. */
export function withAbsCaptureTime(packet: Buffer, id: number, epochMs: number): Buffer {
  return withOneByteExtension(packet, id, ntpFromEpochMs(epochMs));
}

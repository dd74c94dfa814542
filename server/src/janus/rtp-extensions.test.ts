import { describe, expect, it } from 'vitest';
import { withPlayoutDelay } from './peer-params';
import {
  ABS_CAPTURE_TIME_EXT_ID,
  epochMsFromNtp,
  ntpFromEpochMs,
  withAbsCaptureTime,
  withOneByteExtension,
} from './rtp-extensions';

/** A 12-byte RTP header (no extension, no CSRC) and a payload. */
function rtp(payload: number[]): Buffer {
  const header = Buffer.from([0x80, 96, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3]);
  return Buffer.concat([header, Buffer.from(payload)]);
}

/** The one-byte elements of a packet's extension block, and its payload. */
function parse(packet: Buffer): { elements: Map<number, Buffer>; payload: Buffer } {
  const elements = new Map<number, Buffer>();
  if (!(packet[0]! & 0x10)) return { elements, payload: packet.subarray(12) };
  expect(packet.readUInt16BE(12)).toBe(0xbede);
  const end = 16 + packet.readUInt16BE(14) * 4;
  let o = 16;
  while (o < end) {
    const b = packet[o]!;
    if (b === 0) {
      o += 1;
      continue;
    }
    const len = (b & 0x0f) + 1;
    elements.set(b >> 4, packet.subarray(o + 1, o + 1 + len));
    o += 1 + len;
  }
  return { elements, payload: packet.subarray(end) };
}

describe('abs-capture-time', () => {
  it('writes the NTP time of an epoch time and reads it back to the microsecond', () => {
    const at = Date.UTC(2026, 10, 29, 9, 30, 0) + 123.456;
    const ntp = ntpFromEpochMs(at);
    // seconds since 1900 fit 32 bits until 2036 (NTP era 0)
    expect(ntp.readUInt32BE(0)).toBe(Math.floor(at / 1000) + 2_208_988_800);
    expect(Math.abs(epochMsFromNtp(ntp) - at)).toBeLessThan(0.001);
  });

  it('adds an extension block to a packet without one, the payload intact', () => {
    const out = withAbsCaptureTime(rtp([5, 6, 7]), ABS_CAPTURE_TIME_EXT_ID, 1_000_000.5);
    const { elements, payload } = parse(out);
    expect(out[0]! & 0x10).toBe(0x10);
    expect(out.readUInt16BE(14)).toBe(3); // 1 + 8 bytes -> 3 words
    expect(epochMsFromNtp(elements.get(ABS_CAPTURE_TIME_EXT_ID)!)).toBeCloseTo(1_000_000.5, 3);
    expect([...payload]).toEqual([5, 6, 7]);
  });

  it('appends to the playout-delay block the peer writes first', () => {
    const out = withAbsCaptureTime(withPlayoutDelay(rtp([9, 9]), 6), 7, 42);
    const { elements, payload } = parse(out);
    expect([...elements.get(6)!]).toEqual([0, 0, 0]);
    expect(epochMsFromNtp(elements.get(7)!)).toBeCloseTo(42, 3);
    expect(out.readUInt16BE(14)).toBe(4); // 4 + 9 bytes -> 4 words
    expect([...payload]).toEqual([9, 9]);
  });

  it('leaves a two-byte-header packet and an id out of the one-byte range alone', () => {
    const twoByte = Buffer.concat([
      Buffer.from([0x90, 96, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0x10, 0x00, 0, 1, 1, 1, 0xaa, 0]),
      Buffer.from([1]),
    ]);
    expect(withAbsCaptureTime(twoByte, 7, 1)).toBe(twoByte);
    const plain = rtp([1]);
    expect(withOneByteExtension(plain, 15, Buffer.from([1]))).toBe(plain);
  });
});

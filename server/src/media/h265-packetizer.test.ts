import { describe, expect, it } from 'vitest';
import { H265Packetizer } from './h265-packetizer';
import { hevcNalType, hevcProfileTierLevel, isHevcIrap, unescapeRbsp } from './hevc';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');
const h = (b: Buffer): string => b.toString('hex');

/** Payload type 100, SSRC 0x11223344, first sequence 0x1234: header bytes written by hand. */
function packetizer(maxPayload = 1200, initialSequence = 0x1234): H265Packetizer {
  return new H265Packetizer({ payloadType: 100, ssrc: 0x11223344, maxPayload, initialSequence });
}

// NAL unit headers (H.265 7.3.1.2): type << 1, layer 0, TID+1 = 1
const VPS = hex('4001 0c01ff');
const SPS = hex('4201 010160');
const PPS = hex('4401 c172');
const IDR = hex('2601 af0b5c'); // IDR_W_RADL (19)
const TRAIL = hex('0201 d009'); // TRAIL_R (1)

/** RFC 7798 receiver side, enough to check that what we send comes back as it went in. */
function depacketize(packets: Buffer[]): Buffer[] {
  const nals: Buffer[] = [];
  let fu: Buffer[] = [];
  for (const pkt of packets) {
    const payload = pkt.subarray(12);
    const type = hevcNalType(payload);
    if (type === 48) {
      for (let o = 2; o < payload.length;) {
        const size = payload.readUInt16BE(o);
        nals.push(payload.subarray(o + 2, o + 2 + size));
        o += 2 + size;
      }
    } else if (type === 49) {
      const fuHeader = payload[2]!;
      if (fuHeader & 0x80) {
        // the NAL header from the PayloadHdr with the FU's type
        const nalHeader = Buffer.from([
          (payload[0]! & 0x81) | ((fuHeader & 0x3f) << 1),
          payload[1]!,
        ]);
        fu = [nalHeader];
      }
      fu.push(payload.subarray(3));
      if (fuHeader & 0x40) nals.push(Buffer.concat(fu));
    } else {
      nals.push(payload);
    }
  }
  return nals;
}

describe('H265Packetizer (RFC 7798)', () => {
  it('sends a small NAL unit as a single NAL unit packet with the marker', () => {
    const [pkt, ...rest] = packetizer().packetize([TRAIL], 0x01020304);
    expect(rest).toEqual([]);
    //               V  M|PT seq  timestamp ssrc     NAL (its header is the payload header)
    expect(h(pkt!)).toBe('80e4' + '1234' + '01020304' + '11223344' + '0201d009');
  });

  it('aggregates VPS, SPS and PPS into an AP (type 48) and sends the IRAP alone', () => {
    // 2 + (2+5) + (2+5) + (2+4) = 22 bytes: the IDR (5 more + 2) does not fit in 24
    const pkts = packetizer(24).packetize([VPS, SPS, PPS, IDR], 90_000);
    expect(pkts.map(h)).toEqual([
      // PayloadHdr 0x6001: F 0, type 48 << 1, layer 0, TID 1; then [size:u16][NAL] per unit
      '8064' +
        '1234' +
        '00015f90' +
        '11223344' +
        '6001' +
        '0005' +
        '40010c01ff' +
        '0005' +
        '4201010160' +
        '0004' +
        '4401c172',
      '80e4' + '1235' + '00015f90' + '11223344' + '2601af0b5c',
    ]);
  });

  it("gives an AP the lowest layer and TID and the OR of the units' F bits", () => {
    const a = hex('0203 aa'); // TRAIL_R, TID+1 = 3
    const b = hex('820a bb'); // F set, layer 1, TID+1 = 2
    const [pkt] = packetizer().packetize([a, b], 0);
    // F 1 | type 48 << 1 | layer 0 (high bit) ; layer 0 low bits << 3 | TID 2
    expect(h(pkt!.subarray(12, 14))).toBe('e002');
  });

  it('can be told not to aggregate', () => {
    const p = new H265Packetizer({
      payloadType: 101,
      ssrc: 1,
      initialSequence: 7,
      aggregate: false,
    });
    expect(p.packetize([VPS, SPS], 0).map(h)).toEqual([
      '8065' + '0007' + '00000000' + '00000001' + '40010c01ff',
      '80e5' + '0008' + '00000000' + '00000001' + '4201010160',
    ]);
  });

  it('fragments a large NAL unit into FUs (type 49) with the FU header S/E bits', () => {
    // maxPayload 16: 13 bytes of NAL data per FU after the PayloadHdr and the FU header
    const p = new H265Packetizer({
      payloadType: 100,
      ssrc: 0x11223344,
      maxPayload: 16,
      initialSequence: 0xfffe,
    });
    const nal = hex('2601' + '11'.repeat(30)); // 30 bytes after the 2-byte header: 13 + 13 + 4
    const pkts = p.packetize([nal], 1);
    expect(pkts.map((b) => h(b.subarray(0, 15)))).toEqual([
      // PayloadHdr 0x6201 (type 49, layer 0, TID 1), FU header S | type 19 = 0x93
      '8064' + 'fffe' + '00000001' + '11223344' + '6201' + '93',
      '8064' + 'ffff' + '00000001' + '11223344' + '6201' + '13', // middle: no S, no E
      '80e4' + '0000' + '00000001' + '11223344' + '6201' + '53', // E and the marker
    ]);
    expect(pkts.map((b) => b.length - 15)).toEqual([13, 13, 4]);
    expect(depacketize(pkts)).toEqual([nal]);
  });

  it('keeps F, the layer and the TID of a fragmented NAL unit in the PayloadHdr', () => {
    const nal = hex('830b' + '22'.repeat(20)); // F 1, type 1, layer 33 (32 | 1), TID 3
    const pkts = packetizer(8).packetize([nal], 0);
    // F | 49 << 1 | layer's high bit = 0xe3 ; (layer & 0x1f) << 3 | TID = 0x0b
    expect(pkts.length).toBeGreaterThan(2);
    for (const pkt of pkts) expect(h(pkt.subarray(12, 14))).toBe('e30b');
    expect(depacketize(pkts)).toEqual([nal]);
  });

  it('drops AUD and filler data and anything 48-63 in the stream', () => {
    const aud = hex('4601 50');
    const fd = hex('4c01 ffff');
    const ap = hex('6001 0000');
    const pkts = packetizer().packetizeAnnexB(
      Buffer.concat([aud, fd, ap, TRAIL].map((n) => Buffer.concat([hex('00000001'), n]))),
      0,
    );
    expect(pkts.map(h)).toEqual(['80e4' + '1234' + '00000000' + '11223344' + '0201d009']);
  });

  it('round-trips a mixed access unit from Annex B, marker on the last packet only', () => {
    const big = Buffer.concat([hex('2601'), Buffer.alloc(3000, 0x5a)]);
    const sei = hex('4e01 0501ff80');
    const au = Buffer.concat(
      [VPS, SPS, PPS, sei, big, hex('0201 ab')].map((n) => Buffer.concat([hex('00000001'), n])),
    );
    const p = packetizer(1200, 0xffff);
    const pkts = p.packetizeAnnexB(au, 2 ** 32 + 5);
    expect(depacketize(pkts)).toEqual([VPS, SPS, PPS, sei, big, hex('0201ab')]);
    expect(pkts.map((b) => b[1]! >> 7)).toEqual([...Array(pkts.length - 1).fill(0), 1]);
    expect(pkts.every((b) => b.readUInt32BE(4) === 5)).toBe(true); // wrapped to 32 bits
    expect(pkts.every((b) => b.length - 12 <= 1200)).toBe(true);
    expect(p.nextSequence).toBe((0xffff + pkts.length) & 0xffff);
  });

  it('refuses a payload budget with no room for FU data', () => {
    expect(() => new H265Packetizer({ payloadType: 100, ssrc: 1, maxPayload: 3 })).toThrow(
      RangeError,
    );
  });
});

describe('hevc helpers', () => {
  it("reads profile, tier and level from x265's SPS through emulation prevention bytes", () => {
    // libx265 Main, 1280x720, level 3.1 (general_level_idc 93): 00 00 03 twice before the level
    const sps = hex('42010101600000030090000003000003005da00280802d165ba4a4c2f01680');
    expect(hevcProfileTierLevel(sps)).toEqual({ profileId: 1, tierFlag: 0, levelId: 93 });
    expect(hevcProfileTierLevel(PPS)).toBeNull();
    expect(hevcProfileTierLevel(hex('4201 0101'))).toBeNull();
  });

  it('tells IRAP pictures and strips 00 00 03', () => {
    expect([IDR, hex('2a01'), hex('2001'), TRAIL].map(isHevcIrap)).toEqual([
      true,
      true,
      true,
      false,
    ]);
    expect(h(unescapeRbsp(hex('0000030100000300')))).toBe('000001000000');
  });
});

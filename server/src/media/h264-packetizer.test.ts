import { describe, expect, it } from 'vitest';
import { H264Packetizer } from './h264-packetizer';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');
const h = (b: Buffer): string => b.toString('hex');

/** Payload type 96, SSRC 0x11223344, first sequence 0x1234: header bytes written by hand. */
function packetizer(maxPayload = 1200, initialSequence = 0x1234): H264Packetizer {
  return new H264Packetizer({ payloadType: 96, ssrc: 0x11223344, maxPayload, initialSequence });
}

describe('H264Packetizer', () => {
  it('sends a small NAL unit as a single NAL unit packet with the marker', () => {
    const [pkt, ...rest] = packetizer().packetize([hex('4188ab')], 0x01020304);
    expect(rest).toEqual([]);
    //               V  M|PT seq  timestamp ssrc     NAL
    expect(h(pkt!)).toBe('80e0' + '1234' + '01020304' + '11223344' + '4188ab');
  });

  it('aggregates SPS and PPS into a STAP-A and sends the IDR alone', () => {
    const p = packetizer(16);
    const sps = hex('6742c01e');
    const pps = hex('68ce3880');
    const idr = hex('6588840021'); // 5 bytes: too big to join a 16-byte STAP-A with both
    const pkts = p.packetize([sps, pps, idr], 90_000);
    expect(pkts.map(h)).toEqual([
      // STAP-A header 0x78 = F0 | NRI 3 (from 0x67/0x68: 0x60) | 24, then [len][NAL] twice
      '8060' + '1234' + '00015f90' + '11223344' + '78' + '0004' + '6742c01e' + '0004' + '68ce3880',
      '80e0' + '1235' + '00015f90' + '11223344' + '6588840021',
    ]);
  });

  it('can be told not to aggregate', () => {
    const p = new H264Packetizer({
      payloadType: 102,
      ssrc: 1,
      initialSequence: 7,
      stapA: false,
    });
    const pkts = p.packetize([hex('6742'), hex('68ce')], 0);
    expect(pkts.map(h)).toEqual([
      '8066' + '0007' + '00000000' + '00000001' + '6742',
      '80e6' + '0008' + '00000000' + '00000001' + '68ce',
    ]);
  });

  it('fragments a large NAL unit into FU-A start, middle and end', () => {
    // maxPayload 16 → 14 bytes of NAL data per fragment after the FU indicator and header.
    const small = new H264Packetizer({
      payloadType: 96,
      ssrc: 0x11223344,
      maxPayload: 16,
      initialSequence: 0xfffe,
    });
    const pkts = small.packetize([hex('6588' + '00'.repeat(30))], 1);
    // 30 + 1 data bytes after the NAL header: 14 + 14 + 3.
    expect(pkts).toHaveLength(3);
    expect(pkts.map((b) => h(b.subarray(0, 14)))).toEqual([
      '8060' + 'fffe' + '00000001' + '11223344' + '7c85', // S=1, FU indicator 0x7c = NRI 3 | 28
      '8060' + 'ffff' + '00000001' + '11223344' + '7c05', // middle: no S, no E
      '80e0' + '0000' + '00000001' + '11223344' + '7c45', // E=1, marker, sequence wrapped
    ]);
    expect(h(pkts[0]!.subarray(14))).toBe('88' + '00'.repeat(13));
    expect(h(pkts[2]!.subarray(14))).toBe('000000');
    // Reassembled, the fragments give the NAL back.
    const body = Buffer.concat(pkts.map((b) => b.subarray(14)));
    expect(h(Buffer.concat([hex('65'), body]))).toBe('6588' + '00'.repeat(30));
    expect(small.nextSequence).toBe(1);
  });

  it('keeps F and NRI of the fragmented NAL in the FU indicator', () => {
    const pkts = packetizer(6).packetize([hex('21 010203040506')], 0);
    // NRI 1 (0x20) | 28 = 0x3c; type 1; 4 data bytes per fragment → [01020304] [0506]
    expect(pkts.map((b) => h(b.subarray(12)))).toEqual(['3c8101020304', '3c410506']);
    expect(pkts[0]![1]).toBe(0x60);
    expect(pkts[1]![1]).toBe(0xe0);
  });

  it('marks only the last packet of the access unit and drops AUD', () => {
    const p = packetizer(8);
    const au = hex('00000001 0910 00000001 419a0102030405 000001 419b0607');
    const pkts = p.packetizeAnnexB(au, 3000);
    // 419a0102030405 (7 bytes) single; 419b0607 single (STAP-A would need 1+2+7+2+4 > 8)
    expect(pkts.map(h)).toEqual([
      '8060' + '1234' + '00000bb8' + '11223344' + '419a0102030405',
      '80e0' + '1235' + '00000bb8' + '11223344' + '419b0607',
    ]);
  });

  it('continues sequence numbers across access units and wraps timestamps to 32 bits', () => {
    const p = packetizer(1200, 0xffff);
    const a = p.packetize([hex('4101')], 2 ** 32 + 5);
    const b = p.packetize([hex('4102')], -90);
    expect(a[0]!.readUInt16BE(2)).toBe(0xffff);
    expect(a[0]!.readUInt32BE(4)).toBe(5);
    expect(b[0]!.readUInt16BE(2)).toBe(0);
    expect(b[0]!.readUInt32BE(4)).toBe(2 ** 32 - 90);
    expect(p.nextSequence).toBe(1);
  });

  it('returns nothing for an access unit without sendable NAL units', () => {
    const p = packetizer();
    expect(p.packetizeAnnexB(hex('00000001 0910'), 0)).toEqual([]);
    expect(p.nextSequence).toBe(0x1234);
  });

  it('keeps every packet within the payload budget for a real-sized IDR', () => {
    const p = packetizer();
    const idr = Buffer.alloc(50_000, 0xab);
    idr[0] = 0x65;
    const pkts = p.packetize([hex('6742c01e'), hex('68ce3880'), idr], 0);
    expect(pkts[0]![12]).toBe(0x78); // STAP-A of SPS + PPS
    expect(Math.max(...pkts.map((b) => b.length - 12))).toBe(1200);
    const fuBytes = pkts.slice(1).reduce((n, b) => n + b.length - 14, 0);
    expect(fuBytes).toBe(idr.length - 1);
    expect(pkts.filter((b) => b[1]! & 0x80)).toHaveLength(1);
  });
});

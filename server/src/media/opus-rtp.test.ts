import { describe, expect, it } from 'vitest';
import { OpusPacketizer, depacketize, opusPacketSamples } from './opus-rtp';

const hex = (b: Buffer | null): string | null => (b ? b.toString('hex') : null);

describe('opusPacketSamples (RFC 6716 3.1)', () => {
  it('reads the frame size from the configuration and the count from the code', () => {
    expect(opusPacketSamples(Buffer.from([0x00]))).toBe(480); // SILK NB 10 ms
    expect(opusPacketSamples(Buffer.from([0x18]))).toBe(2880); // SILK NB 60 ms
    expect(opusPacketSamples(Buffer.from([0x60]))).toBe(480); // Hybrid SWB 10 ms
    expect(opusPacketSamples(Buffer.from([0x68]))).toBe(960); // Hybrid SWB 20 ms
    expect(opusPacketSamples(Buffer.from([0x80]))).toBe(120); // CELT NB 2.5 ms
    expect(opusPacketSamples(Buffer.from([0xfc]))).toBe(960); // CELT FB 20 ms stereo
    expect(opusPacketSamples(Buffer.from([0x81]))).toBe(240); // code 1: two equal frames
    expect(opusPacketSamples(Buffer.from([0x82, 0x01]))).toBe(240); // code 2: two frames
    expect(opusPacketSamples(Buffer.from([0x0b, 0x03]))).toBe(2880); // code 3, M=3 x 20 ms
    expect(opusPacketSamples(Buffer.from([0x83, 0x30]))).toBe(120 * 48); // M=48 x 2.5 ms
  });

  it('refuses empty packets, a missing or zero frame count and more than 120 ms', () => {
    expect(opusPacketSamples(Buffer.alloc(0))).toBeNull();
    expect(opusPacketSamples(Buffer.from([0x0b]))).toBeNull();
    expect(opusPacketSamples(Buffer.from([0x0b, 0x00]))).toBeNull();
    expect(opusPacketSamples(Buffer.from([0x83, 0x31]))).toBeNull(); // 49 x 2.5 ms
    expect(opusPacketSamples(Buffer.from([0x1b, 0x03]))).toBeNull(); // 3 x 60 ms
  });
});

describe('OpusPacketizer', () => {
  it('writes RTP packets byte for byte: marker, wrapping sequence and timestamp', () => {
    const p = new OpusPacketizer({ ssrc: 0x11223344, sequence: 0xfffe, timestamp: 0xfffffc40 });
    // V=2, M=1 PT=111, seq fffe, ts fffffc40, ssrc, payload
    expect(hex(p.packetize(Buffer.from([0xfc, 0x01, 0x02])))).toBe(
      '80ef' + 'fffe' + 'fffffc40' + '11223344' + 'fc0102',
    );
    // +960 samples wraps to 0; sequence ffff; no marker
    expect(hex(p.packetize(Buffer.from([0xf8, 0xaa])))).toBe(
      '806f' + 'ffff' + '00000000' + '11223344' + 'f8aa',
    );
    expect(hex(p.packetize(Buffer.from([0x0b, 0x03, 0x55])))).toBe(
      '806f' + '0000' + '000003c0' + '11223344' + '0b0355',
    );
    // after the 60 ms packet and a 100 ms gap: 960 + 2880 + 4800 = 0x21c0, marked again
    p.resume(4800);
    expect(hex(p.packetize(Buffer.from([0xf8, 0x01])))).toBe(
      '80ef' + '0001' + '000021c0' + '11223344' + 'f801',
    );
    // an invalid packet is not sent and does not move the counters
    expect(p.packetize(Buffer.from([0x0b]))).toBeNull();
    expect(hex(p.packetize(Buffer.from([0xf8])))).toBe(
      '806f' + '0002' + '00002580' + '11223344' + 'f8',
    );
  });

  it('takes another payload type and starts at random counters by default', () => {
    const p = new OpusPacketizer({ ssrc: 1, payloadType: 100, sequence: 0, timestamp: 0 });
    expect(hex(p.packetize(Buffer.from([0xf8])))).toBe(
      '80e4' + '0000' + '00000000' + '00000001' + 'f8',
    );
    const r = new OpusPacketizer({ ssrc: 1 }).packetize(Buffer.from([0xf8]))!;
    expect(r.length).toBe(13);
  });
});

describe('depacketize', () => {
  it('reads a packet with a CSRC, a header extension and padding', () => {
    const pkt = Buffer.from(
      'b1ef' +
        '0001' +
        '00000002' +
        '00000003' +
        '00000004' +
        'bede0001' +
        '10ff0000' +
        '010203' +
        '000003',
      'hex',
    );
    const v = depacketize(pkt)!;
    expect({ ...v, payload: v.payload.toString('hex') }).toEqual({
      payloadType: 111,
      marker: true,
      sequence: 1,
      timestamp: 2,
      ssrc: 3,
      payload: '010203',
    });
  });

  it('round-trips the packetizer', () => {
    const p = new OpusPacketizer({ ssrc: 9, sequence: 5, timestamp: 6 });
    const v = depacketize(p.packetize(Buffer.from([0xf8, 7, 8]))!)!;
    expect([v.sequence, v.timestamp, v.ssrc, v.marker, v.payload.toString('hex')]).toEqual([
      5,
      6,
      9,
      true,
      'f80708',
    ]);
  });

  it('refuses malformed packets', () => {
    const ok = '806f' + '0001' + '00000002' + '00000003';
    const bad = [
      '806f0001000000020000', // shorter than the header
      '406f' + ok.slice(4) + 'f8', // version 1
      ok, // no payload
      '826f' + ok.slice(4) + '00000004' + 'f8', // two CSRCs, room for one
      '906f' + ok.slice(4) + 'bede00', // extension header cut
      '906f' + ok.slice(4) + 'bede0002' + '00000000' + 'f8', // extension longer than the packet
      'a06f' + ok.slice(4) + 'f800', // padding count 0
      'a06f' + ok.slice(4) + 'f805', // padding longer than the payload
      'a06f' + ok.slice(4) + '0002', // only padding
    ];
    for (const h of bad) expect(depacketize(Buffer.from(h, 'hex')), h).toBeNull();
  });
});

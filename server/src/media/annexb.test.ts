import { describe, expect, it } from 'vitest';
import {
  containsIdr,
  joinNalUnits,
  NalType,
  nalRefIdc,
  nalType,
  parseSps,
  splitNalUnits,
  unescapeRbsp,
} from './annexb';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');

// The SPS x264 writes for testsrc2 640x360 baseline (level 3.0), emulation prevention inside.
const SPS_640x360 = hex('6742c01e d900a02f f9701100 00030001 00000300 3c8f162e 48');

describe('splitNalUnits', () => {
  it('splits at 4-byte and 3-byte start codes without copying the start codes', () => {
    const buf = hex('00000001 0910 000001 6742c01e 00000001 68ce3880 000001 65888400');
    const nals = splitNalUnits(buf);
    expect(nals.map((n) => n.toString('hex'))).toEqual(['0910', '6742c01e', '68ce3880', '658884']);
    // 65 88 84 00: the trailing zero is trailing_zero_8bits, not NAL data.
  });

  it('ignores leading garbage and trailing zero bytes', () => {
    const nals = splitNalUnits(hex('ffee 0000 00000001 4101 0000 000001 4102'));
    expect(nals.map((n) => n.toString('hex'))).toEqual(['4101', '4102']);
  });

  it('leaves emulation prevention bytes intact', () => {
    const buf = Buffer.concat([hex('00000001'), SPS_640x360, hex('00000001 68cb83cb20')]);
    const nals = splitNalUnits(buf);
    expect(nals).toHaveLength(2);
    expect(nals[0]!.equals(SPS_640x360)).toBe(true);
    expect(nals[0]!.includes(hex('000003'))).toBe(true);
  });

  it('returns nothing for a buffer without a start code or with an empty NAL', () => {
    expect(splitNalUnits(hex('0102030405'))).toEqual([]);
    expect(splitNalUnits(Buffer.alloc(0))).toEqual([]);
    expect(splitNalUnits(hex('00000001 00000001'))).toEqual([]);
  });

  it('handles a start code at the very end and 1-byte NAL units', () => {
    expect(splitNalUnits(hex('000001 09 000001')).map((n) => n.toString('hex'))).toEqual(['09']);
  });

  it('round-trips through joinNalUnits', () => {
    const nals = [hex('0910'), SPS_640x360, hex('68cb83cb20'), hex('6588840021')];
    const joined = joinNalUnits(nals);
    expect(joined.subarray(0, 6).toString('hex')).toBe('000000010910');
    expect(splitNalUnits(joined).map((n) => n.toString('hex'))).toEqual(
      nals.map((n) => n.toString('hex')),
    );
  });
});

describe('NAL helpers', () => {
  it('reads type and ref_idc', () => {
    expect(nalType(hex('65'))).toBe(NalType.sliceIdr);
    expect(nalType(hex('41'))).toBe(NalType.slice);
    expect(nalType(hex('09'))).toBe(NalType.aud);
    expect(nalType(SPS_640x360)).toBe(NalType.sps);
    expect(nalRefIdc(hex('65'))).toBe(3);
    expect(nalRefIdc(hex('41'))).toBe(2);
    expect(nalType(Buffer.alloc(0))).toBe(0);
    expect(containsIdr([hex('0910'), hex('6588')])).toBe(true);
    expect(containsIdr([hex('0930'), hex('419a')])).toBe(false);
  });

  it('unescapes 00 00 03', () => {
    expect(unescapeRbsp(hex('00000301 000003 000003')).toString('hex')).toBe('00000100000000');
  });
});

describe('parseSps', () => {
  it('reads profile-level-id and the cropped size', () => {
    expect(parseSps(SPS_640x360)).toEqual({
      profileIdc: 66,
      constraintFlags: 0xc0,
      levelIdc: 30,
      profileLevelId: '42c01e',
      width: 640,
      height: 360,
    });
  });

  it('rejects what is not an SPS', () => {
    expect(() => parseSps(hex('68cb83cb20'))).toThrow(/not an SPS/);
  });
});

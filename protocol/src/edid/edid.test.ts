import { describe, expect, it } from 'vitest';
import {
  DEFAULT_EDID_PRESET,
  EDID_PRESETS,
  ctaBlock,
  cvtReducedBlanking,
  edidPreferredMode,
  edidPreset,
  edidPresetOf,
  edidToHex,
  isEdid4k,
  parseEdidHex,
  qualityPresetParams,
  withCtaExtension,
} from './index';

const bytesOf = (hex: string) => {
  const out = parseEdidHex(hex);
  if (!out) throw new Error('not an EDID');
  return out;
};
const blockSum = (b: Uint8Array, block: number) =>
  b.slice(block * 128, block * 128 + 128).reduce((a, v) => a + v, 0) % 256;

const EXPECTED: [string, number, number, number][] = [
  ['E1920x1080', 1920, 1080, 60],
  ['E3840x2160', 3840, 2160, 30],
  ['E2560x1440', 2560, 1440, 60],
  ['E1920x1200', 1920, 1200, 60],
  ['E1920x1280', 1920, 1280, 60],
  ['E2560x1440_OV', 2560, 1440, 60],
  ['E1600x1200', 1600, 1200, 60],
];

describe('EDID presets', () => {
  it('are SPEC 3 in order, one default, GL labels', () => {
    expect(EDID_PRESETS.map((p) => p.key)).toEqual(EXPECTED.map((e) => e[0]));
    expect(EDID_PRESETS.filter((p) => p.is_default).map((p) => p.key)).toEqual([
      DEFAULT_EDID_PRESET,
    ]);
    expect(edidPreset('E1920x1080')?.label).toBe('1920x1080/KVM Display/60Hz');
    expect(edidPreset('E3840x2160')?.label).toBe('3840x2160/KVM Display/30Hz');
  });

  it.each(EXPECTED)('%s: header, checksums, preferred mode %ix%i@%i', (key, w, h, hz) => {
    const preset = edidPreset(key)!;
    expect(preset.content).toMatch(/^[0-9a-f]{512}$/);
    const b = bytesOf(preset.content);
    expect([...b.slice(0, 8)]).toEqual([0, 255, 255, 255, 255, 255, 255, 0]);
    expect(b[126]).toBe(1); // one extension
    expect(blockSum(b, 0)).toBe(0);
    expect(b[128]).toBe(0x02); // CTA tag
    expect(b[129]).toBe(3);
    expect(blockSum(b, 1)).toBe(0);
    expect(edidPreferredMode(b)).toEqual({ width: w, height: h, hz });
    expect(preset.hz).toBe(hz);
    expect(preset.audio).toBe(true);
    expect(b[131]! & 0x40).toBe(0x40); // basic audio
    expect(isEdid4k(b)).toBe(w === 3840);
    // HDMI VSDB (OUI 00-0C-03, little-endian) is in the data blocks.
    expect(edidToHex(b.slice(128))).toContain('030c00');
  });

  it('the other vendor differs in manufacturer id and name', () => {
    const ours = bytesOf(edidPreset('E2560x1440')!.content);
    const other = bytesOf(edidPreset('E2560x1440_OV')!.content);
    expect([ours[8], ours[9]]).not.toEqual([other[8], other[9]]);
    expect(edidPreset('E2560x1440_OV')!.label).not.toBe(edidPreset('E2560x1440')!.label);
  });

  it('the manufacturer id is packed as three 5-bit letters', () => {
    const b = bytesOf(edidPreset('E1920x1080')!.content);
    const code = (b[8]! << 8) | b[9]!;
    const letters = [10, 5, 0].map((s) => String.fromCharCode(((code >> s) & 31) + 64)).join('');
    expect(letters).toBe('KVM');
  });

  it('round-trips through hex with whitespace and upper case', () => {
    for (const p of EDID_PRESETS) {
      const spaced = p.content
        .toUpperCase()
        .replace(/(..)/g, '$1 ')
        .replace(/(.{48})/g, '$1\n');
      expect(edidToHex(bytesOf(spaced))).toBe(p.content);
      expect(edidPresetOf(spaced)?.key).toBe(p.key);
    }
    expect(edidPresetOf('00ff')).toBeNull();
  });
});

describe('CVT reduced blanking', () => {
  it('matches the published CVT-RB timings', () => {
    // 2560x1440 RB: 241.5 MHz, 2720 x 1481; 1920x1200 RB (DMT 0x44): 154 MHz, 2080 x 1235.
    const qhd = cvtReducedBlanking(2560, 1440, 60);
    expect(qhd.pixelClockKhz).toBe(241_500);
    expect(qhd.width + qhd.hFrontPorch + qhd.hSync + qhd.hBackPorch).toBe(2720);
    expect(qhd.height + qhd.vFrontPorch + qhd.vSync + qhd.vBackPorch).toBe(1481);
    const wuxga = cvtReducedBlanking(1920, 1200, 60);
    expect(wuxga.pixelClockKhz).toBe(154_000);
    expect(wuxga.height + wuxga.vFrontPorch + wuxga.vSync + wuxga.vBackPorch).toBe(1235);
    expect(wuxga.vSync).toBe(6);
  });
});

describe('parseEdidHex', () => {
  const good = EDID_PRESETS[0]!.content;

  it('accepts 256 and 512 hex characters', () => {
    expect(parseEdidHex(good)).toHaveLength(256);
    expect(parseEdidHex(good.slice(0, 256))).toHaveLength(128);
  });

  it.each([
    ['empty', ''],
    ['wrong length', good.slice(0, 300)],
    ['too long', good + '00'],
    ['odd length', good.slice(0, 255)],
    ['non-hex', 'zz' + good.slice(2)],
    ['0x prefix', '0x' + good.slice(2)],
    ['bad header', '01' + good.slice(2)],
    ['bad base checksum', good.slice(0, 254) + '00' + good.slice(256)],
    ['bad extension checksum', good.slice(0, 510) + (good.slice(510) === '00' ? '01' : '00')],
  ])('rejects %s', (_name, text) => {
    expect(parseEdidHex(text)).toBeNull();
  });
});

describe('withCtaExtension', () => {
  it('appends our CTA block to a 128-byte EDID and fixes the base block', () => {
    const base = bytesOf(EDID_PRESETS[2]!.content).slice(0, 128);
    base[126] = 0;
    base[127] = (base[127]! + 1) % 256; // fix the checksum for 0 extensions
    expect(parseEdidHex(edidToHex(base))).not.toBeNull();
    const full = withCtaExtension(base);
    expect(full).toHaveLength(256);
    expect(full[126]).toBe(1);
    expect(parseEdidHex(edidToHex(full))).not.toBeNull();
    expect([...full.slice(128)]).toEqual([...ctaBlock({ width: 2560, height: 1440 }, true)]);
    expect(edidPreferredMode(full)).toEqual({ width: 2560, height: 1440, hz: 60 });
  });

  it('leaves a 256-byte EDID alone', () => {
    const full = bytesOf(EDID_PRESETS[0]!.content);
    expect(edidToHex(withCtaExtension(full))).toBe(EDID_PRESETS[0]!.content);
  });
});

describe('edidPreferredMode', () => {
  it('is null without a DTD', () => {
    const b = bytesOf(EDID_PRESETS[0]!.content).slice(0, 128);
    b.fill(0, 54, 72);
    expect(edidPreferredMode(b)).toBeNull();
  });
});

describe('qualityPresetParams', () => {
  it('SPEC 3 presets, gop halved on 4K', () => {
    expect([0, 1, 2, 3].map((l) => qualityPresetParams(l, false))).toEqual([
      { h264_bitrate: 500, h264_gop: 30 },
      { h264_bitrate: 2000, h264_gop: 30 },
      { h264_bitrate: 5000, h264_gop: 60 },
      { h264_bitrate: 8000, h264_gop: 60 },
    ]);
    expect([0, 1, 2, 3].map((l) => qualityPresetParams(l, true).h264_gop)).toEqual([
      15, 15, 30, 30,
    ]);
  });

  it('isEdid4k on modes', () => {
    expect(isEdid4k({ width: 3840, height: 2160 })).toBe(true);
    expect(isEdid4k({ width: 2560, height: 1440 })).toBe(false);
    expect(isEdid4k(null)).toBe(false);
  });
});

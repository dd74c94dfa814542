import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { splitNalUnits } from './annexb';
import { hevcNalType, isHevcIrap } from './hevc';
import { NutFormatError, NutReader } from './hevc-nut-reader';

/** 12 frames of x265 in NUT as the H.265 encoder's ffmpeg writes them (key frame every 5). */
function x265Nut(): Buffer {
  const r = spawnSync(
    'ffmpeg',
    [
      ...[
        '-hide_banner',
        '-loglevel',
        'error',
        '-f',
        'lavfi',
        '-i',
        'testsrc=size=320x240:rate=30',
      ],
      ...['-frames:v', '12', '-pix_fmt', 'yuv420p', '-c:v', 'libx265', '-preset', 'ultrafast'],
      ...[
        '-tune',
        'zerolatency',
        '-x265-params',
        'log-level=error:keyint=5:min-keyint=5:repeat-headers=1',
      ],
      ...['-f', 'nut', 'pipe:1'],
    ],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  expect(r.status).toBe(0);
  return r.stdout;
}

function read(chunks: Buffer[]): { data: Buffer; key: boolean }[] {
  const units: { data: Buffer; key: boolean }[] = [];
  const reader = new NutReader((u) => units.push(u));
  for (const chunk of chunks) reader.push(chunk);
  return units;
}

describe('NutReader', () => {
  const nut = x265Nut();

  it("hands on each of ffmpeg's frames whole, key frames flagged", () => {
    const units = read([nut]);
    expect(units).toHaveLength(12);
    expect(units.map((u) => u.key)).toEqual(units.map((_, i) => i % 5 === 0));
    for (const u of units) {
      const nals = splitNalUnits(u.data);
      expect(u.data.subarray(0, 4).toString('hex')).toBe('00000001');
      expect(nals.some(isHevcIrap)).toBe(u.key);
      if (u.key) expect(nals.slice(0, 3).map(hevcNalType)).toEqual([32, 33, 34]);
    }
  });

  it('gives the same units whatever the pipe cut the stream into', () => {
    const whole = read([nut]);
    const bytes = read([...nut].map((b) => Buffer.from([b])));
    const odd: Buffer[] = [];
    for (let o = 0; o < nut.length; o += 777) odd.push(nut.subarray(o, o + 777));
    expect(bytes).toEqual(whole);
    expect(read(odd)).toEqual(whole);
  });

  it('refuses what is not NUT', () => {
    const reader = new NutReader(() => undefined);
    expect(() => reader.push(Buffer.from('FLV\x01\x01\0\0\0\x09' + 'x'.repeat(30)))).toThrow(
      NutFormatError,
    );
  });
});

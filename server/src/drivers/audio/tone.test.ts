import { describe, expect, it } from 'vitest';
import { dominantFrequency, rms, s16, sinePcm, toneLevel } from './tone';

describe('tone arithmetic', () => {
  it('finds the frequency and level of a sine, and nothing in silence', () => {
    const pcm = s16(sinePcm(1000, 100, { amplitude: 0.5 }));
    expect(toneLevel(pcm, 48000, 2, 1000)).toBeCloseTo(0.5, 1);
    expect(toneLevel(pcm, 48000, 2, 700)).toBeLessThan(0.01);
    const d = dominantFrequency(pcm, 48000, 2);
    expect(d.hz).toBe(1000);
    expect(d.rms).toBeCloseTo(0.5 / Math.SQRT2, 2);
    expect(dominantFrequency(s16(Buffer.alloc(9600)), 48000, 2)).toEqual({
      hz: 0,
      level: 0,
      rms: 0,
    });
  });

  it('reads an odd byte count and mono buffers', () => {
    const pcm = s16(Buffer.concat([sinePcm(440, 50, { channels: 1 }), Buffer.from([1])]));
    expect(pcm.length).toBe(2400);
    expect(dominantFrequency(pcm, 48000, 1).hz).toBe(440);
    expect(rms(new Int16Array(0), 1)).toBe(0);
  });
});

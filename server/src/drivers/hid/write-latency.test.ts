import { describe, expect, it } from 'vitest';
import { LatencyRing } from './write-latency';

describe('LatencyRing', () => {
  it('keeps only the last `capacity` durations for the quantiles, counts and sums them all', () => {
    const ring = new LatencyRing(3);
    expect(ring.summary()).toEqual({ quantiles: [], count: 0, sum: 0, window: 0 });
    for (const s of [8, 1, 2, 4]) ring.record(s); // 8 falls out of the ring
    const s = ring.summary([0, 0.5, 1]);
    expect(s.quantiles).toEqual([
      { quantile: 0, value: 1 },
      { quantile: 0.5, value: 2 },
      { quantile: 1, value: 4 },
    ]);
    expect([s.count, s.sum, s.window]).toEqual([4, 15, 3]);
  });

  it('stays the same size however many durations come, and ignores non-durations', () => {
    const ring = new LatencyRing(1024);
    for (let i = 0; i < 100_000; i++) ring.record(i % 2 ? 0.002 : 0.001);
    ring.record(-1);
    ring.record(NaN);
    ring.record(Infinity);
    const s = ring.summary();
    expect(s.window).toBe(1024);
    expect(s.count).toBe(100_000);
    expect(s.quantiles.map((q) => q.value)).toEqual([0.001, 0.002, 0.002]);
    expect(() => new LatencyRing(0)).toThrow(RangeError);
  });
});

import { describe, expect, it } from 'vitest';
import { GopCache } from './gop-cache';
import type { AccessUnit } from './types';
import { Prng } from '../fuzz/prng';

let seq = 0;
function unit(key: boolean, size: number): AccessUnit {
  return { data: Buffer.alloc(size, key ? 1 : 2), key, seq: seq++, capturedAt: 0, pts90k: 0 };
}

describe('GopCache', () => {
  it('holds the units since the last key frame; a key frame resets it', () => {
    const cache = new GopCache({ maxBytes: 1000, maxUnits: 10 });
    const a = [unit(true, 10), unit(false, 5), unit(false, 5)];
    a.forEach((u) => expect(cache.push(u)).toBe(0));
    expect(cache.units()).toEqual(a);
    expect(cache.byteLength).toBe(20);
    const b = [unit(true, 10), unit(false, 5)];
    b.forEach((u) => cache.push(u));
    expect(cache.units()).toEqual(b);
    expect(cache.dropped).toBe(0);
  });

  it('never keeps delta units without their key unit', () => {
    const cache = new GopCache({ maxBytes: 1000, maxUnits: 10 });
    expect(cache.push(unit(false, 5))).toBe(0);
    expect(cache.units()).toEqual([]);
    cache.push(unit(true, 5));
    cache.clear();
    cache.push(unit(false, 5));
    expect(cache.units()).toEqual([]);
    expect(cache.dropped).toBe(0);
  });

  it('drops a GOP that passes the byte bound whole, then waits for the next key frame', () => {
    const cache = new GopCache({ maxBytes: 100, maxUnits: 100 });
    cache.push(unit(true, 40));
    cache.push(unit(false, 40));
    // 40 + 40 + 30 > 100: everything goes, not just the unit that did not fit
    expect(cache.push(unit(false, 30))).toBe(3);
    expect(cache.units()).toEqual([]);
    // a small unit that would fit again is not kept: the GOP has a hole now
    expect(cache.push(unit(false, 1))).toBe(1);
    expect(cache.units()).toEqual([]);
    expect(cache.dropped).toBe(4);
    const key = unit(true, 10);
    expect(cache.push(key)).toBe(0);
    expect(cache.units()).toEqual([key]);
  });

  it('drops a GOP that passes the unit bound whole', () => {
    const cache = new GopCache({ maxBytes: 1_000_000, maxUnits: 3 });
    cache.push(unit(true, 1));
    cache.push(unit(false, 1));
    cache.push(unit(false, 1));
    expect(cache.push(unit(false, 1))).toBe(4);
    expect(cache.size).toBe(0);
  });

  it('drops a key unit that alone passes the bound', () => {
    const cache = new GopCache({ maxBytes: 10, maxUnits: 3 });
    expect(cache.push(unit(true, 11))).toBe(1);
    expect(cache.push(unit(false, 1))).toBe(1);
    expect(cache.units()).toEqual([]);
  });

  it('is never gapped: random sequences against a model (fixed seeds)', () => {
    for (const seed of [1, 2, 3, 42, 1234, 99_999]) {
      const prng = new Prng(seed);
      const random = (): number => prng.next();
      const limits = {
        maxBytes: 50 + Math.floor(random() * 500),
        maxUnits: 2 + Math.floor(random() * 20),
      };
      const cache = new GopCache(limits);
      let sinceKey: AccessUnit[] = [];
      let modelDropped = 0;
      let overflowed = false;
      for (let i = 0; i < 3000; i += 1) {
        // mostly small deltas, sometimes a big one, key frames now and then
        const key = random() < 0.08;
        const size =
          random() < 0.1 ? 1 + Math.floor(random() * 200) : 1 + Math.floor(random() * 20);
        const u = unit(key, size);
        const dropped = cache.push(u);

        // The model: the whole GOP since the last key unit if it fits, else nothing.
        if (key) {
          sinceKey = [u];
          overflowed = false;
        } else if (sinceKey.length > 0 || overflowed) sinceKey.push(u);
        const bytes = sinceKey.reduce((n, x) => n + x.data.length, 0);
        let expected: AccessUnit[] = sinceKey;
        let expectedDropped = 0;
        if (overflowed) {
          expected = [];
          expectedDropped = 1;
        } else if (
          sinceKey.length > 0 &&
          (bytes > limits.maxBytes || sinceKey.length > limits.maxUnits)
        ) {
          expected = [];
          expectedDropped = sinceKey.length;
          overflowed = true;
        }
        modelDropped += expectedDropped;
        expect(dropped, `seed ${seed} step ${i}`).toBe(expectedDropped);

        const got = cache.units();
        expect(
          got.map((x) => x.seq),
          `seed ${seed} step ${i}`,
        ).toEqual(expected.map((x) => x.seq));
        // the invariant itself, independent of the model: a key unit, then consecutive units
        // up to the one just pushed
        if (got.length > 0) {
          expect(got[0]?.key).toBe(true);
          expect(got.slice(1).every((x) => !x.key)).toBe(true);
          got.forEach((x, j) => expect(x.seq).toBe(got[0]!.seq + j));
          expect(got.at(-1)).toBe(u);
          expect(cache.byteLength).toBeLessThanOrEqual(limits.maxBytes);
          expect(got.length).toBeLessThanOrEqual(limits.maxUnits);
        }
      }
      expect(cache.dropped).toBe(modelDropped);
      expect(modelDropped).toBeGreaterThan(0); // the seeds do reach the bounds
    }
  });
});

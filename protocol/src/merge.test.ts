import { describe, expect, it } from 'vitest';
import { deepMerge, isPlainObject } from './merge';

describe('deepMerge', () => {
  it('merges objects key by key and replaces everything else', () => {
    const base = { a: { b: 1, c: [1, 2] }, d: 'x', e: { f: 1 } };
    const out = deepMerge(base, { a: { c: [3] }, d: null, e: 5, g: true });
    expect(out).toEqual({ a: { b: 1, c: [3] }, d: null, e: 5, g: true });
    expect(base).toEqual({ a: { b: 1, c: [1, 2] }, d: 'x', e: { f: 1 } });
  });

  it('leaves keys whose patch value is undefined, and keeps base for an undefined patch', () => {
    expect(deepMerge({ a: 1, b: 2 }, { a: undefined, b: 3 })).toEqual({ a: 1, b: 3 });
    expect(deepMerge({ a: 1 }, undefined)).toEqual({ a: 1 });
    expect(deepMerge({ a: 1 }, [2])).toEqual([2]);
  });

  it('replaces the maps named in replaceWhole instead of merging them', () => {
    const base = { storage: { images: { old: 1 }, parts: { p: { a: 1 } } } };
    const patch = { storage: { images: { new: 2 }, parts: { p: { b: 2 } } } };
    expect(deepMerge(base, patch, new Set(['storage.images']))).toEqual({
      storage: { images: { new: 2 }, parts: { p: { a: 1, b: 2 } } },
    });
  });

  it('counts only non-null, non-array objects as plain', () => {
    expect([{}, [], null, 1, 'x'].map(isPlainObject)).toEqual([true, false, false, false, false]);
  });
});

import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { coerce, gt, satisfies } from './fastify-semver';

/** The semver Fastify itself requires, to compare with. */
const semver = createRequire(createRequire(import.meta.url).resolve('fastify/package.json'))(
  'semver',
) as {
  satisfies(version: string, range: string, options?: { includePrerelease?: boolean }): boolean;
  gt(a: string, b: string): boolean;
  coerce(text: string): { version: string } | null;
};

describe('the built server semver (Fastify plugin checks)', () => {
  const versions = [
    '5.6.1',
    '5.0.0',
    '4.29.1',
    '6.0.0',
    '5.2.3',
    '5.0.0-rc.1',
    'v5.1.0',
    '5.6.1+build.2',
  ];
  const ranges = ['5.x', '4.x', '5', '5.2.x', '5.2', '5.2.3', '5.0.0', '5.x || 6.x', '4.x||5.*'];

  it('answers as semver does for exact and wildcard ranges, with and without prereleases', () => {
    for (const v of versions) {
      for (const r of ranges) {
        for (const includePrerelease of [false, true]) {
          expect(
            satisfies(v, r, { includePrerelease }),
            `${v} in ${r} (${includePrerelease})`,
          ).toBe(semver.satisfies(v, r, { includePrerelease }));
        }
      }
    }
  });

  it('refuses, naming it, a range form it does not answer', () => {
    for (const r of ['>=5.0.0', '^5.0.0', '~5.1', '5.0.0 - 6.0.0', '']) {
      expect(() => satisfies('5.6.1', r)).toThrow(/answers only ranges like 5\.x/);
    }
    expect(() => satisfies('five', '5.x')).toThrow(/Invalid Version: five/);
  });

  it('gt and coerce as Fastify uses them in a release candidate phase', () => {
    const pairs: Array<[string, string]> = [
      ['5.0.0-rc.1', '4.0.0'],
      ['5.0.0-rc.1', '5.0.0'],
      ['5.0.0', '5.0.0-rc.1'],
      ['5.1.0', '5.0.9'],
      ['5.0.0', '5.0.0'],
    ];
    for (const [a, b] of pairs) expect(gt(a, b), `${a} > ${b}`).toBe(semver.gt(a, b));
    for (const r of ['5.x', '4', '4.2.x', 'v5.1.2', 'none']) {
      expect(coerce(r), r).toBe(semver.coerce(r)?.version ?? null);
    }
  });
});

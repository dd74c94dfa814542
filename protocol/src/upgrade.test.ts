import { describe, expect, it } from 'vitest';
import { compareVersions, formatVersion, isNewer, parseVersion } from './upgrade';

describe('SPEC 4 version order', () => {
  // Each row: a < b.
  const lower: [string, string][] = [
    ['V1.9.0 beta1', 'V1.9.0 beta2'],
    ['V1.9.0 beta9', 'V1.9.0 release1'],
    ['V1.9.0 release1', 'V1.9.0 release2'],
    ['V1.9.0 release9', 'V1.9.0'],
    ['V1.9.0', 'V1.9.1 beta1'],
    ['V1.9.9', 'V1.10.0'],
    ['V1.99.99', 'V2.0.0 beta1'],
    ['garbage', 'V0.0.0 beta0'],
    ['', 'V0.0.1'],
    ['V1.9', 'V0.0.1'],
    ['0.1.0', '0.2.0-beta1'],
  ];
  it.each(lower)('%s < %s', (a, b) => {
    expect(compareVersions(a, b)).toBeLessThan(0);
    expect(compareVersions(b, a)).toBeGreaterThan(0);
    expect(isNewer(a, b)).toBe(true);
    expect(isNewer(b, a)).toBe(false);
  });

  it('equal spellings compare equal; two unparsable are equal and never newer', () => {
    expect(compareVersions('V1.9.0 release1', '1.9.0-release1')).toBe(0);
    expect(compareVersions('v1.9.0', 'V1.9.0')).toBe(0);
    expect(compareVersions('x', 'y')).toBe(0);
    expect(isNewer('V1.9.0', 'V1.9.0')).toBe(false);
    expect(isNewer('junk', 'junk')).toBe(false);
    expect(isNewer(null, 'V0.0.1')).toBe(true);
  });

  it('parses and formats in GL spelling', () => {
    expect(parseVersion('V1.9.0 release1')).toEqual({
      major: 1,
      minor: 9,
      patch: 0,
      kind: 'release',
      n: 1,
    });
    expect(formatVersion('0.1.0')).toBe('V0.1.0');
    expect(formatVersion('0.2.0-beta3')).toBe('V0.2.0 beta3');
    expect(formatVersion('V1.9.0 release1')).toBe('V1.9.0 release1');
    expect(formatVersion('1.9')).toBeNull();
    expect(parseVersion('V1.9.0 alpha1')).toBeNull();
  });
});

import { describe, expect, it } from 'vitest';
import { compareVersions, isNewer } from './version-order';

describe('SPEC 4 version order', () => {
  it('orders numbers, then plain > release > beta, then the suffix number', () => {
    expect(isNewer('V1.3.0 release1', 'V1.2.9')).toBe(true);
    expect(isNewer('V1.10.0', 'V1.9.0')).toBe(true);
    expect(isNewer('V1.2.0', 'V1.2.0 release5')).toBe(true);
    expect(isNewer('V1.2.0 release1', 'V1.2.0 beta9')).toBe(true);
    expect(isNewer('V1.2.0 release2', 'V1.2.0 release1')).toBe(true);
    expect(compareVersions('V1.2.0 release1', 'v1.2.0 release1')).toBe(0);
    expect(isNewer('V1.2.0 release1', 'V1.2.0 release1')).toBe(false);
  });

  it('ranks an unparsable version lowest', () => {
    expect(isNewer('V0.0.1 beta1', 'garbage')).toBe(true);
    expect(isNewer('garbage', 'V0.0.1 beta1')).toBe(false);
    expect(compareVersions('x', 'y')).toBe(0);
  });
});

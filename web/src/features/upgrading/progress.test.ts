import { describe, expect, it } from 'vitest';
import { UPGRADE_EXPECTED_MS, upgradeProgress } from './progress';

describe('upgradeProgress (SPEC 2 upgrading page)', () => {
  it('starts at 0 and rises steadily', () => {
    expect(upgradeProgress(0)).toBe(0);
    expect(upgradeProgress(-5)).toBe(0);
    expect(upgradeProgress(UPGRADE_EXPECTED_MS / 2)).toBe(49);
    expect(upgradeProgress(10_000)).toBeLessThan(upgradeProgress(20_000));
  });

  it('reaches 99 % at about 82 s and stays there', () => {
    expect(upgradeProgress(UPGRADE_EXPECTED_MS - 1_000)).toBeLessThan(99);
    expect(upgradeProgress(UPGRADE_EXPECTED_MS)).toBe(99);
    expect(upgradeProgress(10 * UPGRADE_EXPECTED_MS)).toBe(99);
  });
});

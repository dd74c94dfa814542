import { describe, expect, it } from 'vitest';
import { fitVnc, VNC_MAX } from './qemu';

describe('fitVnc: the VM mode QEMU VNC streams whole', () => {
  it('keeps every preset that fits and shrinks 4K to the largest 16:9 mode that does', () => {
    expect(fitVnc({ width: 1920, height: 1080, hz: 60 })).toEqual({
      width: 1920,
      height: 1080,
      hz: 60,
    });
    expect(fitVnc({ width: 2560, height: 1440, hz: 60 })).toEqual({
      width: 2560,
      height: 1440,
      hz: 60,
    });
    expect(fitVnc({ width: 3840, height: 2160, hz: 30 })).toEqual({
      width: 2560,
      height: 1440,
      hz: 30,
    });
  });

  it('never exceeds the VNC limit, sides multiples of 8', () => {
    for (const [w, h] of [
      [4095, 4095],
      [4000, 100],
      [100, 4000],
      [3000, 2100],
    ] as const) {
      const m = fitVnc({ width: w, height: h, hz: 60 });
      expect(m.width).toBeLessThanOrEqual(VNC_MAX.width);
      expect(m.height).toBeLessThanOrEqual(VNC_MAX.height);
      expect(m.width % 8).toBe(0);
      expect(m.height % 8).toBe(0);
    }
  });
});

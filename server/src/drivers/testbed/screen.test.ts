import { describe, expect, it } from 'vitest';
import { MARKER, MARKER_BITS, TestbedPicture } from './screen';

function markerValue(p: TestbedPicture): number {
  let v = 0;
  for (let bit = 0; bit < MARKER_BITS; bit += 1) {
    const x = MARKER.x + bit * (MARKER.block + MARKER.gap) + MARKER.block / 2;
    const y = MARKER.y + MARKER.block / 2;
    v = (v << 1) | (p.y[y * p.width + x]! > 128 ? 1 : 0);
  }
  return v;
}

describe('TestbedPicture', () => {
  it('shows the change counter in the marker and remembers when each change was drawn', () => {
    const p = new TestbedPicture(640, 480);
    expect(markerValue(p)).toBe(0);
    for (let i = 1; i <= 300; i += 1) {
      p.markChange(1000 + i);
      expect(markerValue(p)).toBe(i & 0xff);
    }
    expect(p.changeTime(300 & 0xff)).toBe(1300);
  });

  it('draws typed text and the frame number deterministically', () => {
    const a = new TestbedPicture(640, 480);
    const b = new TestbedPicture(640, 480);
    a.typeText('HELLO', 1);
    b.typeText('HELLO', 2);
    a.drawFrameNumber(42);
    b.drawFrameNumber(42);
    expect(a.frame.equals(b.frame)).toBe(true);
    b.drawFrameNumber(43);
    expect(a.frame.equals(b.frame)).toBe(false);
  });

  it('refuses sizes that are not macroblock aligned', () => {
    expect(() => new TestbedPicture(641, 480)).toThrow();
  });
});

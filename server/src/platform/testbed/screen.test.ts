import { describe, expect, it } from 'vitest';
import { glyph, GLYPH_H, GLYPH_W } from '../../graphics/font';
import { MARKER, MARKER_BITS, TestbedPicture } from './screen';

/**
 * The picture drawn the plain way, every pixel of every character each time (what the
 * testbed did before it kept its text cells): the oracle of the incremental drawing.
 */
class FullRedrawPicture {
  readonly frame: Buffer;
  private counter = 0;
  private text = '';

  constructor(
    readonly width: number,
    readonly height: number,
  ) {
    this.frame = Buffer.alloc((width * height * 3) / 2, 128);
    this.frame.fill(40, 0, width * height);
    this.drawText(32, height - 64, 'TEST TARGET', 4);
    this.drawMarker();
  }

  typeText(chars: string): void {
    this.text = (this.text + chars).slice(-40);
    this.fill(32, 160, this.width - 64, GLYPH_H * 4 + 8, 40);
    this.drawText(32, 160, this.text, 4);
    this.counter += 1;
    this.drawMarker();
  }

  drawFrameNumber(n: number): void {
    const label = `FRAME ${String(n).padStart(8, '0')}`;
    this.drawText(this.width - 32 - label.length * (GLYPH_W + 1) * 4, 32, label, 4);
  }

  private drawMarker(): void {
    for (let bit = 0; bit < MARKER_BITS; bit += 1) {
      const on = (this.counter >> (MARKER_BITS - 1 - bit)) & 1;
      const x = MARKER.x + bit * (MARKER.block + MARKER.gap);
      this.fill(x, MARKER.y, MARKER.block, MARKER.block, on ? 235 : 16);
    }
  }

  private fill(x: number, y: number, w: number, h: number, value: number): void {
    for (let row = Math.max(0, y); row < Math.min(this.height, y + h); row += 1) {
      const at = row * this.width;
      this.frame.fill(value, at + Math.max(0, x), at + Math.min(this.width, x + w));
    }
  }

  private drawText(x: number, y: number, text: string, scale: number): void {
    const step = (GLYPH_W + 1) * scale;
    for (let i = 0; i < text.length; i += 1) {
      const gx = x + i * step;
      this.fill(gx, y, step, GLYPH_H * scale, 40);
      const rows = glyph(text[i]!);
      for (let r = 0; r < GLYPH_H; r += 1) {
        for (let c = 0; c < GLYPH_W; c += 1) {
          if (rows[r]! & (1 << (GLYPH_W - 1 - c)))
            this.fill(gx + c * scale, y + r * scale, scale, scale, 235);
        }
      }
    }
  }
}

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

  it.each([
    [640, 480],
    [1280, 720],
    [64, 64],
  ])('draws at %ix%i byte for byte what a full redraw draws', (width, height) => {
    const p = new TestbedPicture(width, height);
    const ref = new FullRedrawPicture(width, height);
    expect(p.frame.equals(ref.frame)).toBe(true);
    const typed =
      'The quick brown fox jumps over the lazy dog 0123456789 ?#:-._ aaaaaaaaaaaaaaaaaa';
    let frameNo = 99_990;
    for (let i = 0; i < typed.length; i += 1) {
      p.typeText(typed[i]!, i);
      ref.typeText(typed[i]!);
      if (i % 3 === 0) {
        frameNo += 1;
        p.drawFrameNumber(frameNo);
        ref.drawFrameNumber(frameNo);
      }
      expect(p.frame.equals(ref.frame)).toBe(true);
    }
  });

  it('lends its own buffer and moves into another one only to draw while it is lent', () => {
    const p = new TestbedPicture(640, 480);
    const takes: number[] = [];
    const take = (size: number) => {
      takes.push(size);
      return Buffer.alloc(size);
    };
    const own = p.frame;
    // handed back before any write: no copy, the next write goes in place
    expect(p.lend(take)).toBe(own);
    expect(p.returned(own)).toBe(true);
    p.typeText('A', 1);
    expect(p.frame).toBe(own);
    expect(takes).toEqual([]);

    // held while the picture draws: the lent bytes stay as they were when lent
    const lent = p.lend(take);
    const asLent = Buffer.from(lent);
    p.typeText('B', 2);
    p.drawFrameNumber(7);
    p.markChange(3);
    expect(takes).toEqual([own.length]);
    expect(p.frame).not.toBe(lent);
    expect(lent.equals(asLent)).toBe(true);
    expect(p.frame.equals(asLent)).toBe(false);
    // the picture moved on: the old buffer comes back free, the new one is not lent
    expect(p.returned(lent)).toBe(false);
    expect(p.returned(p.frame)).toBe(false);

    // the same picture drawn without lending is the same picture
    const plain = new TestbedPicture(640, 480);
    plain.typeText('A', 1);
    plain.typeText('B', 2);
    plain.drawFrameNumber(7);
    plain.markChange(3);
    expect(p.frame.equals(plain.frame)).toBe(true);
  });

  it('copies at once when lent again before a write: one buffer is out with one consumer', () => {
    const p = new TestbedPicture(64, 64);
    const take = (size: number) => Buffer.alloc(size);
    const first = p.lend(take);
    const second = p.lend(take);
    expect(second).not.toBe(first);
    expect(second.equals(first)).toBe(true);
    expect(p.returned(first)).toBe(false);
    expect(p.returned(second)).toBe(true);
  });

  it('leaves a lent buffer of the old size with its consumer when resized', () => {
    const p = new TestbedPicture(64, 64);
    const lent = p.lend(() => {
      throw new Error('a resize allocates its own buffer');
    });
    const asLent = Buffer.from(lent);
    p.resize(128, 64);
    p.typeText('X', 1);
    expect(lent.equals(asLent)).toBe(true);
    expect(p.frame.length).toBe((128 * 64 * 3) / 2);
    expect(p.returned(lent)).toBe(false);
  });
});

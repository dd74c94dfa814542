import { describe, expect, it } from 'vitest';
import { HextileDecoder } from './hextile';

const px = (v: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v >>> 0);
  return b;
};

/** Decodes `data` into a `width` x `height` framebuffer, fed in pieces of `step` bytes. */
function decode(
  rect: { x: number; y: number; w: number; h: number },
  data: Buffer,
  width: number,
  height: number,
  step = data.length,
): { pixels: Uint32Array; left: number; done: boolean } {
  const pixels = new Uint32Array(width * height);
  const d = new HextileDecoder();
  d.begin(rect, pixels, width);
  let pending = Buffer.alloc(0);
  for (let i = 0; i < data.length; i += step) {
    pending = Buffer.concat([pending, data.subarray(i, i + step)]);
    pending = pending.subarray(d.decode(pending));
  }
  return { pixels, left: pending.length, done: d.done };
}

describe('HextileDecoder', () => {
  it('fills a tile with its background and draws foreground subrects over it', () => {
    // one 4x3 tile: background 1, foreground 2, subrects (1,0) 2x1 and (0,2) 1x1
    const data = Buffer.concat([
      Buffer.from([2 | 4 | 8]),
      px(1),
      px(2),
      Buffer.from([2, (1 << 4) | 0, (1 << 4) | 0, (0 << 4) | 2, 0]),
    ]);
    const { pixels, left, done } = decode({ x: 0, y: 0, w: 4, h: 3 }, data, 4, 3);
    expect(done).toBe(true);
    expect(left).toBe(0);
    expect([...pixels]).toEqual([1, 2, 2, 1, 1, 1, 1, 1, 2, 1, 1, 1]);
  });

  it('draws coloured subrects, raw tiles, and keeps the background of the tile before', () => {
    // a 20x2 rectangle at (1,1) of a 24x4 screen: tiles 16x2 then 4x2
    const rawTile = Buffer.concat([
      Buffer.from([1]),
      ...Array.from({ length: 32 }, (_, i) => px(10 + i)),
    ]);
    const coloured = Buffer.concat([
      Buffer.from([2 | 8 | 16]),
      px(7),
      Buffer.from([1]),
      px(9),
      Buffer.from([(3 << 4) | 1, 0]),
    ]);
    const { pixels } = decode(
      { x: 1, y: 1, w: 20, h: 2 },
      Buffer.concat([rawTile, coloured]),
      24,
      4,
    );
    expect(pixels[0]).toBe(0);
    for (let i = 0; i < 16; i++) {
      expect(pixels[24 + 1 + i]).toBe(10 + i);
      expect(pixels[48 + 1 + i]).toBe(26 + i);
    }
    expect([...pixels.subarray(24 + 17, 24 + 21)]).toEqual([7, 7, 7, 7]);
    expect([...pixels.subarray(48 + 17, 48 + 21)]).toEqual([7, 7, 7, 9]);
    expect(pixels[24 + 21]).toBe(0);
  });

  it('takes the last tile’s background and foreground when a tile names none', () => {
    const tiles = Buffer.concat([
      Buffer.from([2 | 4]),
      px(5),
      px(6),
      Buffer.from([8, 1, 0x00, 0x00]), // no colours: background 5, one foreground pixel 6
    ]);
    const { pixels } = decode({ x: 0, y: 0, w: 17, h: 1 }, tiles, 17, 1);
    expect(pixels[15]).toBe(5);
    expect(pixels[16]).toBe(6);
  });

  it('decodes the same picture whatever the pieces the bytes arrive in', () => {
    const tiles = Buffer.concat([
      Buffer.from([2 | 4 | 8]),
      px(1),
      px(2),
      Buffer.from([3, 0x00, 0xf0, 0x11, 0x00, 0x22, 0x33]),
      Buffer.from([1]),
      ...Array.from({ length: 16 * 5 }, (_, i) => px(i)),
      Buffer.from([0]),
    ]);
    const whole = decode({ x: 0, y: 0, w: 37, h: 5 }, tiles, 37, 5);
    expect(whole.done).toBe(true);
    for (const step of [1, 3, 7, 64]) {
      const bits = decode({ x: 0, y: 0, w: 37, h: 5 }, tiles, 37, 5, step);
      expect(bits.done).toBe(true);
      expect(bits.left).toBe(0);
      expect([...bits.pixels]).toEqual([...whole.pixels]);
    }
  });

  it('waits for a tile cut off at the end of the bytes it has', () => {
    const d = new HextileDecoder();
    const pixels = new Uint32Array(16);
    d.begin({ x: 0, y: 0, w: 4, h: 4 }, pixels, 4);
    const tile = Buffer.concat([Buffer.from([2 | 8]), px(3), Buffer.from([2, 0x00, 0x00])]);
    expect(d.decode(tile)).toBe(0); // one subrect of two
    expect(d.done).toBe(false);
    expect(pixels[0]).toBe(0);
    expect(d.decode(Buffer.concat([tile, Buffer.from([0x11, 0x00])]))).toBe(tile.length + 2);
    expect(d.done).toBe(true);
  });

  it('never draws outside the tile, and reads without drawing when there is no target', () => {
    // subrect at (3,3) 16x16 in a 4x4 tile of an 8x8 screen: clipped to the tile's one pixel
    const tile = Buffer.concat([
      Buffer.from([2 | 4 | 8]),
      px(1),
      px(2),
      Buffer.from([1, 0x33, 0xff]),
    ]);
    const { pixels } = decode({ x: 0, y: 0, w: 4, h: 4 }, tile, 8, 8);
    expect(pixels[3 * 8 + 3]).toBe(2);
    expect(pixels[3 * 8 + 4]).toBe(0);
    expect(pixels[4 * 8 + 3]).toBe(0);
    const d = new HextileDecoder();
    d.begin({ x: 0, y: 0, w: 4, h: 4 }, null, 8);
    expect(d.decode(tile)).toBe(tile.length);
    expect(d.done).toBe(true);
  });

  it('is done at once with an empty rectangle', () => {
    const d = new HextileDecoder();
    d.begin({ x: 0, y: 0, w: 0, h: 5 }, new Uint32Array(4), 2);
    expect(d.done).toBe(true);
    expect(d.decode(Buffer.from([1, 2, 3]))).toBe(0);
  });

  it('draws runs of plain tiles as the tiles one by one would (spans end at rows, colours and other tiles)', () => {
    // A seeded random rectangle of tiles, mostly plain in few colours, some with subrects or
    // raw, at an offset in a larger screen, against a painter that draws each tile by itself.
    let seed = 7;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const rect = { x: 3, y: 2, w: 16 * 9 + 5, h: 16 * 4 + 7 };
    const width = rect.x + rect.w + 2;
    const height = rect.y + rect.h + 1;
    const want = new Uint32Array(width * height);
    const parts: Buffer[] = [];
    let bg = 0;
    let fg = 0;
    for (let ty = 0; ty < rect.h; ty += 16) {
      for (let tx = 0; tx < rect.w; tx += 16) {
        const tw = Math.min(16, rect.w - tx);
        const th = Math.min(16, rect.h - ty);
        const put = (x: number, y: number, v: number): void => {
          if (x < tw && y < th) want[(rect.y + ty + y) * width + rect.x + tx + x] = v;
        };
        const kind = rand(10);
        if (kind === 0) {
          const pixels = Array.from({ length: tw * th }, () => 100 + rand(50));
          parts.push(Buffer.from([1]), ...pixels.map(px));
          pixels.forEach((v, i) => put(i % tw, Math.floor(i / tw), v));
          continue;
        }
        let mask = 0;
        const head: Buffer[] = [];
        if (rand(3) === 0) {
          mask |= 2;
          bg = 1 + rand(3);
          head.push(px(bg));
        }
        const subrects = kind === 1 ? 1 + rand(3) : 0;
        if (subrects > 0) {
          mask |= 4 | 8;
          fg = 10 + rand(5);
          head.push(px(fg), Buffer.from([subrects]));
        }
        parts.push(Buffer.from([mask]), ...head);
        for (let y = 0; y < th; y++) for (let x = 0; x < tw; x++) put(x, y, bg);
        for (let i = 0; i < subrects; i++) {
          const sx = rand(16);
          const sy = rand(16);
          const sw = 1 + rand(4);
          const sh = 1 + rand(4);
          parts.push(Buffer.from([(sx << 4) | sy, ((sw - 1) << 4) | (sh - 1)]));
          for (let y = sy; y < sy + sh; y++) for (let x = sx; x < sx + sw; x++) put(x, y, fg);
        }
      }
    }
    const data = Buffer.concat(parts);
    for (const step of [data.length, 5, 17]) {
      const got = decode(rect, data, width, height, step);
      expect(got.done).toBe(true);
      expect(got.left).toBe(0);
      expect([...got.pixels]).toEqual([...want]);
    }
  });
});

/**
 * A small baseline JPEG encoder for the simulated screens (flat colour and text): YCbCr 4:4:4,
 * the standard quantization tables scaled by quality (the IJG formula), one DC and one AC
 * Huffman table of fixed-length codes (valid baseline tables: 4-bit DC categories, 8-bit AC
 * symbols), and a block whose 64 samples are equal coded by its DC alone. jpeg-js builds its
 * tables again for every picture (about 100-200 ms here under load, more than the picture
 * itself): a hundred simulated devices in one process could not keep a wall's interval with it.
 */

/** Zigzag position → natural (row-major) index. */
const ZIGZAG = [
  0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20,
  13, 6, 7, 14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52,
  45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
];

/** ITU T.81 Annex K's example tables, natural order. */
const STD_LUMA = [
  16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56,
  14, 17, 22, 29, 51, 87, 80, 62, 18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113,
  92, 49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99,
];
const STD_CHROMA = [
  17,
  18,
  24,
  47,
  99,
  99,
  99,
  99,
  18,
  21,
  26,
  66,
  99,
  99,
  99,
  99,
  24,
  26,
  56,
  99,
  99,
  99,
  99,
  99,
  47,
  66,
  99,
  99,
  99,
  99,
  99,
  99,
  ...Array<number>(32).fill(99),
];

function scaled(table: number[], quality: number): number[] {
  const q = Math.max(1, Math.min(100, Math.round(quality)));
  const scale = q < 50 ? 5000 / q : 200 - 2 * q;
  return table.map((v) => Math.max(1, Math.min(255, Math.floor((v * scale + 50) / 100))));
}

/** AC symbols: EOB, ZRL, then run/size for runs 0-15 and sizes 1-10 (all 8-bit codes). */
const AC_SYMBOLS = [0x00, 0xf0];
for (let r = 0; r < 16; r += 1) for (let s = 1; s <= 10; s += 1) AC_SYMBOLS.push((r << 4) | s);
const AC_CODE = new Map<number, number>(AC_SYMBOLS.map((sym, i) => [sym, i]));

/** cos((2x+1)uπ/16) · C(u)/2. */
const COS = Array.from({ length: 8 }, (_, u) =>
  Array.from(
    { length: 8 },
    (_, x) => (Math.cos(((2 * x + 1) * u * Math.PI) / 16) * (u === 0 ? Math.SQRT1_2 : 1)) / 2,
  ),
);

class BitWriter {
  private readonly out: number[] = [];
  private acc = 0;
  private n = 0;

  bits(value: number, count: number): void {
    for (let i = count - 1; i >= 0; i -= 1) {
      this.acc = (this.acc << 1) | ((value >> i) & 1);
      this.n += 1;
      if (this.n === 8) {
        this.out.push(this.acc);
        if (this.acc === 0xff) this.out.push(0);
        this.acc = 0;
        this.n = 0;
      }
    }
  }

  finish(): number[] {
    if (this.n > 0) this.bits((1 << (8 - this.n)) - 1, 8 - this.n);
    return this.out;
  }
}

/** The category (bit size) of a coefficient, and its bits as JPEG stores them. */
function magnitude(v: number): [number, number] {
  const a = Math.abs(v);
  const size = a === 0 ? 0 : 32 - Math.clz32(a);
  return [size, v >= 0 ? v : v + (1 << size) - 1];
}

function encodeBlock(
  w: BitWriter,
  block: Float64Array,
  quant: number[],
  prevDc: number,
  flat: boolean,
): number {
  const coef = new Int32Array(64);
  if (flat) {
    coef[0] = Math.round((8 * block[0]!) / quant[0]!);
  } else {
    const tmp = new Float64Array(64);
    for (let y = 0; y < 8; y += 1) {
      for (let u = 0; u < 8; u += 1) {
        let s = 0;
        for (let x = 0; x < 8; x += 1) s += block[y * 8 + x]! * COS[u]![x]!;
        tmp[y * 8 + u] = s;
      }
    }
    for (let u = 0; u < 8; u += 1) {
      for (let v = 0; v < 8; v += 1) {
        let s = 0;
        for (let y = 0; y < 8; y += 1) s += tmp[y * 8 + u]! * COS[v]![y]!;
        coef[v * 8 + u] = Math.round(s / quant[v * 8 + u]!);
      }
    }
  }
  const dc = coef[0]!;
  const [dSize, dBits] = magnitude(dc - prevDc);
  w.bits(dSize, 4);
  if (dSize > 0) w.bits(dBits, dSize);
  let run = 0;
  for (let k = 1; k < 64; k += 1) {
    const c = coef[ZIGZAG[k]!]!;
    if (c === 0) {
      run += 1;
      continue;
    }
    while (run > 15) {
      w.bits(AC_CODE.get(0xf0)!, 8);
      run -= 16;
    }
    const [size, bits] = magnitude(c);
    w.bits(AC_CODE.get((run << 4) | Math.min(size, 10))!, 8);
    w.bits(bits, size);
    run = 0;
  }
  if (run > 0) w.bits(AC_CODE.get(0x00)!, 8);
  return dc;
}

/** RGBA pixels → a baseline JPEG. */
export function encodeJpeg(rgba: Buffer, width: number, height: number, quality: number): Buffer {
  const qLuma = scaled(STD_LUMA, quality);
  const qChroma = scaled(STD_CHROMA, quality);
  const head: number[] = [0xff, 0xd8];
  const segment = (marker: number, body: number[]) =>
    head.push(0xff, marker, (body.length + 2) >> 8, (body.length + 2) & 0xff, ...body);
  segment(0xdb, [0x00, ...ZIGZAG.map((i) => qLuma[i]!), 0x01, ...ZIGZAG.map((i) => qChroma[i]!)]);
  segment(0xc0, [
    8,
    height >> 8,
    height & 0xff,
    width >> 8,
    width & 0xff,
    3,
    ...[1, 0x11, 0, 2, 0x11, 1, 3, 0x11, 1],
  ]);
  const dcCounts = Array<number>(16).fill(0);
  dcCounts[3] = 12;
  const acCounts = Array<number>(16).fill(0);
  acCounts[7] = AC_SYMBOLS.length;
  segment(0xc4, [
    0x00,
    ...dcCounts,
    ...Array.from({ length: 12 }, (_, i) => i),
    0x10,
    ...acCounts,
    ...AC_SYMBOLS,
  ]);
  segment(0xda, [3, 1, 0x00, 2, 0x00, 3, 0x00, 0, 63, 0]);

  const w = new BitWriter();
  const prev = [0, 0, 0];
  const blocks = [new Float64Array(64), new Float64Array(64), new Float64Array(64)];
  for (let by = 0; by < height; by += 8) {
    for (let bx = 0; bx < width; bx += 8) {
      const flat = [true, true, true];
      for (let y = 0; y < 8; y += 1) {
        const py = Math.min(by + y, height - 1);
        for (let x = 0; x < 8; x += 1) {
          const p = (py * width + Math.min(bx + x, width - 1)) * 4;
          const r = rgba[p]!;
          const g = rgba[p + 1]!;
          const b = rgba[p + 2]!;
          const i = y * 8 + x;
          blocks[0]![i] = 0.299 * r + 0.587 * g + 0.114 * b - 128;
          blocks[1]![i] = -0.168736 * r - 0.331264 * g + 0.5 * b;
          blocks[2]![i] = 0.5 * r - 0.418688 * g - 0.081312 * b;
          for (let c = 0; c < 3; c += 1) {
            if (flat[c] && blocks[c]![i] !== blocks[c]![0]) flat[c] = false;
          }
        }
      }
      for (let c = 0; c < 3; c += 1) {
        prev[c] = encodeBlock(w, blocks[c]!, c === 0 ? qLuma : qChroma, prev[c]!, flat[c]!);
      }
    }
  }
  return Buffer.from([...head, ...w.finish(), 0xff, 0xd9]);
}

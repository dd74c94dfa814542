/**
 * The testbed screen: an in-process synthetic picture for tests and benchmarks, no QEMU. It
 * draws a frame counter, a "TEST TARGET" label, the text typed into it and an input marker, in
 * YUV 4:2:0 straight into a persistent buffer (only what changed is redrawn).
 *
 * It runs in the server's event loop, between input messages, so text is cheap: a character
 * cell is copied row by row from a pre-scaled bitmap, and a cell that already shows its
 * character is not drawn again (the frame counter changes one digit a frame; the typed line
 * keeps most of its characters), nor is a marker block that keeps its value. Every write to
 * the luma plane forgets the cells it covers, so the picture is byte for byte the one a full
 * redraw gives (at 640x480 the frame counter overlaps the marker).
 *
 * Drawing a frame allocates nothing on the way (cells are keyed by number, bitmaps copied byte
 * by byte, the cell map walked with forEach): the testbed runs in the server's event loop, and
 * its garbage was the largest part of the server's allocations while the input bench typed (a
 * sampling heap profile: 78 % of them over the WebSocket, 35 % over the data channel), each
 * byte of it a share of the collections that hold up the next input message.
 *
 * The picture's own buffer goes to the encoder as it is (`lend`): a write while a consumer still
 * holds it first moves the picture into another buffer (copy on write, `own`), so a frame out
 * with the encoder never changes under it, and a frame handed back before the next write costs
 * no copy and no second buffer (an idle console's encoder reads each frame within a few ms).
 *
 * The marker is what latency harnesses read: a row of 8 blocks at a fixed place, each white or
 * black, giving the low 8 bits of the change counter. Every `markChange()` (or input event)
 * increments the counter and records when; a harness that sees marker value v on a decoded
 * frame looks up when change v was drawn.
 */
import { randomFillSync } from 'node:crypto';
import { glyph, GLYPH_H, GLYPH_W } from '../../graphics/font';

export const MARKER_BITS = 8;
/** Marker geometry in pixels (16-aligned so chroma and macroblocks line up). */
export const MARKER = { x: 32, y: 32, block: 32, gap: 16 } as const;

const Y_BG = 40;
const Y_FG = 235;
const Y_BLACK = 16;
const Y_WHITE = 235;

/**
 * Sizes the picture can take: widths in 16-pixel steps (text cells, marker), heights in 8 (so
 * 1080 lines fit), up to 4K.
 */
export function testbedSizeOk(width: number, height: number): boolean {
  return (
    Number.isInteger(width) &&
    Number.isInteger(height) &&
    width >= 64 &&
    height >= 64 &&
    width <= 3840 &&
    height <= 2160 &&
    width % 16 === 0 &&
    height % 8 === 0
  );
}

export class TestbedPicture {
  // Replaced together by resize() (an EDID's mode): the same object stays shared with the HID.
  y!: Buffer;
  u!: Buffer;
  v!: Buffer;
  frame!: Buffer;
  width: number;
  height: number;
  private changeCounter = 0;
  private readonly changeTimes = new Map<number, number>();
  private text = '';
  /**
   * Text cells and marker blocks on the picture now, by place: what each shows, so an
   * unchanged one is kept.
   */
  private readonly cells = new Map<number, TextCell>();
  /** Character bitmaps in luma, one per glyph and scale. */
  private readonly bitmaps = new Map<number[], Map<number, Buffer>>();
  /**
   * While a consumer holds `frame` (lend), where the next write gets a buffer to move the
   * picture into first; null when nobody holds it.
   */
  private lentFrom: ((size: number) => Buffer) | null = null;

  constructor(width: number, height: number) {
    if (width % 16 || height % 16) throw new Error('testbed size must be a multiple of 16');
    this.width = width;
    this.height = height;
    this.allocate();
  }

  /**
   * A new size (the testbed's monitor took an EDID): fresh buffers, the label, the marker and
   * the typed line drawn again. The change counter and its times carry on.
   */
  resize(width: number, height: number): void {
    if (!testbedSizeOk(width, height)) throw new RangeError(`testbed size ${width}x${height}`);
    this.width = width;
    this.height = height;
    this.cells.clear();
    this.allocate();
    if (this.text) this.drawText(32, 160, this.text, 4);
    this.noiseRows = Math.max(0, Math.min(this.noiseRows, this.height - 256)) & ~15;
  }

  private allocate(): void {
    const ySize = this.width * this.height;
    // a buffer still lent stays with its consumer (it is of the old size)
    this.lentFrom = null;
    this.use(Buffer.alloc(ySize + ySize / 2));
    this.y.fill(Y_BG);
    this.u.fill(128);
    this.v.fill(128);
    this.drawText(32, this.height - 64, 'TEST TARGET', 4);
    this.drawMarker();
  }

  private use(frame: Buffer): void {
    const ySize = this.width * this.height;
    this.frame = frame;
    this.y = frame.subarray(0, ySize);
    this.u = frame.subarray(ySize, ySize + ySize / 4);
    this.v = frame.subarray(ySize + ySize / 4);
  }

  /**
   * The picture as it is now, in its own buffer, for a consumer: until `returned(frame)` the
   * next write first copies the picture into a buffer from `take` and goes on there. Lent again
   * before any write, it is copied now (a buffer is out with one consumer at a time).
   */
  lend(take: (size: number) => Buffer): Buffer {
    this.own();
    this.lentFrom = take;
    return this.frame;
  }

  /**
   * A lent buffer came back: true when it is still the picture's own (the next write goes into
   * it in place), false when the picture moved on (the buffer is free for reuse).
   */
  returned(buffer: Buffer): boolean {
    if (buffer !== this.frame || !this.lentFrom) return false;
    this.lentFrom = null;
    return true;
  }

  /** Before any write: a picture whose buffer is lent moves into another one first. */
  private own(): void {
    const take = this.lentFrom;
    if (!take) return;
    this.lentFrom = null;
    const next = take(this.frame.length);
    this.frame.copy(next);
    this.use(next);
  }

  get changes(): number {
    return this.changeCounter;
  }

  /** When change `n` (mod 256 as the marker shows it) was drawn, performance.now() ms. */
  changeTime(markerValue: number): number | undefined {
    return this.changeTimes.get(markerValue & 0xff);
  }

  /** A visible, deterministic change: the marker shows the next counter value. */
  markChange(now: number): number {
    this.changeCounter += 1;
    this.changeTimes.set(this.changeCounter & 0xff, now);
    this.drawMarker();
    return this.changeCounter;
  }

  /** Text typed into the testbed (issue 4 feeds key presses here). */
  typeText(chars: string, now: number): void {
    this.text = (this.text + chars).slice(-40);
    const x = 32;
    const y = 160;
    const scale = 4;
    // The band behind the line is background: cleared here only where no character of the
    // new line is drawn (its cells paint their own background), as a full clear would.
    const bandW = this.width - 64;
    const textH = GLYPH_H * scale;
    const textW = this.text.length * (GLYPH_W + 1) * scale;
    if (textW < bandW) this.fillY(x + textW, y, bandW - textW, textH, Y_BG);
    this.fillY(x, y + textH, bandW, 8, Y_BG);
    this.drawText(x, y, this.text, scale);
    this.markChange(now);
  }

  /**
   * Fills a band of rows with fresh random luma: incompressible motion, so the encoder has to
   * spend its whole bitrate (bitrate benchmarks). 0 turns it off.
   */
  setNoiseRows(rows: number): void {
    this.noiseRows = Math.max(0, Math.min(rows, this.height - 256)) & ~15;
    if (this.noiseRows === 0) this.fillY(0, 224, this.width, this.height - 224 - 96, Y_BG);
  }

  private noiseRows = 0;

  /** Called once per frame by the video source. */
  animate(): void {
    if (this.noiseRows > 0) {
      this.own();
      randomFillSync(this.y, 224 * this.width, this.noiseRows * this.width);
      this.forgetCells(0, 224, this.width, this.noiseRows);
    }
  }

  drawFrameNumber(n: number): void {
    const label = `FRAME ${String(n).padStart(8, '0')}`;
    const x = this.width - 32 - label.length * (GLYPH_W + 1) * 4;
    this.drawText(x, 32, label, 4);
  }

  private drawMarker(): void {
    const { x, y, block, gap } = MARKER;
    for (let bit = 0; bit < MARKER_BITS; bit += 1) {
      const on = (this.changeCounter >> (MARKER_BITS - 1 - bit)) & 1;
      const value = on ? Y_WHITE : Y_BLACK;
      // a block that shows its value already is kept, as a text cell is
      const key = markerKey(bit);
      if (this.cells.get(key)?.shows === value) continue;
      const bx = x + bit * (block + gap);
      this.fillY(bx, y, block, block, value);
      this.cells.set(key, { x: bx, y, w: block, h: block, shows: value });
    }
  }

  private fillY(x: number, y: number, w: number, h: number, value: number): void {
    const x0 = Math.max(0, x);
    const x1 = Math.min(this.width, x + w);
    if (x1 <= x0) return;
    this.own();
    for (let row = Math.max(0, y); row < Math.min(this.height, y + h); row += 1) {
      this.y.fill(value, row * this.width + x0, row * this.width + x1);
    }
    this.forgetCells(x, y, w, h);
  }

  /** Text cells under a rectangle written by something else must be drawn again. */
  private forgetCells(x: number, y: number, w: number, h: number, except?: number): void {
    // forEach, not for-of: the entries' [key, cell] pairs were garbage on every call
    this.cells.forEach((c, key) => {
      if (key !== except && c.x < x + w && x < c.x + c.w && c.y < y + h && y < c.y + c.h) {
        this.cells.delete(key);
      }
    });
  }

  /** A glyph's cell (its background included, one column of spacing) in luma, row by row. */
  private bitmap(rows: number[], scale: number): Buffer {
    let byScale = this.bitmaps.get(rows);
    if (!byScale) this.bitmaps.set(rows, (byScale = new Map()));
    let cell = byScale.get(scale);
    if (cell) return cell;
    const step = (GLYPH_W + 1) * scale;
    cell = Buffer.alloc(step * GLYPH_H * scale, Y_BG);
    for (let r = 0; r < GLYPH_H * scale; r += 1) {
      const bits = rows[Math.floor(r / scale)]!;
      for (let c = 0; c < GLYPH_W * scale; c += 1) {
        if (bits & (1 << (GLYPH_W - 1 - Math.floor(c / scale)))) cell[r * step + c] = Y_FG;
      }
    }
    byScale.set(scale, cell);
    return cell;
  }

  private drawText(x: number, y: number, text: string, scale: number): void {
    const step = (GLYPH_W + 1) * scale;
    const h = GLYPH_H * scale;
    for (let i = 0; i < text.length; i += 1) {
      const gx = x + i * step;
      const rows = glyph(text[i]!);
      const key = textKey(gx, y, scale);
      const shown = this.cells.get(key);
      if (shown?.shows === rows) continue;
      const cell = this.bitmap(rows, scale);
      const x0 = Math.max(0, gx);
      const x1 = Math.min(this.width, gx + step);
      if (x1 > x0) {
        this.own();
        const luma = this.y;
        for (let r = Math.max(0, -y); r < Math.min(h, this.height - y); r += 1) {
          // a row is a few dozen bytes: a loop, where a subarray a row was an object each
          const from = r * step + (x0 - gx);
          const to = (y + r) * this.width + x0;
          for (let c = 0; c < x1 - x0; c += 1) luma[to + c] = cell[from + c]!;
        }
      }
      this.forgetCells(gx, y, step, h, key);
      if (shown) shown.shows = rows;
      else this.cells.set(key, { x: gx, y, w: step, h, shows: rows });
    }
  }
}

/**
 * A text cell's key: its place and scale as one number (a string key was garbage a character a
 * frame). x and y may be negative (text cut at the picture's edge): offset into range.
 */
function textKey(x: number, y: number, scale: number): number {
  return ((y + 8192) * 32768 + (x + 16384)) * 16 + scale;
}

/** A marker block's key: negative, apart from every text cell's. */
function markerKey(bit: number): number {
  return -1 - bit;
}

interface TextCell {
  x: number;
  y: number;
  w: number;
  h: number;
  /** What it shows: a glyph (glyph() hands out one array per character) or a marker's luma. */
  shows: number[] | number;
}

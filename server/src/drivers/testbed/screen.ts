/**
 * The testbed screen: an in-process synthetic picture for tests and benchmarks, no QEMU. It
 * draws a frame counter, a "TEST TARGET" label, the text typed into it and an input marker, in
 * YUV 4:2:0 straight into a persistent buffer (only what changed is redrawn).
 *
 * The marker is what latency harnesses read: a row of 8 blocks at a fixed place, each white or
 * black, giving the low 8 bits of the change counter. Every `markChange()` (or input event)
 * increments the counter and records when; a harness that sees marker value v on a decoded
 * frame looks up when change v was drawn.
 */
import { randomFillSync } from 'node:crypto';
import { glyph, GLYPH_H, GLYPH_W } from './font';

export const MARKER_BITS = 8;
/** Marker geometry in pixels (16-aligned so chroma and macroblocks line up). */
export const MARKER = { x: 32, y: 32, block: 32, gap: 16 } as const;

const Y_BG = 40;
const Y_FG = 235;
const Y_BLACK = 16;
const Y_WHITE = 235;

export class TestbedPicture {
  readonly y: Buffer;
  readonly u: Buffer;
  readonly v: Buffer;
  readonly frame: Buffer;
  private changeCounter = 0;
  private readonly changeTimes = new Map<number, number>();
  private text = '';

  constructor(
    readonly width: number,
    readonly height: number,
  ) {
    if (width % 16 || height % 16) throw new Error('testbed size must be a multiple of 16');
    const ySize = width * height;
    this.frame = Buffer.alloc(ySize + ySize / 2);
    this.y = this.frame.subarray(0, ySize);
    this.u = this.frame.subarray(ySize, ySize + ySize / 4);
    this.v = this.frame.subarray(ySize + ySize / 4);
    this.y.fill(Y_BG);
    this.u.fill(128);
    this.v.fill(128);
    this.drawText(32, this.height - 64, 'TEST TARGET', 4);
    this.drawMarker();
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
    const y = 160;
    this.fillY(32, y, this.width - 64, GLYPH_H * 4 + 8, Y_BG);
    this.drawText(32, y, this.text, 4);
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
    if (this.noiseRows > 0) randomFillSync(this.y, 224 * this.width, this.noiseRows * this.width);
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
      this.fillY(x + bit * (block + gap), y, block, block, on ? Y_WHITE : Y_BLACK);
    }
  }

  private fillY(x: number, y: number, w: number, h: number, value: number): void {
    const x0 = Math.max(0, x);
    const x1 = Math.min(this.width, x + w);
    for (let row = Math.max(0, y); row < Math.min(this.height, y + h); row += 1) {
      this.y.fill(value, row * this.width + x0, row * this.width + x1);
    }
  }

  private drawText(x: number, y: number, text: string, scale: number): void {
    const step = (GLYPH_W + 1) * scale;
    for (let i = 0; i < text.length; i += 1) {
      const gx = x + i * step;
      this.fillY(gx, y, step, GLYPH_H * scale, Y_BG);
      const rows = glyph(text[i]!);
      for (let r = 0; r < GLYPH_H; r += 1) {
        const bits = rows[r]!;
        for (let c = 0; c < GLYPH_W; c += 1) {
          if (bits & (1 << (GLYPH_W - 1 - c)))
            this.fillY(gx + c * scale, y + r * scale, scale, scale, Y_FG);
        }
      }
    }
  }
}

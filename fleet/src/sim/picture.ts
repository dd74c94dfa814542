/**
 * A simulated device's screen (docs/cloud.md "The screen wall"): a solid colour per device, its
 * name, "SIMULATED DEVICE" and a counter, in the device server's 5x7 bitmap font
 * (server/src/graphics/font.ts), encoded (jpeg-encode.ts) at its own size or smaller to fit the
 * box the fleet gives (aspect 16:9 kept), so every tile of the wall says what it is.
 */
import { glyph, GLYPH_H, GLYPH_W } from '../../../server/src/graphics/font';
import { encodeJpeg } from './jpeg-encode';

/**
 * The simulated screen's own size; a snapshot is this scaled into the asked box, never enlarged
 * (as the device's preview). Small on purpose: a hundred devices share a process.
 */
export const SIM_SCREEN = { width: 256, height: 144 };

export type Rgb = [number, number, number];

/** A colour per device index, well apart from its neighbours', never too light for white text. */
export function simColor(index: number): Rgb {
  const hue = (index * 137.508) % 360;
  const c = 0.55;
  const x = c * (1 - Math.abs(((hue / 60) % 2) - 1));
  const [r, g, b] =
    hue < 60
      ? [c, x, 0]
      : hue < 120
        ? [x, c, 0]
        : hue < 180
          ? [0, c, x]
          : hue < 240
            ? [0, x, c]
            : hue < 300
              ? [x, 0, c]
              : [c, 0, x];
  const m = 0.12;
  return [Math.round((r + m) * 255), Math.round((g + m) * 255), Math.round((b + m) * 255)];
}

/** The size of SIM_SCREEN inside a max_width × max_height box (never larger than the screen). */
export function fitBox(maxWidth: number, maxHeight: number): { width: number; height: number } {
  const s = Math.min(maxWidth / SIM_SCREEN.width, maxHeight / SIM_SCREEN.height, 1);
  return {
    width: Math.max(1, Math.round(SIM_SCREEN.width * s)),
    height: Math.max(1, Math.round(SIM_SCREEN.height * s)),
  };
}

function drawText(
  rgba: Buffer,
  width: number,
  height: number,
  text: string,
  cy: number,
  scale: number,
): void {
  const cell = (GLYPH_W + 1) * scale;
  const x0 = Math.round((width - text.length * cell + scale) / 2);
  const y0 = Math.round(cy - (GLYPH_H * scale) / 2);
  for (let i = 0; i < text.length; i += 1) {
    const rows = glyph(text[i]!);
    for (let gy = 0; gy < GLYPH_H; gy += 1) {
      for (let gx = 0; gx < GLYPH_W; gx += 1) {
        if (!((rows[gy]! >> (GLYPH_W - 1 - gx)) & 1)) continue;
        for (let dy = 0; dy < scale; dy += 1) {
          const y = y0 + gy * scale + dy;
          if (y < 0 || y >= height) continue;
          for (let dx = 0; dx < scale; dx += 1) {
            const x = x0 + i * cell + gx * scale + dx;
            if (x < 0 || x >= width) continue;
            rgba.fill(255, (y * width + x) * 4, (y * width + x) * 4 + 3);
          }
        }
      }
    }
  }
}

/** The picture as a JPEG of `width` × `height`. */
export function renderSimScreen(opts: {
  name: string;
  color: Rgb;
  counter: number;
  width: number;
  height: number;
  quality: number;
}): Buffer {
  const { width, height } = opts;
  const rgba = Buffer.alloc(width * height * 4);
  for (let i = 0; i < rgba.length; i += 4) {
    rgba[i] = opts.color[0];
    rgba[i + 1] = opts.color[1];
    rgba[i + 2] = opts.color[2];
    rgba[i + 3] = 255;
  }
  const lines = [opts.name.toUpperCase(), 'SIMULATED DEVICE', `#${opts.counter}`];
  const longest = Math.max(...lines.map((l) => l.length));
  const scale = Math.max(
    1,
    Math.floor(Math.min(width / ((longest + 2) * (GLYPH_W + 1)), height / 40)),
  );
  const step = (GLYPH_H + 4) * scale;
  lines.forEach((line, i) =>
    drawText(rgba, width, height, line, height / 2 + (i - 1) * step, scale),
  );
  return encodeJpeg(rgba, width, height, opts.quality);
}

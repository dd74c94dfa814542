/** The simulated screen: its size inside the asked box (never enlarged), its colour, its text. */
import { describe, expect, it } from 'vitest';
import jpegJs from 'jpeg-js';
import { fitBox, renderSimScreen, SIM_SCREEN, simColor } from './picture';

describe('sim screen', () => {
  it('fits the box, aspect kept, never larger than the screen', () => {
    expect(fitBox(480, 270)).toEqual(SIM_SCREEN);
    expect(fitBox(128, 128)).toEqual({ width: 128, height: 72 });
    expect(fitBox(1000, 72)).toEqual({ width: 128, height: 72 });
  });

  it('is the device colour with white text, and changes with the counter', () => {
    const color = simColor(5);
    const pic = (counter: number) =>
      renderSimScreen({ name: 'sim-t-005', color, counter, ...SIM_SCREEN, quality: 90 });
    const img = jpegJs.decode(pic(1));
    expect([img.width, img.height]).toEqual([SIM_SCREEN.width, SIM_SCREEN.height]);
    for (let c = 0; c < 3; c += 1) expect(Math.abs(img.data[c]! - color[c]!)).toBeLessThan(6);
    let white = 0;
    for (let i = 0; i < img.data.length; i += 4)
      if (img.data[i]! > 230 && img.data[i + 1]! > 230) white += 1;
    expect(white).toBeGreaterThan(500);
    expect(pic(1).equals(pic(2))).toBe(false);
    expect(simColor(1)).not.toEqual(simColor(2));
  });
});

import { describe, expect, it } from 'vitest';
import {
  ABSOLUTE_MAX,
  ABSOLUTE_MIN,
  clientPointToAbsolute,
  computeGeometry,
  rotationTransform,
} from './geometry';

describe('computeGeometry', () => {
  it('uses 640x480 while the stream size is unknown', () => {
    const g = computeGeometry(null, { width: 1280, height: 960 }, 0);
    expect(g).toMatchObject({ realWidth: 640, realHeight: 480, viewWidth: 1280, viewHeight: 960 });
    expect(
      computeGeometry({ width: 0, height: 720 }, { width: 640, height: 480 }, 0),
    ).toMatchObject({ realWidth: 640, realHeight: 480 });
  });

  it('letterboxes a wide picture in a tall area (bars above and below)', () => {
    const g = computeGeometry({ width: 1920, height: 1080 }, { width: 1000, height: 1000 }, 0);
    expect(g).toMatchObject({ viewWidth: 1000, viewHeight: 562, left: 0, top: 219 });
    expect(g.display).toEqual({ left: 0, top: 219, width: 1000, height: 562 });
  });

  it('pillarboxes in a wide area and scales up as well as down', () => {
    const g = computeGeometry({ width: 640, height: 480 }, { width: 2000, height: 1000 }, 0);
    expect(g).toMatchObject({ viewWidth: 1333, viewHeight: 1000, top: 0, left: 333.5 });
  });

  it('fits the rotated box for 90 and 270, keeping the element unrotated in size', () => {
    for (const orientation of [90, 270] as const) {
      const g = computeGeometry(
        { width: 1920, height: 1080 },
        { width: 1000, height: 1000 },
        orientation,
      );
      // The picture stands upright: 562 wide and 1000 tall on the page.
      expect(g.display).toEqual({ left: 219, top: 0, width: 562, height: 1000 });
      // The element itself is 1000x562, centred, then rotated about its centre.
      expect(g).toMatchObject({ viewWidth: 1000, viewHeight: 562, left: 0, top: 219 });
    }
    const flat = computeGeometry({ width: 1920, height: 1080 }, { width: 1000, height: 1000 }, 180);
    expect(flat.display).toEqual({ left: 0, top: 219, width: 1000, height: 562 });
  });

  it('handles an area not measured yet', () => {
    const g = computeGeometry({ width: 1920, height: 1080 }, { width: 0, height: 0 }, 0);
    expect(g).toMatchObject({ viewWidth: 0, viewHeight: 0 });
  });

  it('rotates clockwise in CSS', () => {
    expect(rotationTransform(0)).toBeUndefined();
    expect(rotationTransform(90)).toBe('rotate(90deg)');
  });
});

describe('clientPointToAbsolute', () => {
  const display = { left: 100, top: 50, width: 801, height: 601 };
  const right = 100 + 800;
  const bottom = 50 + 600;

  it('maps the corners to the 16-bit range and the centre to 0', () => {
    expect(clientPointToAbsolute({ x: 100, y: 50 }, display, 0)).toEqual({
      x: ABSOLUTE_MIN,
      y: ABSOLUTE_MIN,
    });
    expect(clientPointToAbsolute({ x: right, y: bottom }, display, 0)).toEqual({
      x: ABSOLUTE_MAX,
      y: ABSOLUTE_MAX,
    });
    const centre = clientPointToAbsolute({ x: 500, y: 350 }, display, 0);
    expect(Math.abs(centre.x)).toBeLessThanOrEqual(1);
    expect(Math.abs(centre.y)).toBeLessThanOrEqual(1);
  });

  it('clamps points in the letterbox to the edge', () => {
    expect(clientPointToAbsolute({ x: 0, y: 10_000 }, display, 0)).toEqual({
      x: ABSOLUTE_MIN,
      y: ABSOLUTE_MAX,
    });
  });

  it("undoes the rotation: the picture's top-left corner wherever it shows", () => {
    const topLeft = { x: ABSOLUTE_MIN, y: ABSOLUTE_MIN };
    // 90° clockwise: the picture's top-left is at the page's top-right.
    expect(clientPointToAbsolute({ x: right, y: 50 }, display, 90)).toEqual(topLeft);
    expect(clientPointToAbsolute({ x: right, y: bottom }, display, 180)).toEqual(topLeft);
    expect(clientPointToAbsolute({ x: 100, y: bottom }, display, 270)).toEqual(topLeft);
    // 90°: the page's top-left is the picture's bottom-left.
    expect(clientPointToAbsolute({ x: 100, y: 50 }, display, 90)).toEqual({
      x: ABSOLUTE_MIN,
      y: ABSOLUTE_MAX,
    });
    // 270°: the page's top-left is the picture's top-right.
    expect(clientPointToAbsolute({ x: 100, y: 50 }, display, 270)).toEqual({
      x: ABSOLUTE_MAX,
      y: ABSOLUTE_MIN,
    });
  });

  it('stays within -32768..32767 for any point', () => {
    for (const o of [0, 90, 180, 270] as const) {
      for (let x = -50; x < 1000; x += 37) {
        const p = clientPointToAbsolute({ x, y: x / 2 }, display, o);
        expect(p.x).toBeGreaterThanOrEqual(ABSOLUTE_MIN);
        expect(p.x).toBeLessThanOrEqual(ABSOLUTE_MAX);
        expect(Number.isInteger(p.y)).toBe(true);
      }
    }
  });
});

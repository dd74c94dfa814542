/**
 * Geometry of the remote screen in the main screen area (SPEC 3 "Video element geometry":
 * real width and height of the stream, view width and height on the page), with the picture
 * rotated by the orientation setting (0, 90, 180, 270 degrees clockwise, done in CSS) and fitted
 * into the area with letterboxing. Pure functions: the view renders them, and the mouse
 * capture (issue 4) maps pointer positions with them.
 */
import { DEFAULT_VIDEO_HEIGHT, DEFAULT_VIDEO_WIDTH } from '@kvm/protocol/constants';
import type { Orientation } from '@kvm/protocol/enums';

export interface Size {
  width: number;
  height: number;
}

export interface Rect extends Size {
  left: number;
  top: number;
}

export interface VideoGeometry {
  /** Size of the stream's pictures (SPEC 9: 640x480 when unspecified). */
  realWidth: number;
  realHeight: number;
  /** CSS size of the (unrotated) video element. */
  viewWidth: number;
  viewHeight: number;
  /** CSS position of the unrotated element in the area; it is rotated about its centre. */
  left: number;
  top: number;
  orientation: Orientation;
  /** Where the rotated picture shows in the area: the rest is letterbox. */
  display: Rect;
}

/** 90 and 270 swap the picture's sides on the page. */
export function isQuarterTurn(orientation: Orientation): boolean {
  return orientation === 90 || orientation === 270;
}

/** The stream's size, or 640x480 when it is not known (yet). */
export function realSize(size: Partial<Size> | null | undefined): Size {
  const width = size?.width ?? 0;
  const height = size?.height ?? 0;
  return width > 0 && height > 0 && Number.isFinite(width) && Number.isFinite(height)
    ? { width, height }
    : { width: DEFAULT_VIDEO_WIDTH, height: DEFAULT_VIDEO_HEIGHT };
}

/**
 * Fits the picture, rotated, into the area: as large as fits whole (up or down), centred, with
 * the aspect ratio kept. The fit is computed on the rotated box.
 */
export function computeGeometry(
  real: Partial<Size> | null | undefined,
  area: Size,
  orientation: Orientation,
): VideoGeometry {
  const { width: realWidth, height: realHeight } = realSize(real);
  const quarter = isQuarterTurn(orientation);
  const boxWidth = quarter ? realHeight : realWidth;
  const boxHeight = quarter ? realWidth : realHeight;
  const areaWidth = Math.max(0, area.width);
  const areaHeight = Math.max(0, area.height);
  const scale = Math.min(areaWidth / boxWidth, areaHeight / boxHeight);
  const viewWidth = Math.floor(realWidth * scale);
  const viewHeight = Math.floor(realHeight * scale);
  const displayWidth = quarter ? viewHeight : viewWidth;
  const displayHeight = quarter ? viewWidth : viewHeight;
  return {
    realWidth,
    realHeight,
    viewWidth,
    viewHeight,
    left: (areaWidth - viewWidth) / 2,
    top: (areaHeight - viewHeight) / 2,
    orientation,
    display: {
      left: (areaWidth - displayWidth) / 2,
      top: (areaHeight - displayHeight) / 2,
      width: displayWidth,
      height: displayHeight,
    },
  };
}

/** The CSS transform of the video element. */
export function rotationTransform(orientation: Orientation): string | undefined {
  return orientation === 0 ? undefined : `rotate(${orientation}deg)`;
}

export const ABSOLUTE_MIN = -32768;
export const ABSOLUTE_MAX = 32767;

function clamp01(value: number): number {
  return value < 0 ? 0 : value > 1 ? 1 : value;
}

function toAbsolute(fraction: number): number {
  const value = Math.round(ABSOLUTE_MIN + fraction * (ABSOLUTE_MAX - ABSOLUTE_MIN));
  return Math.min(ABSOLUTE_MAX, Math.max(ABSOLUTE_MIN, value));
}

/**
 * Maps a pointer position (client coordinates) to the remote screen's absolute range
 * -32768..32767 per axis (wire-protocol.md 2.8 op 0x03; 0,0 is the centre), undoing the
 * rotation. `display` is where the rotated picture shows on the page, in client coordinates:
 * the video element's getBoundingClientRect() (the bounding box of a rotated element is the
 * rotated picture), or the area's rect offset by `VideoGeometry.display`. Points outside are
 * clamped to the edge, as kvmd's console does.
 */
export function clientPointToAbsolute(
  point: { x: number; y: number },
  display: Rect,
  orientation: Orientation,
): { x: number; y: number } {
  // Pixel positions 0..width-1 map to the whole range (kvmd: remap(x, 0, width - 1, ...)).
  const fx = clamp01(display.width > 1 ? (point.x - display.left) / (display.width - 1) : 0.5);
  const fy = clamp01(display.height > 1 ? (point.y - display.top) / (display.height - 1) : 0.5);
  // The picture point (u, v) shows at (fx, fy); rotation is clockwise.
  let u: number;
  let v: number;
  switch (orientation) {
    case 90:
      u = fy;
      v = 1 - fx;
      break;
    case 180:
      u = 1 - fx;
      v = 1 - fy;
      break;
    case 270:
      u = 1 - fy;
      v = fx;
      break;
    default:
      u = fx;
      v = fy;
  }
  return { x: toAbsolute(u), y: toAbsolute(v) };
}

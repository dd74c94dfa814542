/**
 * The agent's `snapshot` command (docs/cloud.md "The screen wall"): the streamer's JPEG scaled
 * into the box the fleet asks for ({max_width, max_height, quality}, bounded by WALL_MAX_*), by
 * the streamer's own preview code (media/jpeg.ts `previewBox` + the source's `preview`, the
 * same ffmpeg call as `/api/streamer/snapshot?preview=1`). A picture over WALL_MAX_JPEG_BYTES is
 * made again at a lower quality, step by step; still over at the lowest: `too_large`. No
 * picture at all: `unavailable`. No signal: the placeholder, `online: false`.
 */
import {
  WALL_MAX_HEIGHT,
  WALL_MAX_JPEG_BYTES,
  WALL_MAX_WIDTH,
  WALL_SNAPSHOT_QUALITY,
} from '@kvm/protocol';
import { jpegSize, previewBox } from '../../media/jpeg';
import { AgentCommandError } from './agent';

/** What the device's streamer gives the cloud. */
export interface CloudSnapshotSource {
  snapshot(): Promise<{ data: Buffer; width: number; height: number; online: boolean } | null>;
  /** A scaled copy of `jpeg` inside `box` (aspect kept) at `quality` (the streamer's preview). */
  preview(jpeg: Buffer, box: { width: number; height: number }, quality: number): Promise<Buffer>;
}

export interface SnapshotBox {
  maxWidth: number;
  maxHeight: number;
  quality: number;
}

/** The answer of `snapshot`. */
export interface SnapshotAnswer {
  type: 'image/jpeg';
  width: number;
  height: number;
  online: boolean;
  quality: number;
  jpeg: string;
}

/** Quality steps down when a picture is over the byte limit, to this at the lowest. */
const QUALITY_STEP = 15;
const QUALITY_MIN = 5;

function bounded(v: unknown, name: string, min: number, max: number, fallback: number): number {
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new AgentCommandError('bad_args', `${name} must be an integer in ${min}..${max}`);
  }
  return v;
}

/** The command's arguments: the box (at most WALL_MAX_WIDTH × WALL_MAX_HEIGHT) and a quality. */
export function snapshotBox(args: Record<string, unknown>): SnapshotBox {
  return {
    maxWidth: bounded(args['max_width'], 'max_width', 16, WALL_MAX_WIDTH, WALL_MAX_WIDTH),
    maxHeight: bounded(args['max_height'], 'max_height', 16, WALL_MAX_HEIGHT, WALL_MAX_HEIGHT),
    quality: bounded(args['quality'], 'quality', 1, 100, WALL_SNAPSHOT_QUALITY),
  };
}

/** The qualities tried in turn: the asked one, then lower by QUALITY_STEP to QUALITY_MIN. */
export function qualitySteps(quality: number): number[] {
  const out = [quality];
  for (let q = quality - QUALITY_STEP; q > QUALITY_MIN; q -= QUALITY_STEP) out.push(q);
  if (quality > QUALITY_MIN) out.push(QUALITY_MIN);
  return out;
}

export async function wallSnapshot(
  source: CloudSnapshotSource | null,
  args: Record<string, unknown>,
  maxBytes = WALL_MAX_JPEG_BYTES,
): Promise<SnapshotAnswer> {
  const box = snapshotBox(args);
  const snap = await source?.snapshot();
  if (!source || !snap) {
    throw new AgentCommandError('unavailable', 'No picture: the video is offline');
  }
  // always through the preview: the box is small and the quality is the fleet's
  const target = previewBox(snap.width, snap.height, box.maxWidth, box.maxHeight) ?? {
    width: snap.width,
    height: snap.height,
  };
  for (const quality of qualitySteps(box.quality)) {
    const data = await source.preview(snap.data, target, quality);
    if (data.length > maxBytes) continue;
    const size = jpegSize(data) ?? target;
    return {
      type: 'image/jpeg',
      width: size.width,
      height: size.height,
      online: snap.online,
      quality,
      jpeg: data.toString('base64'),
    };
  }
  throw new AgentCommandError(
    'too_large',
    `The snapshot is over ${maxBytes} bytes even at quality ${QUALITY_MIN}`,
  );
}

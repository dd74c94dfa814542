/**
 * `/api/streamer`, `/api/streamer/set_params`, `/api/streamer/reset`, `/api/streamer/snapshot`
 * (GET, DELETE), `/api/turn/get_turn` (wire-protocol.md 1.7, 5.11; kvmd 4.197's api/streamer.py).
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import {
  STREAMER_LIMITS,
  VIDEO_PROCESSING,
  type StreamerParams,
  type TurnState,
} from '@kvm/protocol';
import { makePreview, previewBox } from '../media/jpeg';
import type { OcrService } from '../services/ocr/ocr-service';
import { UnavailableError, type Snapshot, type StreamerService } from '../services/streamer';
import { BadRequestError } from '../errors';
import { bool, int, oneOf } from '../validators';
import { parseOcrQuery } from './ocr';

/** kvmd's answer to `resolution` on a streamer whose picture size is not settable. */
export class StreamerResolutionNotSupported extends BadRequestError {
  static override readonly defaultMessage = 'This streamer does not support resolution settings';
}

/** kvmd's `valid_stream_fps`: what a client may ask for; the limits then bound what runs. */
const DESIRED_FPS_ARG = { min: 0, max: 120 } as const;

/**
 * The OCR of `snapshot?ocr=1` (services/ocr): reads the text of a JPEG or of a raw frame; the
 * `ocr_*` arguments are parsed here first (parseOcrQuery, the 400).
 */
export type SnapshotOcr = Pick<OcrService, 'recognize'>;

/** Previews made at once; more wait their turn (each is a short ffmpeg). */
const MAX_PREVIEWS = 2;

function sendSnapshot(reply: FastifyReply, snap: Snapshot, type: string, body: Buffer | string) {
  for (const [k, v] of snap.headers) reply.header(k, v);
  return reply.type(type).send(body);
}

export function streamerRoutes(
  app: FastifyInstance,
  streamer: StreamerService,
  turn: () => TurnState,
  ocr?: SnapshotOcr,
): void {
  app.get('/api/streamer', async () => streamer.getState());

  // kvmd: restarts the streamer; answers at once.
  app.post('/api/streamer/reset', async () => {
    await streamer.reset();
    return {};
  });

  let previews = 0;
  const previewQueue: Array<() => void> = [];
  const withPreviewSlot = async <T>(fn: () => Promise<T>): Promise<T> => {
    if (previews >= MAX_PREVIEWS) await new Promise<void>((r) => previewQueue.push(r));
    else previews += 1;
    try {
      return await fn();
    } finally {
      const next = previewQueue.shift();
      if (next) next();
      else previews -= 1;
    }
  };

  // kvmd's take_snapshot: save/load/allow_offline, then OCR text, a preview or the picture.
  app.get('/api/streamer/snapshot', async (request, reply) => {
    const q = request.query as Record<string, unknown>;
    const save = bool('save', q['save'], false);
    const load = bool('load', q['load'], false);
    const allowOffline = bool('allow_offline', q['allow_offline'], false);
    const wantOcr = bool('ocr', q['ocr'], false);
    const preview = bool('preview', q['preview'], false);
    // every argument is checked before any work (a bad one applies nothing, saves nothing)
    const ocrReq = wantOcr && ocr ? parseOcrQuery(q) : undefined;
    const maxW = int('preview_max_width', q['preview_max_width'], { min: 0, fallback: 0 });
    const maxH = int('preview_max_height', q['preview_max_height'], { min: 0, fallback: 0 });
    const quality = int('preview_quality', q['preview_quality'], {
      min: 1,
      max: 100,
      fallback: 80,
    });
    if (wantOcr && !ocr) throw new UnavailableError('OCR is not available on this device');
    const snap = await streamer.takeSnapshot({ save, load, allowOffline });
    if (!snap) throw new UnavailableError();
    if (wantOcr && ocr) {
      // a live picture is read from its frame (no JPEG artefacts); a saved one from its JPEG
      const frame = !load && snap.online ? await streamer.currentFrame() : null;
      const text = await ocr.recognize(frame ?? snap.data, ocrReq!);
      return sendSnapshot(reply, snap, 'text/plain; charset=utf-8', text);
    }
    let data = snap.data;
    if (preview) {
      const box = previewBox(snap.width, snap.height, maxW, maxH);
      if (box) {
        data = await withPreviewSlot(() =>
          makePreview(streamer.jpeg.ffmpeg, snap.data, box, quality),
        );
      }
    }
    return sendSnapshot(reply, snap, 'image/jpeg', data);
  });

  app.delete('/api/streamer/snapshot', async () => {
    streamer.removeSnapshot();
    return {};
  });

  // kvmd: only non-empty values count; unchanged values are ignored; answers at once and the
  // change is applied by a quick encoder restart (viewers stay connected).
  // `desired_fps` is kvmd's 0..120 (0: as fast as the source gives, ustreamer's meaning), then
  // bounded by `limits.desired_fps` (kvmd leaves an out-of-limits value unapplied; the nearest
  // limit is what runs here, and `params` says so). The picture size is the remote computer's
  // (`features.resolution: false`), so any `resolution` is kvmd's StreamerResolutionNotSupported.
  app.post('/api/streamer/set_params', async (request) => {
    const q = request.query as Record<string, unknown>;
    const patch: Partial<StreamerParams> = {};
    const present = (k: string): boolean => q[k] !== undefined && q[k] !== '';
    if (present('h264_bitrate'))
      patch.h264_bitrate = int('h264_bitrate', q['h264_bitrate'], STREAMER_LIMITS.h264_bitrate);
    if (present('h264_gop'))
      patch.h264_gop = int('h264_gop', q['h264_gop'], STREAMER_LIMITS.h264_gop);
    if (present('desired_fps')) {
      const fps = int('desired_fps', q['desired_fps'], DESIRED_FPS_ARG);
      patch.desired_fps = Math.min(fps, STREAMER_LIMITS.desired_fps.max);
    }
    if (present('resolution')) throw new StreamerResolutionNotSupported();
    if (present('video_processing'))
      patch.video_processing = oneOf('video_processing', q['video_processing'], VIDEO_PROCESSING);
    // kvmd's (ustreamer's) JPEG quality of snapshots and MJPEG, 1..100.
    if (present('quality')) patch.quality = int('quality', q['quality'], STREAMER_LIMITS.quality);
    await streamer.setParams(patch);
    return {};
  });

  app.get('/api/turn/get_turn', async () => turn());
}

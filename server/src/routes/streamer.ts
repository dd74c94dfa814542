/** `/api/streamer`, `/api/streamer/set_params`, `/api/turn/get_turn` (wire-protocol.md 1.7, 5.11). */
import type { FastifyInstance } from 'fastify';
import {
  STREAMER_LIMITS,
  VIDEO_PROCESSING,
  type StreamerParams,
  type TurnState,
} from '@kvm/protocol';
import type { StreamerService } from '../services/streamer';
import { int, oneOf } from '../validators';

export function streamerRoutes(
  app: FastifyInstance,
  streamer: StreamerService,
  turn: () => TurnState,
): void {
  app.get('/api/streamer', async () => streamer.getState());

  // kvmd: only non-empty values count; unchanged values are ignored; answers at once and the
  // change is applied by a quick encoder restart (viewers stay connected).
  app.post('/api/streamer/set_params', async (request) => {
    const q = request.query as Record<string, unknown>;
    const patch: Partial<StreamerParams> = {};
    const present = (k: string): boolean => q[k] !== undefined && q[k] !== '';
    if (present('h264_bitrate'))
      patch.h264_bitrate = int('h264_bitrate', q['h264_bitrate'], STREAMER_LIMITS.h264_bitrate);
    if (present('h264_gop'))
      patch.h264_gop = int('h264_gop', q['h264_gop'], STREAMER_LIMITS.h264_gop);
    if (present('desired_fps'))
      patch.desired_fps = int('desired_fps', q['desired_fps'], STREAMER_LIMITS.desired_fps);
    if (present('video_processing'))
      patch.video_processing = oneOf('video_processing', q['video_processing'], VIDEO_PROCESSING);
    // kvmd's MJPEG quality, 1..100: checked so a bad value is refused before anything applies.
    if (present('quality')) int('quality', q['quality'], { min: 1, max: 100 });
    await streamer.setParams(patch);
    return {};
  });

  app.get('/api/turn/get_turn', async () => turn());
}

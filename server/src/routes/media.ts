/**
 * `/api/media/ws`: direct H.264 over a WebSocket, kvmd-media's wire format (wire-protocol.md 4):
 * server hello `{event_type:"media", event:{video:{h264:{profile_level_id}}}}`, client
 * `{event_type:"start", event:{type:"video", format:"h264"}}`, then binary
 * `[0x01][key 0|1][Annex B access unit]`; ping 0x00 -> 0xFF; 0x01 asks for a key frame: that
 * client alone is handed the cached GOP again (its key frame and every unit since), or, with
 * none cached, the encoder makes one.
 * Our addition: a start with `capture_time: true` gets `[0x02][key][float64 BE capture time,
 * device epoch ms][access unit]` instead (the console's latency readout, docs/webrtc.md).
 * A client always starts on a key frame (the cached GOP's when there is one). A client that
 * falls behind (more than 32 live frames, or `maxBufferedBytes` unsent) has its queue flushed
 * and waits for the next key frame; one whose buffer stays over that bound for `stallMs` is
 * closed with 1013 (MEDIA_SOCKET_LIMITS, ws/socket-guard.ts), so a viewer that stops reading
 * holds at most one bound plus one frame.
 *
 * kvmd 4.2xx additions: `GET /api/media` lists what the socket offers, and
 * `/api/media/ws?video=h264` is kvmd-media's "pure" mode for scripts: no hello, no start, the
 * stream begins at once and each binary message is a bare Annex B access unit (no op and key
 * bytes); pings are not answered (they would spoil the data), 0x01 still asks for a key frame.
 * Any other `video` value is 400 ValidatorError "Unsupported video type", before the upgrade.
 */
import type { FastifyInstance } from 'fastify';
import type { WebSocket } from 'ws';
import { MEDIA_PURE_VIDEO_FORMATS, type MediaResult } from '@kvm/protocol/media';
import type { AccessUnit, VideoFeed } from '../media/types';
import { ValidatorError } from '../errors';
import {
  MEDIA_SOCKET_LIMITS,
  TokenBucket,
  notAWebSocket,
  ownerOf,
  type SocketLimits,
  type SocketRegistry,
} from '../ws/socket-guard';

/**
 * Live frames the socket may hold unsent before its viewer counts as lagging. The cached GOP a
 * viewer is handed at once (at its start, or after it lost its decoder) does not count: at 60
 * fps with a GOP of 60 it is up to 59 units, and counted here half of all viewers joining were
 * called lagging at once and restarted the encoder every viewer shares.
 */
const MAX_QUEUED_FRAMES = 32;
/**
 * Key-frame requests (0x01) honoured per socket: each hands the cached GOP again, or restarts
 * the encoder for all when none is cached.
 */
const KEY_REQUESTS_PER_SECOND = 1;
const KEY_REQUEST_BURST = 2;

export function mediaRoutes(
  app: FastifyInstance,
  feed: VideoFeed,
  sockets: SocketRegistry,
  limits: SocketLimits = MEDIA_SOCKET_LIMITS,
): void {
  app.get('/api/media', async (): Promise<MediaResult> => ({
    media: { video: { h264: { profile_level_id: feed.profileLevelId } } },
  }));

  app.route({
    method: 'GET',
    url: '/api/media/ws',
    preValidation: async (request) => {
      pureFormat(request.query);
      return sockets.admitNew(ownerOf(request, 'media'));
    },
    handler: notAWebSocket,
    wsHandler: (socket: WebSocket, request) => {
      const pure = pureFormat(request.query) !== '';
      const guard = sockets.guard(socket, ownerOf(request, 'media'), limits);
      if (!guard.open) return;
      const keyRequests = new TokenBucket(KEY_REQUESTS_PER_SECOND, KEY_REQUEST_BURST);
      let unsubscribe: (() => void) | null = null;
      let waitingForKey = true;
      // Waiting because this viewer fell behind (counted as `viewer_lagging`), not because it
      // has just joined and waits for its first key frame.
      let lagged = false;
      /** Live units sent that the socket has not flushed yet. */
      let queued = 0;
      /** True while the feed hands this viewer its cached GOP (not counted in `queued`). */
      let fromCache = false;
      // the client's start asked for op 0x02 frames (the capture time in the header)
      let captureTime = false;

      const send = (unit: AccessUnit): void => {
        if (!guard.open) return;
        if (waitingForKey) {
          if (!unit.key) {
            if (lagged) feed.reportDrop?.('viewer_lagging');
            return;
          }
          waitingForKey = false;
          lagged = false;
        }
        const tooMany = !fromCache && queued >= MAX_QUEUED_FRAMES;
        if (tooMany || guard.bufferedAmount > limits.maxBufferedBytes) {
          waitingForKey = true;
          lagged = true;
          feed.reportDrop?.('viewer_lagging');
          if (guard.bufferedAmount > limits.maxBufferedBytes) guard.behind();
          if (keyRequests.take()) feed.requestKeyFrame();
          return;
        }
        const head = captureTime ? timedHead(unit) : Buffer.from([0x01, unit.key ? 1 : 0]);
        const live = !fromCache;
        const sent = guard.send(pure ? unit.data : Buffer.concat([head, unit.data]), {
          cb: () => {
            if (live) queued -= 1;
          },
        });
        if (sent && live) queued += 1;
        else if (!sent) {
          waitingForKey = true;
          lagged = true;
          feed.reportDrop?.('viewer_lagging');
        }
      };

      /** Subscribes `send`: the feed hands over its cached GOP at once, then live units. */
      const subscribe = (): void => {
        fromCache = true;
        try {
          unsubscribe = feed.subscribe(send);
        } finally {
          fromCache = false;
        }
      };
      /**
       * The viewer asked for a key frame (its decoder was reset, or failed): the cached GOP
       * again, for it alone, when the feed has one; else a key frame from the encoder.
       */
      const keyFrame = (): void => {
        if (!unsubscribe) return feed.requestKeyFrame();
        waitingForKey = true;
        lagged = false;
        fromCache = true;
        try {
          if (feed.replayGop?.(send)) return;
        } finally {
          fromCache = false;
        }
        feed.requestKeyFrame();
      };

      if (pure) subscribe();
      else {
        guard.send(
          JSON.stringify({
            event_type: 'media',
            event: { video: { h264: { profile_level_id: feed.profileLevelId } } },
          }),
        );
      }
      guard.onMessage((data, isBinary) => {
        if (isBinary) {
          if (data.length === 1 && data[0] === 0x00) {
            if (pure) return;
            if (guard.replyWith(Buffer.from([0xff]))) sockets.checkSession(guard);
          } else if (data.length === 1 && data[0] === 0x01 && keyRequests.take()) keyFrame();
          return;
        }
        let frame: unknown;
        try {
          frame = JSON.parse(data.toString('utf8'));
        } catch {
          return;
        }
        // Any JSON may arrive here (`null`, `[]`, `"x"`): read it as unknown, field by field.
        if (!isRecord(frame) || frame['event_type'] !== 'start') return;
        const event = frame['event'];
        if (isRecord(event) && event['type'] === 'video' && !unsubscribe) {
          captureTime = event['capture_time'] === true;
          // GL ignores a second start; so do we
          subscribe();
        }
      });
      guard.onClose(() => {
        unsubscribe?.();
        unsubscribe = null;
      });
    },
  });
}

/** `[0x02][key 0|1][capture time: float64 BE, device epoch ms]`, the head of a timed frame. */
function timedHead(unit: AccessUnit): Buffer {
  const head = Buffer.allocUnsafe(10);
  head[0] = 0x02;
  head[1] = unit.key ? 1 : 0;
  head.writeDoubleBE(performance.timeOrigin + unit.capturedAt, 2);
  return head;
}

/** The `video` query: '' (regular mode) or a format of MEDIA_PURE_VIDEO_FORMATS, else 400. */
function pureFormat(query: unknown): string {
  const raw = (query as Record<string, unknown> | undefined)?.['video'];
  if (raw === undefined) return '';
  const v = typeof raw === 'string' ? raw.trim() : null;
  if (v === '' || (v !== null && (MEDIA_PURE_VIDEO_FORMATS as readonly string[]).includes(v))) {
    return v;
  }
  throw new ValidatorError('Unsupported video type');
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

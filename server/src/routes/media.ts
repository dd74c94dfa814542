/**
 * `/api/media/ws`: direct H.264 over a WebSocket, kvmd-media's wire format (wire-protocol.md 4):
 * server hello `{event_type:"media", event:{video:{h264:{profile_level_id}}}}`, client
 * `{event_type:"start", event:{type:"video", format:"h264"}}`, then binary
 * `[0x01][key 0|1][Annex B access unit]`; ping 0x00 -> 0xFF; 0x01 asks for a key frame.
 * A client always starts on a key frame. A client that falls behind (more than 32 frames, or
 * a full send buffer) has its queue flushed and waits for the next key frame.
 */
import type { FastifyInstance } from 'fastify';
import type { WebSocket } from 'ws';
import type { AccessUnit, VideoFeed } from '../media/types';

const MAX_QUEUED_FRAMES = 32;
/** Bytes the socket may hold unsent before the client counts as behind. */
const MAX_BUFFERED = 8 * 1024 * 1024;

export function mediaRoutes(app: FastifyInstance, feed: VideoFeed): void {
  app.get('/api/media/ws', { websocket: true }, (socket: WebSocket) => {
    let unsubscribe: (() => void) | null = null;
    let waitingForKey = true;
    let queued = 0;

    const send = (unit: AccessUnit): void => {
      if (socket.readyState !== socket.OPEN) return;
      if (waitingForKey) {
        if (!unit.key) return;
        waitingForKey = false;
      }
      if (queued >= MAX_QUEUED_FRAMES || socket.bufferedAmount > MAX_BUFFERED) {
        waitingForKey = true;
        feed.requestKeyFrame();
        return;
      }
      queued += 1;
      const head = Buffer.from([0x01, unit.key ? 1 : 0]);
      socket.send(Buffer.concat([head, unit.data]), { binary: true }, () => {
        queued -= 1;
      });
    };

    socket.send(
      JSON.stringify({
        event_type: 'media',
        event: { video: { h264: { profile_level_id: feed.profileLevelId } } },
      }),
    );
    socket.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) {
        if (data.length === 1 && data[0] === 0x00)
          socket.send(Buffer.from([0xff]), { binary: true });
        else if (data.length === 1 && data[0] === 0x01) feed.requestKeyFrame();
        return;
      }
      let frame: { event_type?: unknown; event?: { type?: unknown; format?: unknown } };
      try {
        frame = JSON.parse(data.toString('utf8')) as typeof frame;
      } catch {
        return;
      }
      if (frame.event_type === 'start' && frame.event?.type === 'video' && !unsubscribe) {
        // GL ignores a second start; so do we
        unsubscribe = feed.subscribe(send);
      }
    });
    socket.on('close', () => {
      unsubscribe?.();
      unsubscribe = null;
    });
  });
}

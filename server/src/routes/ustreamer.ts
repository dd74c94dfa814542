/**
 * ustreamer's HTTP surface, as kvmd's nginx proxies it under `/streamer/` (behind the session
 * check): `/streamer/stream` (MJPEG), `/streamer/snapshot`, `/streamer/state`. The bytes follow
 * ustreamer 6.x `src/ustreamer/http/server.c` (wire-protocol.md 1.7).
 *
 * A client gets the newest picture whenever its socket took the previous one: a slow client
 * skips pictures instead of queueing them, so each holds at most one picture in memory.
 */
import type { FastifyInstance } from 'fastify';
import type { Jpeg } from '../media/jpeg';
import {
  NO_CACHE_HEADERS,
  UnavailableError,
  monotonicS,
  realTimeS,
  ustreamerSnapshotHeaders,
  type MjpegClient,
  type StreamerService,
} from '../services/streamer';
import { fail } from '../validators';

const BOUNDARY = 'boundarydonotcross';
const RN = '\r\n';
/** While the source is offline, the "no live video" picture goes out this often. */
const OFFLINE_PICTURE_MS = 1000;

/** ustreamer's `us_evkeyvalq_get_true`: "1…", "true" or "yes" (any case); anything else false. */
function flag(v: unknown): boolean {
  if (typeof v !== 'string') return false;
  return v.startsWith('1') || /^(true|yes)$/i.test(v);
}

/** The per-picture part headers (server.c `_http_callback_stream_write`). */
function partHeaders(client: MjpegClient, jpeg: Jpeg, dropped: number): string {
  const size = client.zero_data ? 0 : jpeg.data.length;
  let head = `Content-Type: image/jpeg${RN}Content-Length: ${size}${RN}X-Timestamp: ${realTimeS()}${RN}`;
  if (!client.extra_headers) return head + RN;
  const now = performance.now();
  head +=
    `X-UStreamer-Online: ${jpeg.online}${RN}` +
    `X-UStreamer-Dropped: ${dropped}${RN}` +
    `X-UStreamer-Width: ${jpeg.width}${RN}` +
    `X-UStreamer-Height: ${jpeg.height}${RN}` +
    `X-UStreamer-Client-FPS: ${client.fps}${RN}` +
    `X-UStreamer-Grab-Begin-Time: ${monotonicS(jpeg.capturedAt)}${RN}` +
    `X-UStreamer-Grab-End-Time: ${monotonicS(jpeg.capturedAt)}${RN}` +
    `X-UStreamer-Encode-Begin-Time: ${monotonicS(jpeg.encodeBeginAt)}${RN}` +
    `X-UStreamer-Encode-End-Time: ${monotonicS(jpeg.encodeEndAt)}${RN}` +
    `X-UStreamer-Expose-Begin-Time: ${monotonicS(jpeg.encodeEndAt)}${RN}` +
    `X-UStreamer-Expose-Cmp-Time: ${monotonicS(jpeg.encodeEndAt)}${RN}` +
    `X-UStreamer-Expose-End-Time: ${monotonicS(jpeg.encodeEndAt)}${RN}` +
    `X-UStreamer-Send-Time: ${monotonicS(now)}${RN}` +
    `X-UStreamer-Latency: ${((now - jpeg.capturedAt) / 1000).toFixed(6)}${RN}` +
    RN;
  return head;
}

const advanceHeaders = (): string =>
  `Content-Type: image/jpeg${RN}X-Timestamp: ${realTimeS()}${RN}${RN}`;

export function ustreamerRoutes(app: FastifyInstance, streamer: StreamerService): void {
  app.get('/streamer/state', async (_request, reply) =>
    reply
      .type('application/json')
      .send(JSON.stringify({ ok: true, result: streamer.ustreamerState() })),
  );

  app.get('/streamer/snapshot', async (_request, reply) => {
    const jpeg = await streamer.currentJpeg();
    if (!jpeg) throw new UnavailableError();
    for (const [k, v] of ustreamerSnapshotHeaders(jpeg)) reply.header(k, v);
    return reply.type('image/jpeg').send(jpeg.data);
  });

  app.get('/streamer/stream', async (request, reply) => {
    const q = request.query as Record<string, unknown>;
    const rawKey = q['key'];
    // the key goes into a Set-Cookie header: the characters a cookie value may hold
    if (rawKey !== undefined && (typeof rawKey !== 'string' || !/^[\w.~-]{0,64}$/.test(rawKey)))
      fail('key', rawKey as string, 'string of at most 64 letters, digits, . _ ~ -');
    if (request.method === 'HEAD') return reply.code(200).send('');
    const client = streamer.addMjpegClient({
      key: typeof rawKey === 'string' && rawKey !== '' ? rawKey : '0',
      extra_headers: flag(q['extra_headers']),
      advance_headers: flag(q['advance_headers']),
      dual_final_frames: flag(q['dual_final_frames']),
      zero_data: flag(q['zero_data']),
    });
    reply.hijack();
    const res = reply.raw;
    // ustreamer answers as HTTP/1.0: the body runs until the connection closes, unchunked
    res.useChunkedEncodingByDefault = false;
    res.shouldKeepAlive = false;
    const headers: Record<string, string> = Object.fromEntries(NO_CACHE_HEADERS);
    headers['Set-Cookie'] = `stream_client=${client.key}/${client.id}; path=/; max-age=30`;
    headers['Content-Type'] = `multipart/x-mixed-replace;boundary=${BOUNDARY}`;
    res.writeHead(200, 'OK', headers);
    res.write(`--${BOUNDARY}${RN}${client.advance_headers ? advanceHeaders() : ''}`);

    let pending: Jpeg | null = null;
    let closed = false;
    const send = (jpeg: Jpeg): void => {
      if (closed) return;
      if (res.writableNeedDrain) {
        pending = jpeg; // the newest one waits; the one it replaces is skipped
        return;
      }
      client.sent += 1;
      res.cork();
      if (!client.advance_headers) res.write(partHeaders(client, jpeg, streamer.jpeg.dropped));
      if (!client.zero_data) res.write(jpeg.data);
      res.write(`${RN}--${BOUNDARY}${RN}${client.advance_headers ? advanceHeaders() : ''}`);
      res.uncork();
    };
    res.on('drain', () => {
      const next = pending;
      pending = null;
      if (next) send(next);
    });
    const unsubscribe = streamer.jpeg.stream(send);
    // no frames while the source is offline: ustreamer's "no live video" picture instead
    const offline = setInterval(() => {
      if (streamer.online) return;
      void streamer.currentJpeg().then((j) => {
        if (j && !j.online) send(j);
      });
    }, OFFLINE_PICTURE_MS);
    offline.unref();
    if (!streamer.online) {
      void streamer.currentJpeg().then((j) => {
        if (j && !j.online) send(j);
      });
    }
    const done = (): void => {
      if (closed) return;
      closed = true;
      pending = null;
      clearInterval(offline);
      unsubscribe();
      streamer.removeMjpegClient(client);
    };
    res.on('close', done);
    res.on('error', done);
    if (request.socket.destroyed) done();
  });
}

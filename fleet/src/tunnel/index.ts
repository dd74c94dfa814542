/**
 * The console through the fleet (docs/cloud.md "Tunnel"): `/d/<deviceId>/...`, HTTP (every
 * method, bodies streamed both ways under the streams' flow control) and WebSocket (any path,
 * subprotocols passed through), to the replica holding the device's agent socket.
 *
 * Who may: the fleet session's user, for a device of their account; any other device id is 404
 * whether it exists or not (an account never learns of another's devices). The browser's Cookie
 * and Authorization stay on the fleet; the device's Set-Cookie stays off the browser.
 */
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import {
  AGENT_STREAM_WINDOW,
  CLOUD_TIMEOUT_MS,
  CONSOLE_PATH_PREFIX,
  STREAM_KIND,
  type StreamKind,
} from '@kvm/protocol';
import { NotFoundError, UnauthorizedError, toHttp } from '../../../server/src/errors';
import type { FleetContext, FleetDevice, FleetUser } from '../context';
import { CrossOriginError } from '../errors';
import { sameOrigin } from '../http';
import { MAX_STREAM_PAYLOAD } from '../agents/connection';
import { DeviceOfflineError, DeviceRefusedError, DeviceTimeoutError } from '../agents/errors';
import type { Relay } from '../agents/relay';
import { StreamInbox, type OpenedStream, type StreamHead } from '../agents/stream';
import { HTML_REWRITE_MAX, headersToBrowser, headersToDevice, rewriteHtml } from './html';

/** The fleet's sign-in page (fleet/src/ui: one page, `#signin`), told where to go back to. */
export function signInUrl(next: string): string {
  return `/?next=${encodeURIComponent(next)}#signin`;
}
/** Request bodies go in chunks of this (NATS between replicas carries ≤ 64 KiB messages too). */
export const BODY_CHUNK = 64 * 1024;
/** A device id as the fleet makes them; anything else is no device. */
const DEVICE_ID_RE = /^[A-Za-z0-9_-]{1,64}$/;
/** "console opened" is logged once per user and device within this. */
const OPENED_EVENT_EVERY_MS = 60_000;

export interface TunnelOptions {
  /** How long the device may take to answer a request's head (CLOUD_TIMEOUT_MS). */
  headTimeoutMs: number;
}

/** The subprotocol the device chose for a tunnelled socket, for the handshake (handleProtocols). */
const chosenProtocols = new WeakMap<IncomingMessage, string | false>();

/**
 * ws's handleProtocols for the fleet: a tunnelled socket answers with the device's choice; any
 * other keeps ws's default (the first one asked).
 */
export function handleProtocols(protocols: Set<string>, req: IncomingMessage): string | false {
  const chosen = chosenProtocols.get(req);
  if (chosen !== undefined) return chosen;
  const first = protocols.values().next();
  return first.done ? false : first.value;
}

interface Admitted {
  deviceId: string;
  base: string;
  user: FleetUser;
  device: FleetDevice;
  /** Path and query on the device. */
  path: string;
}

interface PendingSocket {
  stream: OpenedStream;
  inbox: StreamInbox;
  /** Ends the stream if the browser goes before the handshake completes. */
  gone: () => void;
}

function sendError(reply: FastifyReply, err: unknown): FastifyReply {
  const { status, body } = toHttp(err);
  return reply.code(status).header('cache-control', 'no-store').send(body);
}

function wantsHtml(req: FastifyRequest): boolean {
  return req.method === 'GET' && String(req.headers.accept ?? '').includes('text/html');
}

/** The head, or DeviceTimeoutError / DeviceOfflineError (the device ended the stream first). */
async function awaitHead(
  inbox: StreamInbox,
  stream: OpenedStream,
  ms: number,
): Promise<StreamHead> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      inbox.headed.catch((e: { reason?: string }) => {
        throw new DeviceOfflineError(
          `The device ended the request without an answer${e.reason ? `: ${e.reason}` : ''}`,
        );
      }),
      new Promise<never>((_r, reject) => {
        timer = setTimeout(() => reject(new DeviceTimeoutError()), ms);
      }),
    ]);
  } catch (e) {
    stream.abort('no answer');
    throw e;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Streams a request body to the device in BODY_CHUNK pieces, each only when the window has room
 * for it (never more than one window in flight), then ends the request. `sent` hears each piece
 * (the fleet's own client counts it as progress).
 */
export async function pumpBody(
  body: AsyncIterable<Buffer | Uint8Array> | Iterable<Buffer | Uint8Array>,
  stream: OpenedStream,
  sent?: (n: number) => void,
): Promise<void> {
  for await (const chunk of body) {
    for (let off = 0; off < chunk.byteLength; off += BODY_CHUNK) {
      const part = chunk.subarray(off, off + BODY_CHUNK);
      await stream.writable(part.byteLength);
      stream.send(STREAM_KIND.data, part);
      sent?.(part.byteLength);
    }
  }
  stream.end();
}

/** A WebSocket close code that may be sent (RFC 6455 7.4). */
function sendableCode(code: number | undefined): number {
  if (code === undefined) return 1000;
  if (
    (code >= 1000 && code <= 1003) ||
    (code >= 1007 && code <= 1014) ||
    (code >= 3000 && code <= 4999)
  ) {
    return code;
  }
  return 1011;
}

function decoderFor(encoding: string | undefined): NodeJS.ReadWriteStream | null {
  switch ((encoding ?? '').toLowerCase()) {
    case 'gzip':
    case 'x-gzip':
      return createGunzip();
    case 'deflate':
      return createInflate();
    case 'br':
      return createBrotliDecompress();
    default:
      return null;
  }
}

export async function registerTunnel(
  app: FastifyInstance,
  ctx: FleetContext,
  relay: Relay,
  options: Partial<TunnelOptions> = {},
): Promise<void> {
  const opts: TunnelOptions = { headTimeoutMs: CLOUD_TIMEOUT_MS, ...options };
  const pendingSockets = new WeakMap<FastifyRequest, PendingSocket>();
  const lastOpened = new Map<string, number>();

  function consoleOpened(a: Admitted): void {
    const key = `${a.user.accountId}/${a.deviceId}`;
    const now = Date.now();
    if ((lastOpened.get(key) ?? 0) > now - OPENED_EVENT_EVERY_MS) return;
    lastOpened.set(key, now);
    if (lastOpened.size > 10_000) lastOpened.clear();
    ctx.devices
      .event('console_opened', {
        deviceId: a.deviceId,
        accountId: a.user.accountId,
        detail: { user: a.user.username, replica: ctx.config.replica },
      })
      .catch((err: unknown) => ctx.log.warn({ err }, 'console_opened event not recorded'));
  }

  /** The user and their device, or an answer already sent (401/redirect, 404). */
  async function admit(req: FastifyRequest, reply: FastifyReply): Promise<Admitted | null> {
    const deviceId = (req.params as { deviceId: string }).deviceId;
    const user = await ctx.userOf(req);
    if (!user) {
      if (wantsHtml(req) && !req.ws) {
        await reply.redirect(signInUrl(req.url), 302);
      } else {
        await sendError(reply, new UnauthorizedError('Sign in to the fleet first'));
      }
      return null;
    }
    const base = `${CONSOLE_PATH_PREFIX}${deviceId}`;
    // The id as typed (not percent-encoded): the rest of the raw URL is cut after it.
    const canonical = req.raw.url!.startsWith(base);
    const device =
      canonical && DEVICE_ID_RE.test(deviceId) ? await ctx.devices.forUser(user, deviceId) : null;
    if (!device) {
      await sendError(reply, new NotFoundError('No such device'));
      return null;
    }
    // The raw URL keeps the browser's own encoding of the rest.
    const path = req.raw.url!.slice(base.length) || '/';
    return { deviceId, base, user, device, path: path.startsWith('/') ? path : `/${path}` };
  }

  function userOfStream(a: Admitted): { id: string; name: string } {
    return { id: a.user.accountId, name: a.user.username };
  }

  // ---- HTTP ---------------------------------------------------------------------------------

  async function httpHandler(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const a = await admit(req, reply);
    if (!a) return;
    if (!req.raw.url!.startsWith(`${a.base}/`)) {
      // `/d/<id>`: the console's relative URLs need the slash.
      await reply.redirect(`${a.base}/${req.raw.url!.slice(a.base.length)}`, 301);
      return;
    }
    const rewrite = wantsHtml(req);
    const headers = headersToDevice(req.headers);
    // The fleet rewrites HTML: ask for it uncompressed (a compressed one is decoded below).
    if (rewrite) delete headers['accept-encoding'];
    const inbox = new StreamInbox();
    let stream: OpenedStream;
    try {
      stream = await relay.openStream(
        a.deviceId,
        { kind: 'http', method: req.method, path: a.path, headers, user: userOfStream(a) },
        inbox,
      );
    } catch (err) {
      await sendError(reply, err);
      return;
    }
    const res = reply.raw;
    let finished = false;
    res.on('close', () => {
      if (!finished) stream.abort('browser left');
    });
    const body =
      req.method === 'GET' || req.method === 'HEAD' ? Promise.resolve() : pumpBody(req.raw, stream);
    body.catch(() => stream.abort('request body failed'));

    let head: StreamHead;
    try {
      head = await awaitHead(inbox, stream, opts.headTimeoutMs);
    } catch (err) {
      finished = true;
      await sendError(reply, err);
      return;
    }
    const isHtml =
      rewrite && (head.headers['content-type'] ?? '').toLowerCase().startsWith('text/html');
    if (isHtml) consoleOpened(a);
    const out = headersToBrowser(head.headers, a.base);
    reply.hijack();

    if (isHtml) {
      // Buffered whole (at most HTML_REWRITE_MAX, then given up), rewritten, sent with its length.
      const chunks: Buffer[] = [];
      let size = 0;
      const fail = (message: string): void => {
        finished = true;
        const { body } = toHttp(new DeviceOfflineError(message));
        res.writeHead(502, { 'content-type': 'application/json', 'cache-control': 'no-store' });
        res.end(JSON.stringify(body));
      };
      await new Promise<void>((resolve) => {
        inbox.attach({
          data(_kind, payload) {
            if (finished) return;
            size += payload.byteLength;
            if (size > HTML_REWRITE_MAX) {
              stream.abort('page too large');
              fail('The page is too large to serve through the fleet');
              resolve();
              return;
            }
            chunks.push(Buffer.from(payload));
            stream.ack(payload.byteLength);
          },
          end(code) {
            if (finished) return;
            if (code !== undefined) {
              fail('The device failed mid-answer');
              resolve();
              return;
            }
            finished = true;
            void (async () => {
              let html = Buffer.concat(chunks);
              const decoder = decoderFor(out['content-encoding']);
              if (decoder) {
                const parts: Buffer[] = [];
                let n = 0;
                for await (const c of Readable.from([html]).pipe(
                  decoder,
                ) as AsyncIterable<Buffer>) {
                  n += c.byteLength;
                  if (n > HTML_REWRITE_MAX) throw new Error('decoded page too large');
                  parts.push(c);
                }
                html = Buffer.concat(parts);
                delete out['content-encoding'];
              }
              const text = rewriteHtml(html.toString('utf8'), a.base);
              out['content-length'] = String(Buffer.byteLength(text));
              res.writeHead(head.status, out);
              res.end(req.method === 'HEAD' ? undefined : text);
            })()
              .catch(() => fail('The page could not be decoded or is too large'))
              .finally(resolve);
          },
        });
      });
      return;
    }

    res.writeHead(head.status, out);
    inbox.attach({
      data(_kind, payload) {
        const n = payload.byteLength;
        // Acknowledged once Node handed the bytes to the socket: one window in flight at most.
        res.write(payload, () => stream.ack(n));
      },
      end(code) {
        finished = true;
        if (code !== undefined) res.destroy();
        else res.end();
      },
    });
  }

  // ---- WebSocket ----------------------------------------------------------------------------

  /** Before the upgrade: admit, open the device's socket, answer its refusal as HTTP. */
  async function wsPreValidation(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (!req.ws) return;
    // A browser always sends Origin on a WebSocket: another site's page opening the console's
    // socket with the fleet's cookie is refused before anything reaches the device.
    const origin = req.headers.origin;
    if (origin !== undefined && !sameOrigin(origin, req.headers.host)) {
      await sendError(reply, new CrossOriginError());
      return;
    }
    const a = await admit(req, reply);
    if (!a) return;
    const protocols = String(req.headers['sec-websocket-protocol'] ?? '')
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean);
    const inbox = new StreamInbox();
    let stream: OpenedStream;
    try {
      stream = await relay.openStream(
        a.deviceId,
        {
          kind: 'ws',
          method: 'GET',
          path: a.path,
          headers: headersToDevice(req.headers),
          user: userOfStream(a),
          ...(protocols.length ? { protocols } : {}),
        },
        inbox,
      );
    } catch (err) {
      await sendError(reply, err);
      return;
    }
    // The browser gone before the handshake ends: the device's socket goes too.
    const browser = req.raw.socket;
    const gone = (): void => {
      pendingSockets.delete(req);
      stream.abort('browser left');
    };
    browser.once('close', gone);
    let head: StreamHead;
    try {
      head = await awaitHead(inbox, stream, opts.headTimeoutMs);
    } catch (err) {
      browser.off('close', gone);
      await sendError(reply, err);
      return;
    }
    if (browser.destroyed) return;
    if (head.status !== 101) {
      browser.off('close', gone);
      stream.abort('refused');
      await sendError(
        reply,
        new DeviceRefusedError(
          head.status >= 400 ? head.status : 502,
          `The device refused the socket (${head.status})`,
        ),
      );
      return;
    }
    chosenProtocols.set(
      req.raw,
      head.protocol && protocols.includes(head.protocol) ? head.protocol : false,
    );
    pendingSockets.set(req, { stream, inbox, gone });
    consoleOpened(a);
  }

  function wsHandler(socket: WebSocket, req: FastifyRequest): void {
    const p = pendingSockets.get(req);
    if (!p) {
      socket.close(1011, 'no stream');
      return;
    }
    pendingSockets.delete(req);
    const { stream, inbox } = p;
    req.raw.socket.off('close', p.gone);
    let closed = false;
    inbox.attach({
      data(kind, payload) {
        const n = payload.byteLength;
        socket.send(payload, { binary: kind !== STREAM_KIND.text }, () => stream.ack(n));
      },
      end(code, reason) {
        closed = true;
        socket.close(sendableCode(code), (reason ?? '').slice(0, 120));
      },
    });
    // Browser → device, in order, within the window; the socket pauses while a window waits.
    let chain = Promise.resolve();
    let queued = 0;
    socket.on('message', (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => {
      const buf = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as Buffer);
      if (buf.byteLength > MAX_STREAM_PAYLOAD) {
        socket.close(1009, 'message too large');
        return;
      }
      queued += buf.byteLength;
      if (queued > AGENT_STREAM_WINDOW) socket.pause();
      const kind: StreamKind = isBinary ? STREAM_KIND.binary : STREAM_KIND.text;
      chain = chain
        .then(async () => {
          await stream.writable(buf.byteLength);
          stream.send(kind, buf);
          queued -= buf.byteLength;
          if (queued <= AGENT_STREAM_WINDOW && socket.isPaused) socket.resume();
        })
        .catch(() => {
          if (!closed) socket.terminate();
        });
    });
    socket.on('close', (code, reason) => {
      if (closed) return;
      closed = true;
      stream.end(code === 1005 || code === 1006 ? 1001 : code, reason.toString());
    });
  }

  await app.register(async (scope) => {
    // Bodies are streamed to the device as they come, never parsed here.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_req, _payload, done) => done(null));
    const url = `${CONSOLE_PATH_PREFIX}:deviceId/*`;
    scope.route({
      method: 'GET',
      url,
      handler: httpHandler,
      wsHandler,
      preValidation: wsPreValidation,
    });
    scope.route({
      method: ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
      url,
      handler: httpHandler,
    });
    // `/d/<id>` alone: the same route (the core's router ignores trailing slashes, so a route
    // of its own would catch `/d/<id>/` too); httpHandler sends it under the slash.
    scope.route({
      method: 'GET',
      url: `${CONSOLE_PATH_PREFIX}:deviceId`,
      handler: httpHandler,
      wsHandler,
      preValidation: wsPreValidation,
    });
  });
}

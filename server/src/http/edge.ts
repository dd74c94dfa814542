/**
 * The HTTP edge: what a connection may hold before a route sees it (issue 9, items 9 and 19).
 *
 * - headers: the request line and headers must arrive within `headers_timeout_s` (Node's
 *   headersTimeout, checked every second), and a TLS handshake within the same time;
 * - bodies: no total time (a multi-GB upload on a slow link is legitimate), but a connection
 *   idle in both directions for `idle_timeout_s` is closed: a stalled upload or a silent client
 *   holds it no longer. Node's requestTimeout would cut long uploads, so it is off;
 * - keep-alive: an idle connection between requests is closed after `keep_alive_timeout_s`;
 * - count: one client address may hold `max_connections_per_address` open connections (the
 *   next ones are closed at once), and the whole server a number derived from the process's
 *   open-file limit, so accepting never fails for lack of descriptors;
 * - parse errors (bad request line, bad header, oversize headers, header timeout) are answered
 *   in the kvmd envelope by `answerClientError`, not with Node's bare text.
 *
 * WebSockets are not touched once upgraded (ws clears the idle timer); their bounds are the
 * socket guard's.
 */
import { STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import Fastify, {
  LogController,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';
import { unmapIpv4 } from '@kvm/protocol';
import type { Logger } from '../log';
import {
  MethodNotAllowedError,
  toHttp,
  UnsupportedMediaTypeError,
  ValidatorError,
} from '../errors';
import { openFileLimit } from '../fd-limit';
import type { LogBudget } from './log-budget';

export interface EdgeLimits {
  headersTimeoutMs: number;
  idleTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxConnectionsPerAddress: number;
  /** Whole-server cap; null when the open-file limit is unknown. */
  maxConnections: number | null;
}

/** Descriptors kept free of connections: data files, log, child pipes, QEMU, ffmpeg. */
export const FD_RESERVE = 256;

export function edgeLimits(
  server: {
    headers_timeout_s: number;
    idle_timeout_s: number;
    keep_alive_timeout_s: number;
    max_connections_per_address: number;
  },
  fdLimit: number | null = openFileLimit(),
): EdgeLimits {
  return {
    headersTimeoutMs: Math.round(server.headers_timeout_s * 1000),
    idleTimeoutMs: Math.round(server.idle_timeout_s * 1000),
    keepAliveTimeoutMs: Math.round(server.keep_alive_timeout_s * 1000),
    maxConnectionsPerAddress: server.max_connections_per_address,
    maxConnections: fdLimit === null ? null : Math.max(64, fdLimit - FD_RESERVE),
  };
}

/**
 * Options only the server's constructor takes (Node reads them once): how often expired
 * header waits are looked for, and the TLS handshake's deadline.
 */
export function edgeServerOptions(limits: EdgeLimits): {
  connectionsCheckingInterval: number;
  headersTimeout: number;
  requestTimeout: number;
  keepAliveTimeout: number;
  handshakeTimeout: number;
  requireHostHeader: boolean;
} {
  return {
    requireHostHeader: false,
    connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs),
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: 0,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    handshakeTimeout: limits.headersTimeoutMs,
  };
}

/** `::ffff:1.2.3.4` and `1.2.3.4` are the same client. */
function clientKey(address: string | undefined): string {
  if (!address) return '?';
  return unmapIpv4(address);
}

/** Applies the limits to a listening (or about to listen) HTTP or HTTPS server. */
export function guardServer(
  server: Server,
  limits: EdgeLimits,
  log: Logger,
  budget: LogBudget,
): void {
  server.headersTimeout = limits.headersTimeoutMs;
  server.requestTimeout = 0;
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  // Without a 'timeout' listener Node destroys the idle socket itself.
  server.setTimeout(limits.idleTimeoutMs);
  if (limits.maxConnections !== null) server.maxConnections = limits.maxConnections;

  const open = new Map<string, number>();
  server.on('connection', (socket: Duplex & { remoteAddress?: string }) => {
    const key = clientKey(socket.remoteAddress);
    const count = (open.get(key) ?? 0) + 1;
    if (count > limits.maxConnectionsPerAddress) {
      socket.destroy();
      const line = budget.take();
      if (line.ok) {
        log.warn(
          {
            address: key,
            cap: limits.maxConnectionsPerAddress,
            ...(line.suppressed > 0 ? { suppressed: line.suppressed } : {}),
          },
          'connection refused: too many open from this address',
        );
      }
      return;
    }
    open.set(key, count);
    socket.once('close', () => {
      const left = (open.get(key) ?? 1) - 1;
      if (left <= 0) open.delete(key);
      else open.set(key, left);
    });
  });
}

/**
 * The server's `clientError`: Node's HTTP parser refused the bytes (or the headers did not
 * arrive in time). The answer is the kvmd envelope with the status `toHttp` gives (400, 431,
 * 408), then the connection is closed; a connection whose answer has begun, or already
 * gone, and any other error (a TLS handshake that failed or timed out) are only closed.
 */
export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  // A response whose head went out cannot be followed by another one (Node's own rule).
  const inFlight = (socket as { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
  const busy = inFlight?.headersSent === true;
  // https forwards TLS handshake errors here too: no HTTP answer fits inside a failed handshake.
  const http = err.code?.startsWith('HPE_') || err.code === 'ERR_HTTP_REQUEST_TIMEOUT';
  if (!http || !socket.writable || busy) {
    socket.destroy();
    return;
  }
  const answer = toHttp(err);
  const body = JSON.stringify(answer.body);
  const head = [
    `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? 'Error'}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
  ].join('\r\n');
  socket.once('finish', () => socket.destroy());
  // a client that does not read never lets 'finish' come
  setTimeout(() => socket.destroy(), 5000).unref();
  socket.end(`${head}\r\n\r\n${body}`);
}

/**
 * Node answers a HTTP/1.1 request without Host with its own bare 400 (requireHostHeader), so
 * that check is off in the server and made here, in the envelope (RFC 9112 3.2).
 */
export function requireHost(
  request: {
    raw: { httpVersionMajor: number; httpVersionMinor: number };
    headers: { host?: string };
  },
  _reply: unknown,
  done: (err?: Error) => void,
): void {
  const { httpVersionMajor, httpVersionMinor } = request.raw;
  const http11 = httpVersionMajor > 1 || (httpVersionMajor === 1 && httpVersionMinor >= 1);
  if (http11 && request.headers.host === undefined) {
    done(new ValidatorError('A HTTP/1.1 request needs a Host header'));
    return;
  }
  done();
}

/**
 * Fastify's own early refusals (a URL that does not decode, a path parameter over its length)
 * skip the error handler and answered Fastify's JSON shape; these go through `toHttp` too.
 */
export function frameworkError(err: Error, _request: FastifyRequest, reply: FastifyReply): void {
  const answer = toHttp(err);
  void reply.code(answer.status).send(answer.body);
}

/**
 * Checks made before any handler runs (an onRequest hook):
 * - HEAD on an API path: Fastify runs the GET handler for HEAD, and some GETs act (kvmd's
 *   `msd/partition_format`, `2fa/delete`, `fingerbot/click`); a HEAD must never act, and no
 *   client of the API needs one, so it is 405 (the console's files still answer HEAD);
 * - a compressed request body: no route decodes one, so it would reach a parser as garbage
 *   ("not valid JSON") or be stored as it is; 415 says what is wrong.
 */
export function edgeRequestChecks(
  request: { method: string; url: string; headers: Record<string, string | string[] | undefined> },
  _reply: unknown,
  done: (err?: Error) => void,
): void {
  const path = request.url.split('?')[0] ?? '';
  if (request.method === 'HEAD' && /^\/(api|janus)(\/|$)/.test(path)) {
    done(new MethodNotAllowedError('Method HEAD is not allowed; use GET'));
    return;
  }
  const encoding = request.headers['content-encoding'];
  if (encoding !== undefined && String(encoding).trim().toLowerCase() !== 'identity') {
    done(
      new UnsupportedMediaTypeError(
        'Compressed request bodies are not accepted (Content-Encoding)',
      ),
    );
    return;
  }
  done();
}

/**
 * An error answered before the request's body has all arrived: Node would read and discard
 * the rest to keep the connection (a stranger's endless upload, drained after its 401). The
 * connection is closed instead.
 */
export function closeIfBodyUnread(
  request: { raw: { complete: boolean; headers: Record<string, unknown> } },
  reply: { header(name: string, value: string): unknown },
): void {
  const raw = request.raw;
  const hasBody =
    raw.headers['content-length'] !== undefined || raw.headers['transfer-encoding'] !== undefined;
  if (hasBody && !raw.complete) reply.header('connection', 'close');
}

/**
 * Fastify's JSON-schema compilers (ajv for requests, fast-json-stringify for replies), which
 * these servers never use: every route validates in its handler (validators.ts; the fleet with zod) and sends its own
 * JSON. Left at their defaults, Fastify loads ajv and its vocabularies when the instance is
 * made, on the idle server's heap for its life (0.6-0.7 MB resident, bench server), and the
 * build keeps their 370 KB of source in main.js (scripts/build.mjs leaves them out). A route
 * given a `schema` fails at registration with this error instead.
 */
function noSchemaCompiler(): never {
  throw new Error(
    'Fastify route schemas are not compiled here: validate in the handler (server/src/validators.ts; zod in the fleet)',
  );
}

/**
 * A Fastify instance behind the HTTP edge (http/edge.ts: timeouts and caps, some of which only
 * the constructor takes), with the kvmd envelope for the framework's own errors: the device
 * server's and the fleet's. `https` given: TLS with the edge's options.
 */
export function edgeFastify(
  edge: EdgeLimits,
  opts: Pick<FastifyServerOptions, 'bodyLimit' | 'trustProxy' | 'logger'> & {
    loggerInstance?: FastifyServerOptions['loggerInstance'];
    https?: { cert: string | Buffer; key: string | Buffer };
  },
): FastifyInstance {
  const { https, ...rest } = opts;
  const edgeOptions = edgeServerOptions(edge);
  const base: FastifyServerOptions = {
    ...rest,
    keepAliveTimeout: edge.keepAliveTimeoutMs,
    connectionTimeout: edge.idleTimeoutMs,
    clientErrorHandler: answerClientError,
    frameworkErrors: frameworkError,
    // Per-request lines would drown the log file; routes log what matters themselves.
    logController: new LogController({ disableRequestLogging: true }),
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 256 },
    // Fastify's own 503 while closing is not the kvmd envelope: each app's hook answers.
    return503OnClosing: false,
    schemaController: {
      compilersFactory: { buildValidator: noSchemaCompiler, buildSerializer: noSchemaCompiler },
    },
  };
  return (https
    ? Fastify({ ...base, https: { ...edgeOptions, ...https } } as FastifyServerOptions)
    : Fastify({
        ...base,
        http: edgeOptions,
      } as FastifyServerOptions)) as unknown as FastifyInstance;
}

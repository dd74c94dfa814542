/**
 * The server's error family. Every error a route can raise is one of these; `toHttp()` maps it
 * to a status and the kvmd envelope in ONE place (house-style.md, Server/Errors).
 */
import type { ApiErrorResult } from '@kvm/protocol';

export class ApiError extends Error {
  /** Wire name: the kvmd error class name the client sees in `result.error`. */
  readonly wireName: string;
  readonly status: number;
  readonly extra: Record<string, unknown>;

  constructor(
    wireName: string,
    status: number,
    message: string,
    extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.wireName = wireName;
    this.status = status;
    this.extra = extra;
  }
}

export class ValidatorError extends ApiError {
  constructor(message: string) {
    super('ValidatorError', 400, message);
  }
}

export class UnauthorizedError extends ApiError {
  constructor(message = 'Unauthorized') {
    super('UnauthorizedError', 401, message);
  }
}

export class ForbiddenError extends ApiError {
  constructor(message = 'Forbidden') {
    super('ForbiddenError', 403, message);
  }
}

export class NotFoundError extends ApiError {
  constructor(message = 'Not found') {
    super('NotFoundError', 404, message);
  }
}

export class RateLimitError extends ApiError {
  constructor(remainingSeconds: number) {
    super(
      'RateLimitError',
      429,
      `Too many failed login attempts. Please try again in ${remainingSeconds} seconds.`,
      { remaining_time: remainingSeconds },
    );
  }
}

/** The server cannot answer this now (restarting, not built yet); trying again later may work. */
export class ServiceUnavailableError extends ApiError {
  constructor(message: string) {
    super('ServiceUnavailableError', 503, message);
  }
}

/** A physical operation is already running (kvmd IsBusyError family). */
export class BusyError extends ApiError {
  constructor(wireName: string, message: string) {
    super(wireName, 409, message);
  }
}

export interface HttpErrorAnswer {
  status: number;
  body: { ok: false; result: ApiErrorResult };
}

/** Fastify's own error codes that are the client's fault, with our wire names. */
const FASTIFY_CLIENT_ERRORS: Record<string, { wire: string; status: number }> = {
  FST_ERR_CTP_BODY_TOO_LARGE: { wire: 'PayloadTooLargeError', status: 413 },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { wire: 'UnsupportedMediaTypeError', status: 415 },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { wire: 'ValidatorError', status: 400 },
  FST_ERR_CTP_EMPTY_JSON_BODY: { wire: 'ValidatorError', status: 400 },
  FST_ERR_CTP_INVALID_JSON_BODY: { wire: 'ValidatorError', status: 400 },
  FST_ERR_BAD_URL: { wire: 'ValidatorError', status: 400 },
  FST_ERR_ASYNC_CONSTRAINT: { wire: 'ValidatorError', status: 400 },
};

/** busboy's parse errors carry no code, only these fixed messages. */
const MULTIPART_PARSE_ERRORS =
  /^(Multipart: Boundary not found|Unexpected end of multipart data|\w+ terminated early due to unexpected end of multipart data|The needle cannot have a length bigger than 256\.)$/;

function envelope(status: number, error: string, message: string): HttpErrorAnswer {
  return { status, body: { ok: false, result: { error, error_msg: message } } };
}

/**
 * Node's own error codes: the HTTP parser's (`HPE_*`, from the server's `clientError`) are the
 * client's fault; a full disk or a read-only data folder is the device's, said honestly without
 * the raw path or errno text (which name files of the data folder).
 */
function nodeErrorAnswer(code: string, e: { reason?: unknown }): HttpErrorAnswer | null {
  if (code === 'HPE_HEADER_OVERFLOW') {
    return envelope(
      431,
      'RequestHeadersTooLargeError',
      'The request line and headers are too large',
    );
  }
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return envelope(408, 'RequestTimeoutError', 'The request headers did not arrive in time');
  }
  if (code.startsWith('HPE_')) {
    // llhttp's reason is a fixed phrase ("Invalid method encountered"), never the client's bytes.
    const reason = typeof e.reason === 'string' ? `: ${e.reason}` : '';
    return envelope(400, 'ValidatorError', `Malformed HTTP request${reason}`);
  }
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    return envelope(507, 'InsufficientStorageError', "The device's storage is full");
  }
  if (code === 'EROFS') {
    return envelope(500, 'InternalError', "The device's data folder is read-only");
  }
  if (code === 'EACCES' || code === 'EPERM') {
    return envelope(500, 'InternalError', 'The device may not write its data folder');
  }
  if (code === 'EIO') {
    return envelope(500, 'InternalError', "The device's storage reported an I/O error");
  }
  return null;
}

/** Maps any thrown value to an HTTP status and the kvmd error envelope. */
export function toHttp(err: unknown): HttpErrorAnswer {
  if (err instanceof ApiError) {
    return {
      status: err.status,
      body: { ok: false, result: { error: err.wireName, error_msg: err.message, ...err.extra } },
    };
  }
  const e = err as { code?: string; statusCode?: number; message?: string; name?: string };
  const known = e.code ? FASTIFY_CLIENT_ERRORS[e.code] : undefined;
  if (known) {
    return {
      status: known.status,
      body: { ok: false, result: { error: known.wire, error_msg: e.message ?? known.wire } },
    };
  }
  const fromNode = e.code ? nodeErrorAnswer(e.code, e as { reason?: unknown }) : null;
  if (fromNode) return fromNode;
  if (e.message !== undefined && MULTIPART_PARSE_ERRORS.test(e.message)) {
    return envelope(400, 'ValidatorError', 'Malformed multipart body');
  }
  // JSON.parse failures surface as SyntaxError with status 400 from the body parser.
  if (e.statusCode !== undefined && e.statusCode >= 400 && e.statusCode < 500) {
    return {
      status: e.statusCode,
      body: {
        ok: false,
        result: { error: 'ValidatorError', error_msg: e.message ?? 'Bad request' },
      },
    };
  }
  return {
    status: 500,
    body: {
      ok: false,
      result: { error: 'InternalError', error_msg: 'Server got itself in trouble' },
    },
  };
}

/**
 * The server's error family, in kvmd's `htserver.py` model: a few category bases carry the
 * HTTP status, every error a client can see is its own small class extending one of them, and
 * its wire name (`result.error`) is its class name, as kvmd sends `type(err).__name__`.
 * `toHttp()` maps any thrown value to a status and the kvmd envelope, built in ONE place
 * (`errorBody`). docs/api.md lists the categories.
 *
 * The wire name is the class name, so the server's bundles must not rename a class: esbuild
 * renames one whose name another module also uses, and the server bundles are built without
 * `keepNames` (its cost in memory: scripts/build.mjs), so `classNamesKept()` there fails the
 * build when a class of ours would be renamed.
 */
import type { ApiErrorResult } from '@kvm/protocol';

/** The root of the family; a category base below gives the status. */
export abstract class ApiError extends Error {
  /** Wire name: the class name the client sees in `result.error`. */
  readonly wireName: string;
  /** The HTTP status: set by the category base. */
  abstract readonly status: number;
  /** Fields the envelope carries beside `error` and `error_msg` (e.g. `remaining_time`). */
  readonly extra: Record<string, unknown>;

  /** The message when none is given: a class with a fixed text only sets this. */
  static readonly defaultMessage: string = 'The request failed';

  constructor(message?: string, extra: Record<string, unknown> = {}) {
    super(message ?? (new.target as typeof ApiError).defaultMessage);
    this.wireName = new.target.name;
    // Logs and stacks then name the class too.
    this.name = this.wireName;
    this.extra = extra;
  }
}

/** A category base: every error below it answers with `status`. */
function category(status: number) {
  return class extends ApiError {
    override readonly status: number = status;
  };
}

// The categories. Most are also a wire name of their own (NotFoundError...); ConflictError,
// IsBusyError and TooManyRequestsError only name a family.

/**
 * 400: the request is wrong (kvmd's ValidatorError and OperationError families). Sent by its
 * own name where aiohttp under kvmd says BadRequest (a plain GET on a socket URL).
 */
export class BadRequestError extends category(400) {}

/** 401: no credentials at all. */
export class UnauthorizedError extends category(401) {
  static override readonly defaultMessage = 'Unauthorized';
}

/** 403: credentials that do not allow this. */
export class ForbiddenError extends category(403) {
  static override readonly defaultMessage = 'Forbidden';
}

/** 404: no such thing. */
export class NotFoundError extends category(404) {
  static override readonly defaultMessage = 'Not found';
}

/** 405: the method is not allowed on this path. */
export class MethodNotAllowedError extends category(405) {}

/** 408: the request did not arrive in time. */
export class RequestTimeoutError extends category(408) {}

/** 409: the request conflicts with what the device is doing. */
export abstract class ConflictError extends category(409) {}

/** 409: a physical operation is already running (kvmd's IsBusyError family). */
export abstract class IsBusyError extends ConflictError {}

/** 413: the request body is over its limit. */
export class PayloadTooLargeError extends category(413) {}

/** 415: a body the server does not take in this form. */
export class UnsupportedMediaTypeError extends category(415) {}

/** 416: a byte range outside the file (the console's static files). */
export class RangeNotSatisfiableError extends category(416) {}

/** 429: too many requests or sockets from this client. */
export abstract class TooManyRequestsError extends category(429) {}

/** 429: too many failed logins from this address. */
export class RateLimitError extends TooManyRequestsError {
  constructor(remainingSeconds: number) {
    super(`Too many failed login attempts. Please try again in ${remainingSeconds} seconds.`, {
      remaining_time: remainingSeconds,
    });
  }
}

/** 431: the request line and headers are over Node's limit. */
export class RequestHeadersTooLargeError extends category(431) {}

/** 500: the device failed, not the client. */
export class InternalError extends category(500) {}

/** 502: a server the device called for the client (the cloud's fleet) failed or was unreachable. */
export class BadGatewayError extends category(502) {}

/** 503: the server cannot answer this now (restarting, not built yet); later may work. */
export class ServiceUnavailableError extends category(503) {}

/** 504: a server the device called for the client (the cloud's fleet) did not answer in time. */
export class GatewayTimeoutError extends category(504) {}

/** 507: the device's storage is full. */
export class InsufficientStorageError extends category(507) {}

/** The wire name of bad requests in general (kvmd's `ValidatorError`). */
export class ValidatorError extends BadRequestError {}

export interface HttpErrorAnswer {
  status: number;
  body: { ok: false; result: ApiErrorResult };
}

/** The kvmd error envelope: the one place it is built. */
export function errorBody(
  error: string,
  message: string,
  extra: Record<string, unknown> = {},
): { ok: false; result: ApiErrorResult } {
  return { ok: false, result: { error, error_msg: message, ...extra } };
}

function answer(err: ApiError): HttpErrorAnswer {
  return { status: err.status, body: errorBody(err.wireName, err.message, err.extra) };
}

/** Fastify's own error codes that are the client's fault, as our classes. */
const FASTIFY_CLIENT_ERRORS: Record<string, new (message: string) => ApiError> = {
  FST_ERR_CTP_BODY_TOO_LARGE: PayloadTooLargeError,
  FST_ERR_CTP_INVALID_MEDIA_TYPE: UnsupportedMediaTypeError,
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: ValidatorError,
  FST_ERR_CTP_EMPTY_JSON_BODY: ValidatorError,
  FST_ERR_CTP_INVALID_JSON_BODY: ValidatorError,
  FST_ERR_BAD_URL: ValidatorError,
  FST_ERR_ASYNC_CONSTRAINT: ValidatorError,
};

/** busboy's parse errors carry no code, only these fixed messages. */
const MULTIPART_PARSE_ERRORS =
  /^(Multipart: Boundary not found|Unexpected end of multipart data|\w+ terminated early due to unexpected end of multipart data|The needle cannot have a length bigger than 256\.)$/;

/**
 * Node's own error codes: the HTTP parser's (`HPE_*`, from the server's `clientError`) are the
 * client's fault; a full disk or a read-only data folder is the device's, said honestly without
 * the raw path or errno text (which name files of the data folder).
 */
function fromNodeError(code: string, e: { reason?: unknown }): ApiError | null {
  if (code === 'HPE_HEADER_OVERFLOW') {
    return new RequestHeadersTooLargeError('The request line and headers are too large');
  }
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return new RequestTimeoutError('The request headers did not arrive in time');
  }
  if (code.startsWith('HPE_')) {
    // llhttp's reason is a fixed phrase ("Invalid method encountered"), never the client's bytes.
    const reason = typeof e.reason === 'string' ? `: ${e.reason}` : '';
    return new ValidatorError(`Malformed HTTP request${reason}`);
  }
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    return new InsufficientStorageError("The device's storage is full");
  }
  if (code === 'EROFS') return new InternalError("The device's data folder is read-only");
  if (code === 'EACCES' || code === 'EPERM') {
    return new InternalError('The device may not write its data folder');
  }
  if (code === 'EIO') return new InternalError("The device's storage reported an I/O error");
  return null;
}

/** Maps any thrown value to an HTTP status and the kvmd error envelope. */
export function toHttp(err: unknown): HttpErrorAnswer {
  if (err instanceof ApiError) return answer(err);
  const e = err as { code?: string; statusCode?: number; message?: string };
  const Known = e.code ? FASTIFY_CLIENT_ERRORS[e.code] : undefined;
  if (Known) return answer(new Known(e.message ?? Known.name));
  const fromNode = e.code ? fromNodeError(e.code, e as { reason?: unknown }) : null;
  if (fromNode) return answer(fromNode);
  if (e.message !== undefined && MULTIPART_PARSE_ERRORS.test(e.message)) {
    return answer(new ValidatorError('Malformed multipart body'));
  }
  // Any other 4xx of Fastify or its parsers (JSON.parse's SyntaxError comes with 400) keeps
  // its status under the bad request name.
  if (e.statusCode !== undefined && e.statusCode >= 400 && e.statusCode < 500) {
    return {
      status: e.statusCode,
      body: errorBody(ValidatorError.name, e.message ?? 'Bad request'),
    };
  }
  return answer(new InternalError('Server got itself in trouble'));
}

/**
 * The kvmd JSON envelope (wire-protocol.md 1.1). Every JSON answer of the API is one of these;
 * `ok` is true exactly when the HTTP status is 200.
 */
export interface ApiOk<T> {
  ok: true;
  result: T;
}

export interface ApiErrorResult {
  /** The error class name, e.g. `ValidatorError`, `ForbiddenError`, `RateLimitError`. */
  error: string;
  error_msg: string;
  /** RateLimitError only: seconds until the client may try again. */
  remaining_time?: number;
}

export interface ApiFail {
  ok: false;
  result: ApiErrorResult;
}

export type ApiEnvelope<T> = ApiOk<T> | ApiFail;

/** Error class names the server answers with (the set grows with later subsystems). */
export const API_ERRORS = {
  validator: 'ValidatorError',
  unauthorized: 'UnauthorizedError',
  forbidden: 'ForbiddenError',
  notFound: 'NotFoundError',
  rateLimit: 'RateLimitError',
  payloadTooLarge: 'PayloadTooLargeError',
  unavailable: 'UnavailableError',
} as const;

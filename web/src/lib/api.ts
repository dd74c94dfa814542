/**
 * Fetch wrapper for the device API (docs/api.md). Every call goes under `/api`, is aborted after
 * API_TIMEOUT_MS unless the caller says otherwise, carries the session token from local storage
 * as the `Token` header (the HttpOnly cookie rides along by itself, same origin) and is unwrapped
 * from the kvmd envelope `{ok, result}`.
 *
 * Errors are typed: an answer that is not ok becomes an ApiError (status plus the envelope's
 * error, error_msg and, for RateLimitError, remaining_time); a failed, timed-out or aborted fetch
 * becomes a NetworkError.
 */
import { API_TIMEOUT_MS } from '@kvm/protocol/constants';
import type { ApiErrorResult } from '@kvm/protocol/envelope';
import { withBase } from './base';
import { getAuthToken } from './storage';

export const API_PREFIX = '/api';

export type QueryValue = string | number | boolean | null | undefined;
export type Query = Readonly<Record<string, QueryValue>>;

export interface RequestOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE';
  query?: Query;
  /** Sent as application/x-www-form-urlencoded (the login routes read forms, not JSON). */
  form?: Readonly<Record<string, string>>;
  /** Sent as application/json. */
  json?: unknown;
  /** Sent as raw UTF-8 text (kvmd's `/api/hid/print` reads the body as text, wire-protocol.md 1.4). */
  text?: string;
  headers?: Readonly<Record<string, string>>;
  /** Milliseconds; null means no timeout (uploads, SPEC 7). Default API_TIMEOUT_MS. */
  timeoutMs?: number | null;
  /** Aborting it fails the call with a NetworkError of reason 'aborted'. */
  signal?: AbortSignal;
}

/** A non-ok answer of the server (any status but 200), with the envelope's error fields. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly status: number;
  /** The server's error class, e.g. ForbiddenError; 'HttpError' when the body was no envelope. */
  readonly error: string;
  /** The server's message; empty when the body was no envelope (e.g. a proxy's 502 page). */
  readonly error_msg: string;
  /** RateLimitError only: seconds until another login may be tried. */
  readonly remaining_time?: number;
  /** The envelope's other fields (e.g. UpgradeDowngradeError's package_version). */
  readonly details: Record<string, unknown>;

  constructor(status: number, result: Partial<ApiErrorResult>) {
    super(result.error_msg || `HTTP ${status}`);
    this.status = status;
    this.error = result.error ?? 'HttpError';
    this.error_msg = result.error_msg ?? '';
    if (typeof result.remaining_time === 'number') this.remaining_time = result.remaining_time;
    const { error: _e, error_msg: _m, ...details } = result as Record<string, unknown>;
    this.details = details;
  }
}

export type NetworkErrorReason = 'network' | 'timeout' | 'aborted';

/** The request never got an answer: offline, refused, timed out or aborted by the caller. */
export class NetworkError extends Error {
  override readonly name = 'NetworkError';
  readonly reason: NetworkErrorReason;

  constructor(reason: NetworkErrorReason, cause?: unknown) {
    super(`Network error (${reason})`, { cause });
    this.reason = reason;
  }
}

/** SPEC 4/6: 401 or 403 from the auth check means the session is lost. */
export function isAuthDenied(err: unknown): boolean {
  return err instanceof ApiError && (err.status === 401 || err.status === 403);
}

/** SPEC 7/8, generic handler: the server's error_msg when present, else the given message. */
export function errorMessage(err: unknown, fallback: string): string {
  return err instanceof ApiError && err.error_msg ? err.error_msg : fallback;
}

/**
 * The SPEC text, then the server's reason when it gave one: the `error_msg` of an ApiError, or
 * of an error that carries the envelope of a non-fetch call (an upload's TransferError).
 */
export function withDetail(text: string, err: unknown): string {
  const detail =
    err instanceof Error && 'error_msg' in err && typeof err.error_msg === 'string'
      ? err.error_msg
      : '';
  return detail ? `${text}: ${detail}` : text;
}

export function buildApiUrl(path: string, query?: Query): string {
  // Under a fleet path (lib/base.ts) every call goes under `/d/<id>/api`.
  const url = withBase(`${API_PREFIX}${path.startsWith('/') ? path : `/${path}`}`);
  if (!query) return url;
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === null || value === undefined) continue;
    // kvmd booleans accept 1|true|yes and 0|false|no (docs/api.md).
    params.append(key, typeof value === 'boolean' ? (value ? '1' : '0') : String(value));
  }
  const search = params.toString();
  return search ? `${url}?${search}` : url;
}

interface EnvelopeLike {
  ok: boolean;
  result?: unknown;
}

function isEnvelope(data: unknown): data is EnvelopeLike {
  return (
    typeof data === 'object' && data !== null && typeof (data as EnvelopeLike).ok === 'boolean'
  );
}

function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

export async function apiRequest<T>(path: string, options: RequestOptions = {}): Promise<T> {
  const { method = 'GET', query, form, json, timeoutMs = API_TIMEOUT_MS, signal } = options;
  const headers: Record<string, string> = { Accept: 'application/json', ...options.headers };
  const token = getAuthToken();
  if (token && !('Token' in headers)) headers.Token = token;

  let body: string | undefined;
  if (form) {
    headers['Content-Type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(form).toString();
  } else if (json !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(json);
  } else if (options.text !== undefined) {
    // The device reads the charset from here (UTF-8 is its default too).
    headers['Content-Type'] = 'text/plain; charset=utf-8';
    body = options.text;
  }

  const controller = new AbortController();
  let timedOut = false;
  const timer =
    timeoutMs === null
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          controller.abort();
        }, timeoutMs);
  const onCallerAbort = () => controller.abort();
  if (signal?.aborted) controller.abort();
  else signal?.addEventListener('abort', onCallerAbort, { once: true });

  let status: number;
  let text: string;
  try {
    const response = await fetch(buildApiUrl(path, query), {
      method,
      headers,
      body,
      credentials: 'same-origin',
      signal: controller.signal,
    });
    status = response.status;
    text = await response.text();
  } catch (err) {
    const reason: NetworkErrorReason = timedOut
      ? 'timeout'
      : controller.signal.aborted
        ? 'aborted'
        : 'network';
    throw new NetworkError(reason, err);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
    signal?.removeEventListener('abort', onCallerAbort);
  }

  const data = parseJson(text);
  const ok = status >= 200 && status < 300;
  if (isEnvelope(data)) {
    if (data.ok && ok) return data.result as T;
    throw new ApiError(status, (data.result ?? {}) as Partial<ApiErrorResult>);
  }
  if (ok) return data as T;
  throw new ApiError(status, {});
}

export const api = {
  get: <T>(path: string, options?: Omit<RequestOptions, 'method'>) =>
    apiRequest<T>(path, { ...options, method: 'GET' }),
  post: <T>(path: string, options?: Omit<RequestOptions, 'method'>) =>
    apiRequest<T>(path, { ...options, method: 'POST' }),
};

/**
 * A POST with a raw text body (kvmd's `/api/hid/print` reads the body as text, wire-protocol.md
 * 1.4), with the same token, timeout, envelope and error types as the `api` client.
 */
import { API_TIMEOUT_MS } from '@kvm/protocol/constants';
import type { ApiErrorResult } from '@kvm/protocol/envelope';
import { ApiError, NetworkError, buildApiUrl, type NetworkErrorReason, type Query } from './api';
import { getAuthToken } from './storage';

export interface TextRequestOptions {
  query?: Query;
  /** Milliseconds; null means no timeout. Default API_TIMEOUT_MS. */
  timeoutMs?: number | null;
  signal?: AbortSignal;
}

export async function postText<T>(
  path: string,
  text: string,
  options: TextRequestOptions = {},
): Promise<T> {
  const { query, timeoutMs = API_TIMEOUT_MS, signal } = options;
  const headers: Record<string, string> = {
    Accept: 'application/json',
    // The device reads the charset from here (UTF-8 is its default too).
    'Content-Type': 'text/plain; charset=utf-8',
  };
  const token = getAuthToken();
  if (token) headers.Token = token;

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
  let body: string;
  try {
    const response = await fetch(buildApiUrl(path, query), {
      method: 'POST',
      headers,
      body: text,
      credentials: 'same-origin',
      signal: controller.signal,
    });
    status = response.status;
    body = await response.text();
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

  let data: unknown;
  try {
    data = body ? (JSON.parse(body) as unknown) : undefined;
  } catch {
    data = undefined;
  }
  const ok = status >= 200 && status < 300;
  if (typeof data === 'object' && data !== null && 'ok' in data) {
    const envelope = data as { ok: unknown; result?: unknown };
    if (envelope.ok === true && ok) return envelope.result as T;
    throw new ApiError(status, (envelope.result ?? {}) as Partial<ApiErrorResult>);
  }
  if (ok) return data as T;
  throw new ApiError(status, {});
}

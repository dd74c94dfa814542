import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { API_TIMEOUT_MS, STORAGE_KEYS } from '@kvm/protocol/constants';
import { envelope, stubFetch } from '../test/fetch-stub';
import {
  api,
  ApiError,
  buildApiUrl,
  errorMessage,
  isAuthDenied,
  NetworkError,
  withDetail,
} from './api';

describe('api client', () => {
  beforeEach(() => localStorage.clear());
  afterEach(() => {
    vi.unstubAllGlobals();
    vi.useRealTimers();
  });

  it('prefixes /api, builds the query and unwraps `result`', async () => {
    const { requests } = stubFetch({
      '/api/info': () => envelope(200, { system: { kvmd: { version: '4.82' } } }),
    });
    const result = await api.get<{ system: unknown }>('/info', {
      query: { fields: 'system', skip: undefined, flag: true },
    });
    expect(result).toEqual({ system: { kvmd: { version: '4.82' } } });
    expect(requests[0]?.url).toBe('/api/info?fields=system&flag=1');
    expect(requests[0]?.method).toBe('GET');
  });

  it('sends the stored token as the Token header, and none without one', async () => {
    const { requests } = stubFetch({ '/api/auth/check': () => envelope(200, { user: 'admin' }) });
    await api.get('/auth/check');
    localStorage.setItem(STORAGE_KEYS.authToken, 'f'.repeat(64));
    await api.get('/auth/check');
    expect(requests[0]?.headers.token).toBeUndefined();
    expect(requests[1]?.headers.token).toBe('f'.repeat(64));
  });

  it('encodes forms as x-www-form-urlencoded and JSON bodies as JSON', async () => {
    const { requests } = stubFetch({
      '/api/auth/login': () => envelope(200, { token: 'a'.repeat(64) }),
      '/api/system/set_config': () => envelope(200, { success: true }),
    });
    await api.post('/auth/login', { form: { user: 'admin', passwd: 'p&ss word' } });
    await api.post('/system/set_config', { json: { theme_mode: 1 } });
    expect(requests[0]?.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(new URLSearchParams(requests[0]?.body).get('passwd')).toBe('p&ss word');
    expect(requests[1]?.headers['content-type']).toBe('application/json');
    expect(JSON.parse(requests[1]?.body ?? '')).toEqual({ theme_mode: 1 });
  });

  it('throws an ApiError with the envelope fields on a non-ok answer', async () => {
    stubFetch({
      '/api/auth/login': () =>
        envelope(429, {
          error: 'RateLimitError',
          error_msg: 'Too many failed login attempts. Please try again in 42 seconds.',
          remaining_time: 42,
        }),
    });
    const err = await api.post('/auth/login', { form: {} }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    const apiErr = err as ApiError;
    expect(apiErr.status).toBe(429);
    expect(apiErr.error).toBe('RateLimitError');
    expect(apiErr.remaining_time).toBe(42);
    expect(errorMessage(apiErr, 'fallback')).toContain('42 seconds');
  });

  it('turns a body that is no envelope (a proxy 502 page) into an ApiError without message', async () => {
    stubFetch({
      '/api/init/is_inited': () => new Response('<html>Bad Gateway</html>', { status: 502 }),
    });
    const err = (await api.get('/init/is_inited').catch((e: unknown) => e)) as ApiError;
    expect(err).toBeInstanceOf(ApiError);
    expect(err.status).toBe(502);
    expect(err.error).toBe('HttpError');
    expect(err.error_msg).toBe('');
    expect(errorMessage(err, 'Init failed!')).toBe('Init failed!');
  });

  it('throws a NetworkError when fetch fails', async () => {
    vi.stubGlobal(
      'fetch',
      vi.fn(() => Promise.reject(new TypeError('Failed to fetch'))),
    );
    const err = (await api.get('/auth/check').catch((e: unknown) => e)) as NetworkError;
    expect(err).toBeInstanceOf(NetworkError);
    expect(err.reason).toBe('network');
    expect(errorMessage(err, 'given')).toBe('given');
  });

  it('aborts after API_TIMEOUT_MS with a NetworkError of reason timeout', async () => {
    vi.useFakeTimers();
    let seenSignal: AbortSignal | undefined;
    vi.stubGlobal(
      'fetch',
      vi.fn(
        (_url: string, init: RequestInit) =>
          new Promise((_resolve, reject) => {
            seenSignal = init.signal ?? undefined;
            init.signal?.addEventListener('abort', () =>
              reject(new DOMException('aborted', 'AbortError')),
            );
          }),
      ),
    );
    const pending = api.get('/info').catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(API_TIMEOUT_MS - 1);
    expect(seenSignal?.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    const err = (await pending) as NetworkError;
    expect(err).toBeInstanceOf(NetworkError);
    expect(err.reason).toBe('timeout');
  });

  it('can run without a timeout and be aborted by the caller', async () => {
    vi.useFakeTimers();
    vi.stubGlobal(
      'fetch',
      vi.fn(
        (_url: string, init: RequestInit) =>
          new Promise((_resolve, reject) => {
            init.signal?.addEventListener('abort', () =>
              reject(new DOMException('aborted', 'AbortError')),
            );
          }),
      ),
    );
    const controller = new AbortController();
    const pending = api
      .get('/upgrade/download', { timeoutMs: null, signal: controller.signal })
      .catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(API_TIMEOUT_MS * 3);
    controller.abort();
    const err = (await pending) as NetworkError;
    expect(err.reason).toBe('aborted');
  });

  it('classifies 401 and 403 as a lost session', () => {
    expect(isAuthDenied(new ApiError(401, {}))).toBe(true);
    expect(isAuthDenied(new ApiError(403, {}))).toBe(true);
    expect(isAuthDenied(new ApiError(502, {}))).toBe(false);
    expect(isAuthDenied(new NetworkError('timeout'))).toBe(false);
  });

  it('builds URLs without a trailing ? when the query is empty', () => {
    expect(buildApiUrl('/auth/check', { a: undefined })).toBe('/api/auth/check');
    expect(buildApiUrl('init/init', { password: 'a b&c' })).toBe('/api/init/init?password=a+b%26c');
  });
});

describe('withDetail', () => {
  it('appends the reason of a server or transfer error only', () => {
    expect(
      withDetail('failed', new ApiError(409, { error: 'MsdIsBusyError', error_msg: 'busy' })),
    ).toBe('failed: busy');
    // An upload's TransferError carries the envelope's message the same way.
    class Transfer extends Error {
      readonly error_msg = 'disk full';
    }
    expect(withDetail('failed', new Transfer('failed'))).toBe('failed: disk full');
    expect(withDetail('failed', new ApiError(502, {}))).toBe('failed');
    expect(withDetail('failed', new Error('local'))).toBe('failed');
    expect(withDetail('failed', { error_msg: 'not an error' })).toBe('failed');
  });
});

/** A recording fetch fake for tests: routes by path, answers with kvmd envelopes. */
import { vi } from 'vitest';

export interface RecordedRequest {
  url: string;
  path: string;
  query: URLSearchParams;
  method: string;
  headers: Record<string, string>;
  body: string | undefined;
}

export type Responder = (req: RecordedRequest) => Response | Promise<Response>;

export function envelope(status: number, result: unknown): Response {
  return new Response(JSON.stringify({ ok: status === 200, result }), {
    status,
    headers: { 'Content-Type': 'application/json' },
  });
}

export function stubFetch(routes: Record<string, Responder>) {
  const requests: RecordedRequest[] = [];
  const fetchFake = vi.fn(async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = String(input);
    const parsed = new URL(url, 'http://device.test');
    const headers: Record<string, string> = {};
    for (const [key, value] of Object.entries((init?.headers ?? {}) as Record<string, string>)) {
      headers[key.toLowerCase()] = value;
    }
    const req: RecordedRequest = {
      url,
      path: parsed.pathname,
      query: parsed.searchParams,
      method: init?.method ?? 'GET',
      headers,
      body: typeof init?.body === 'string' ? init.body : undefined,
    };
    requests.push(req);
    const signal = init?.signal;
    if (signal?.aborted) throw new DOMException('aborted', 'AbortError');
    const route = routes[parsed.pathname];
    if (!route) return envelope(404, { error: 'NotFoundError', error_msg: 'Not found' });
    return route(req);
  });
  vi.stubGlobal('fetch', fetchFake);
  return { requests, fetchFake };
}

/**
 * The remote side of `write_remote`: a streaming HTTP(S) GET with kvmd's rules (wire-protocol.md
 * 1.6). Redirects are followed (at most 10, http and https only); the answer must be 2xx and
 * carry a Content-Length. Failures before the body are MsdRemoteError with aiohttp's class
 * names, which is what kvmd clients see from a real device. Each hop is checked against the
 * RemotePolicy (remote-policy.ts) before and while it connects: MsdRemoteRefusedError.
 */
import { request as httpRequest, type IncomingMessage, type ClientRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { ApiError } from '../../errors';
import { MsdRemoteError } from './msd-errors';
import {
  DEFAULT_REMOTE_POLICY,
  guardedLookup,
  hostAllowed,
  literalRefusal,
  type RemotePolicy,
} from './remote-policy';

export type { RemotePolicy } from './remote-policy';

const MAX_REDIRECTS = 10;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export interface RemoteOptions {
  /** Skip TLS certificate checks (`insecure=1`). */
  insecure: boolean;
  /** Connect, answer and idle-read timeout, ms. */
  timeoutMs: number;
  signal?: AbortSignal;
  /** Where it may fetch from; default DEFAULT_REMOTE_POLICY (public addresses only). */
  policy?: RemotePolicy;
}

export interface RemoteBody {
  /** The answer's body; idle longer than the timeout, it is destroyed with a timeout error. */
  body: IncomingMessage;
  size: number;
  /** The file name the server suggests (Content-Disposition), if any. */
  filename: string | null;
  /** The URL that answered (after redirects). */
  url: URL;
  /** Stops the download (closes the connection). */
  abort(): void;
}

/** An http: or https: URL, else null (the route answers kvmd's ValidatorError). */
export function parseHttpUrl(raw: string): URL | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return null;
  }
  return url.protocol === 'http:' || url.protocol === 'https:' ? url : null;
}

/** RFC 6266 filename: `filename*=UTF-8''...` wins over `filename=`; null if none. */
export function filenameFromDisposition(header: string | undefined): string | null {
  if (!header) return null;
  const star = /filename\*\s*=\s*([^']*)'[^']*'([^;]+)/i.exec(header);
  if (star) {
    try {
      const value = decodeURIComponent(star[2]!.trim());
      if (value) return value;
    } catch {
      // a broken percent-encoding: try the plain parameter
    }
  }
  const quoted = /filename\s*=\s*"((?:[^"\\]|\\.)*)"/i.exec(header);
  if (quoted) return quoted[1]!.replace(/\\(.)/g, '$1') || null;
  const token = /filename\s*=\s*([^;\s]+)/i.exec(header);
  return token ? token[1]! : null;
}

/** The last segment of a URL path, decoded; '' if there is none. */
export function filenameFromUrl(url: URL): string {
  const last = url.pathname.split('/').pop() ?? '';
  try {
    return decodeURIComponent(last);
  } catch {
    return last;
  }
}

/** The last part of a suggested name: a server must not pick the folder. */
export function baseOfSuggestedName(name: string): string {
  return name.split(/[\\/]/).pop() ?? '';
}

function connectError(url: URL, err: Error): MsdRemoteError {
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  const code = (err as NodeJS.ErrnoException).code ?? '';
  const wire = /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO/i.test(code + err.message)
    ? 'ClientConnectorCertificateError'
    : 'ClientConnectorError';
  return new MsdRemoteError(
    wire,
    `Cannot connect to host ${url.hostname}:${port} ssl:${url.protocol === 'https:'} [${err.message}]`,
  );
}

function timeoutError(): MsdRemoteError {
  return new MsdRemoteError('ServerTimeoutError', 'Timeout on reading data from socket');
}

/** GET `url`; resolves once a 2xx answer with a Content-Length has its headers. */
export async function openRemote(start: URL, opts: RemoteOptions): Promise<RemoteBody> {
  let url = start;
  for (let hop = 0; ; hop++) {
    const res = await get(url, opts);
    const status = res.response.statusCode ?? 0;
    if (REDIRECTS.has(status) && res.response.headers.location) {
      res.abort();
      if (hop >= MAX_REDIRECTS) {
        throw new MsdRemoteError('TooManyRedirects', `Too many redirects from ${start.href}`);
      }
      const next = parseHttpUrl(new URL(res.response.headers.location, url).href);
      if (!next) throw new MsdRemoteError('InvalidURL', 'Redirected to a URL that is not HTTP(S)');
      url = next;
      continue;
    }
    if (status < 200 || status >= 300) {
      res.abort();
      throw new MsdRemoteError(
        'ClientResponseError',
        `${status}, message='${res.response.statusMessage ?? ''}', url='${url.href}'`,
      );
    }
    const length = res.response.headers['content-length'];
    const size = length !== undefined && /^\d+$/.test(length) ? Number(length) : Number.NaN;
    if (!Number.isSafeInteger(size)) {
      res.abort();
      throw new MsdRemoteError('ClientError', 'No Content-Length found');
    }
    return {
      body: res.response,
      size,
      filename: filenameFromDisposition(res.response.headers['content-disposition']),
      url,
      abort: res.abort,
    };
  }
}

function get(
  url: URL,
  opts: RemoteOptions,
): Promise<{ response: IncomingMessage; abort: () => void }> {
  return new Promise((resolve, reject) => {
    const make = url.protocol === 'https:' ? httpsRequest : httpRequest;
    let req: ClientRequest;
    let answer: IncomingMessage | null = null;
    const policy = opts.policy ?? DEFAULT_REMOTE_POLICY;
    const refusal = literalRefusal(url, policy);
    if (refusal) {
      reject(refusal);
      return;
    }
    const onAbort = (): void => {
      req.destroy(new MsdRemoteError('ClientError', 'The download was cancelled'));
    };
    try {
      req = make(url, {
        method: 'GET',
        // identity: the size on disk is the Content-Length
        headers: { 'accept-encoding': 'identity', 'user-agent': 'kvm-console' },
        rejectUnauthorized: !opts.insecure,
        timeout: opts.timeoutMs,
        // the address checked is the address connected (an IP literal was checked above)
        ...(hostAllowed(url, policy) ? {} : { lookup: guardedLookup(policy) }),
      });
    } catch (err) {
      reject(connectError(url, err as Error));
      return;
    }
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    const abort = (): void => {
      opts.signal?.removeEventListener('abort', onAbort);
      req.destroy();
    };
    // `timeout` is an idle timer on the socket: no answer, or a body that stalls.
    req.on('timeout', () => {
      const err = timeoutError();
      answer?.destroy(err);
      req.destroy(err);
    });
    req.on('error', (err) => {
      opts.signal?.removeEventListener('abort', onAbort);
      if (!answer) reject(err instanceof ApiError ? err : connectError(url, err));
    });
    req.on('response', (response) => {
      answer = response;
      response.on('close', () => opts.signal?.removeEventListener('abort', onAbort));
      resolve({ response, abort });
    });
    req.end();
  });
}

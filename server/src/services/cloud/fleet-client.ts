/**
 * The fleet's HTTP API as the device calls it (`/cloud-basic/v1/*`, protocol/src/cloud.ts):
 * JSON in, JSON out, TLS verified under the fleet's trust (fleet-tls.ts), one timeout per call
 * (CLOUD_TIMEOUT_MS, SPEC 7), answers bounded in size. The fleet's refusals keep their status
 * class (400, 403, 404, 409, 410, 429) and message; its failures are 502, no answer in time 504.
 */
import { request } from 'node:https';
import { FLEET_API } from '@kvm/protocol';
import {
  type ApiError,
  BadRequestError,
  ConflictError,
  ForbiddenError,
  NotFoundError,
  TooManyRequestsError,
} from '../../errors';
import {
  CloudTimeoutError,
  CloudUnreachableError,
  fleetConnectError,
  fleetTlsOptions,
  type FleetTrust,
} from './fleet-tls';

/** The largest answer the device reads from the fleet. */
export const FLEET_ANSWER_MAX = 256 * 1024;

/** The fleet refused the request (bad input, wrong credentials, a code that expired...). */
export class CloudRefusedError extends BadRequestError {}
export class CloudForbiddenError extends ForbiddenError {}
export class CloudNotFoundError extends NotFoundError {}
export class CloudConflictError extends ConflictError {}
export class CloudRateLimitError extends TooManyRequestsError {}
/** The fleet account has 2FA and the login had no code (the panel then asks for it). */
export class CloudTotpRequiredError extends ForbiddenError {}
/** 410: the code expired or its binding was collected already. */
export class CloudGoneError extends BadRequestError {
  readonly gone = true;
}

export interface FleetCallOptions {
  timeoutMs: number;
  /** Extra request headers (the device's own credentials on `device/unbind`). */
  headers?: Record<string, string>;
  /** For the long poll: the fleet holds the answer this long, the timeout adds to it. */
  extraMs?: number;
  signal?: AbortSignal;
}

/** The fleet's own message from an error body (kvmd envelope or a plain `{error|message}`). */
function messageOf(body: unknown, status: number): string {
  const b = body as Record<string, unknown> | null;
  const r = (b?.['result'] ?? b) as Record<string, unknown> | null;
  const text = [r?.['error_msg'], r?.['message'], b?.['message'], r?.['error']].find(
    (v): v is string => typeof v === 'string' && v.length > 0,
  );
  return `The fleet refused: ${(text ?? `HTTP ${status}`).slice(0, 300)}`;
}

/** What the fleet's refusal says beside its message that the panel uses (kvmd envelope extras). */
function extrasOf(body: unknown): Record<string, unknown> {
  const b = body as Record<string, unknown> | null;
  const r = (b?.['result'] ?? b) as Record<string, unknown> | null;
  const out: Record<string, unknown> = {};
  if (r?.['totp_required'] === true) out['totp_required'] = true;
  if (typeof r?.['remaining_time'] === 'number') out['remaining_time'] = r['remaining_time'];
  const fields = r?.['fields'];
  if (fields && typeof fields === 'object' && !Array.isArray(fields)) {
    out['fields'] = Object.fromEntries(
      Object.entries(fields as Record<string, unknown>)
        .filter(([k, v]) => /^[a-z_0-9]{1,32}$/.test(k) && typeof v === 'string')
        .slice(0, 16)
        .map(([k, v]) => [k, (v as string).slice(0, 64)]),
    );
  }
  return out;
}

function refusal(status: number, body: unknown): ApiError {
  const message = messageOf(body, status);
  const extras = extrasOf(body);
  if (extras['totp_required'] === true) return new CloudTotpRequiredError(message, extras);
  switch (true) {
    // the fleet's 401 (its credentials) is no session problem on the device: 403 here
    case status === 401 || status === 403:
      return new CloudForbiddenError(message, extras);
    case status === 404:
      return new CloudNotFoundError(message, extras);
    case status === 409:
      return new CloudConflictError(message, extras);
    case status === 410:
      return new CloudGoneError(message, extras);
    case status === 429:
      return new CloudRateLimitError(message, extras);
    case status >= 400 && status < 500:
      return new CloudRefusedError(message, extras);
    default:
      return new CloudUnreachableError(`The fleet failed: HTTP ${status}`);
  }
}

/** An answer's payload: `result` of a kvmd envelope, else the body itself. */
function unwrap(body: unknown): unknown {
  if (body && typeof body === 'object' && 'ok' in body && 'result' in body) {
    return (body as { result: unknown }).result;
  }
  return body;
}

export class FleetClient {
  constructor(
    private readonly base: string,
    private readonly trust: FleetTrust,
  ) {}

  /** POST `<base>/cloud-basic/v1/<path>` with a JSON body; the answer's payload. */
  post<T>(path: string, body: unknown, opts: FleetCallOptions): Promise<T> {
    const url = new URL(`${FLEET_API}/${path}`, this.base);
    const payload = Buffer.from(JSON.stringify(body));
    const timeoutMs = opts.timeoutMs + (opts.extraMs ?? 0);
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const finish = (err: Error | null, value?: T): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        opts.signal?.removeEventListener('abort', onAbort);
        if (err) reject(err);
        else resolve(value as T);
      };
      const req = request(url, {
        method: 'POST',
        ...fleetTlsOptions(this.trust),
        headers: {
          ...opts.headers,
          'content-type': 'application/json',
          'content-length': String(payload.length),
          accept: 'application/json',
        },
        // one connection per call: a pinned trust must be checked on each
        agent: false,
      });
      const timer = setTimeout(() => {
        req.destroy();
        finish(new CloudTimeoutError(`The fleet did not answer within ${timeoutMs} ms`));
      }, timeoutMs);
      const onAbort = (): void => {
        req.destroy();
        finish(new CloudUnreachableError('The call to the fleet was cancelled'));
      };
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      req.on('error', (err) => finish(fleetConnectError(err, this.trust)));
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > FLEET_ANSWER_MAX) {
            req.destroy();
            finish(new CloudUnreachableError('The fleet answered more than the device reads'));
            return;
          }
          chunks.push(chunk);
        });
        res.on('error', (err) => finish(fleetConnectError(err, this.trust)));
        res.on('end', () => {
          let parsed: unknown = null;
          try {
            parsed = size > 0 ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : null;
          } catch {
            if ((res.statusCode ?? 500) < 300) {
              finish(new CloudUnreachableError('The fleet answered something that is not JSON'));
              return;
            }
          }
          const status = res.statusCode ?? 500;
          if (status >= 200 && status < 300) finish(null, unwrap(parsed) as T);
          else finish(refusal(status, parsed));
        });
      });
      req.end(payload);
    });
  }
}

/**
 * The fleet's own HTTP client of a device (docs/cloud.md "Files, batch actions and rollouts"):
 * a request to the device's server over the same relay path a browser's `/d/<id>/...` request
 * takes (the agent socket here, or NATS to the replica holding it). The device answers under
 * the console session `cloud:<user>`, so what a job does is logged on the device as that user.
 *
 * The request body streams under the stream's window (a 100 MiB image is never held here); the
 * answer is read whole, at most DEVICE_ANSWER_MAX bytes (the kvm API's answers are small).
 */
import type { Readable } from 'node:stream';
import { BadGatewayError } from '../../../server/src/errors';
import { DeviceOfflineError, DeviceTimeoutError } from '../agents/errors';
import type { OpenedStream, StreamEvents, StreamHead, StreamOpen } from '../agents/stream';
import { StreamInbox } from '../agents/stream';
import { pumpBody } from './index';

export { DeviceOfflineError, DeviceTimeoutError } from '../agents/errors';

/** The most of a device's answer the client reads. */
export const DEVICE_ANSWER_MAX = 1024 * 1024;

/** 502: the device's answer is larger than DEVICE_ANSWER_MAX. */
export class DeviceAnswerTooLargeError extends BadGatewayError {}

/** What opens a stream to a device (the relay: fleet/src/agents/relay.ts). */
export interface StreamOpener {
  openStream(deviceId: string, spec: StreamOpen, events: StreamEvents): Promise<OpenedStream>;
}

export interface DeviceRequest {
  method: string;
  /** Path and query on the device (`/api/atx/click?button=power`). */
  path: string;
  headers?: Record<string, string>;
  /** A Buffer, or a stream with its `length` (sent as Content-Length). */
  body?: Buffer | { stream: Readable; length: number };
  /**
   * The longest the device may stay silent: no body byte taken (window acknowledged) and no
   * answer. A long upload that keeps moving never times out.
   */
  timeoutMs: number;
}

export interface DeviceAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * One request to `deviceId` as `user`. DeviceOfflineError (no replica holds the device, or it
 * ended the stream without an answer), DeviceTimeoutError (silent for `timeoutMs`),
 * DeviceAnswerTooLargeError, DeviceBusyError (its socket carries 64 streams).
 */
export async function deviceRequest(
  relay: StreamOpener | null,
  deviceId: string,
  user: { id: string; name: string },
  req: DeviceRequest,
): Promise<DeviceAnswer> {
  if (!relay) throw new DeviceOfflineError();
  const headers: Record<string, string> = { ...(req.headers ?? {}) };
  let body: AsyncIterable<Buffer | Uint8Array> | Iterable<Buffer | Uint8Array> | null = null;
  if (Buffer.isBuffer(req.body)) {
    headers['content-length'] = String(req.body.byteLength);
    body = [req.body];
  } else if (req.body) {
    headers['content-length'] = String(req.body.length);
    body = req.body.stream;
  } else if (req.method !== 'GET' && req.method !== 'HEAD') {
    headers['content-length'] = '0';
  }
  const inbox = new StreamInbox();
  let stream: OpenedStream;
  try {
    stream = await relay.openStream(
      deviceId,
      { kind: 'http', method: req.method, path: req.path, headers, user },
      inbox,
    );
  } catch (e) {
    if (req.body && !Buffer.isBuffer(req.body)) req.body.stream.destroy();
    throw e;
  }

  // Silence: reset by every byte the device takes or sends.
  let timer: NodeJS.Timeout | undefined;
  let expire!: (e: Error) => void;
  const silent = new Promise<never>((_res, rej) => (expire = rej));
  silent.catch(() => undefined);
  const touch = (): void => {
    clearTimeout(timer);
    timer = setTimeout(() => expire(new DeviceTimeoutError()), req.timeoutMs);
  };
  touch();

  let done = false;
  if (body) {
    pumpBody(body, stream, touch).catch(() => {
      // The device answered (and ended) before taking it all, or the source failed.
      if (!done) stream.abort('request body failed');
    });
  } else if (req.method !== 'GET' && req.method !== 'HEAD') {
    // as the tunnel does: a GET's stream has no body, so no end of one either
    stream.end();
  }
  try {
    const head: StreamHead = await Promise.race([
      inbox.headed.catch((e: { reason?: string }) => {
        throw new DeviceOfflineError(
          `The device ended the request without an answer${e.reason ? `: ${e.reason}` : ''}`,
        );
      }),
      silent,
    ]);
    touch();
    const chunks: Buffer[] = [];
    let size = 0;
    const answer = new Promise<Buffer>((resolve, reject) => {
      inbox.attach({
        data(_kind, payload) {
          touch();
          size += payload.byteLength;
          if (size > DEVICE_ANSWER_MAX) {
            reject(
              new DeviceAnswerTooLargeError(
                `The device's answer is over ${DEVICE_ANSWER_MAX} bytes`,
              ),
            );
            return;
          }
          chunks.push(Buffer.from(payload));
          stream.ack(payload.byteLength);
        },
        end(code) {
          if (code !== undefined) reject(new DeviceOfflineError('The device failed mid-answer'));
          else resolve(Buffer.concat(chunks));
        },
      });
    });
    const data = await Promise.race([answer, silent]);
    return { status: head.status, headers: head.headers, body: data };
  } finally {
    done = true;
    clearTimeout(timer);
    // Whatever is left (an unread body, an answer cut short) is dropped on both sides.
    stream.abort('done');
    if (req.body && !Buffer.isBuffer(req.body)) req.body.stream.destroy();
  }
}

/** The kvmd envelope's error message of an answer, or its HTTP status. */
export function answerError(a: DeviceAnswer): string {
  try {
    const j = JSON.parse(a.body.toString('utf8')) as {
      result?: { error?: string; error_msg?: string };
    };
    if (j.result?.error_msg) return j.result.error_msg;
    if (j.result?.error) return j.result.error;
  } catch {
    // not JSON
  }
  return `HTTP ${a.status}`;
}

/** The `result` of a kvmd envelope answered 2xx, else an Error with the device's message. */
export function answerResult<T>(a: DeviceAnswer): T {
  if (a.status < 200 || a.status >= 300) throw new Error(answerError(a));
  const j = JSON.parse(a.body.toString('utf8')) as { ok?: boolean; result?: T } | T;
  if (j && typeof j === 'object' && 'result' in j && 'ok' in j) return (j as { result: T }).result;
  return j as T;
}

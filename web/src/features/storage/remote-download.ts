/**
 * Download an image from a URL into the storage partition (POST /api/msd/write_remote,
 * wire-protocol.md 1.6). The server answers with newline-delimited JSON records, one every
 * second or so: `{ok, result:{image:{name,size,written}}}` and `\r\n`. The last record decides;
 * a failure mid-way sends `{ok:false, result:{error, error_msg}}` and cuts the body. The body is
 * read as a stream, so progress shows while it arrives; an AbortController cancels.
 */
import type { ApiErrorResult } from '@kvm/protocol/envelope';
import { buildApiUrl } from '../../lib/api';
import { getAuthToken } from '../../lib/storage';
import { failureOf, TransferError, TransferTask, type MsdWriteResult } from './upload';

/** SPEC 5: the URL must parse (and kvmd takes http and https only); null when it does not. */
export function checkImageUrl(text: string): URL | null {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    return null;
  }
  return url.protocol === 'http:' || url.protocol === 'https:' ? url : null;
}

/** The name the file will probably get: the last path segment (the server may say otherwise). */
export function nameFromUrl(url: URL): string {
  const segment = url.pathname.split('/').filter(Boolean).at(-1) ?? '';
  try {
    return decodeURIComponent(segment) || url.host;
  } catch {
    return segment || url.host;
  }
}

/**
 * Reads newline-delimited JSON from a byte stream, calling onRecord for each record in order.
 * Records may be split anywhere across chunks (also inside a multi-byte character); `\r\n` and
 * `\n` both end a record; blank lines and lines that are not JSON are skipped. A last record
 * without its line end counts when it parses. Read errors (a cut body, an abort) are thrown.
 */
export async function readNdjson(
  body: ReadableStream<Uint8Array>,
  onRecord: (record: unknown) => void,
): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  const emit = (line: string) => {
    const text = line.trim();
    if (!text) return;
    let record: unknown;
    try {
      record = JSON.parse(text);
    } catch {
      return;
    }
    onRecord(record);
  };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end = buffer.indexOf('\n');
      while (end >= 0) {
        emit(buffer.slice(0, end));
        buffer = buffer.slice(end + 1);
        end = buffer.indexOf('\n');
      }
    }
    buffer += decoder.decode();
    emit(buffer);
  } finally {
    reader.releaseLock();
  }
}

interface WriteRecord {
  ok?: unknown;
  result?: Partial<MsdWriteResult> & Partial<ApiErrorResult>;
}

function asRecord(value: unknown): WriteRecord | null {
  return typeof value === 'object' && value !== null ? (value as WriteRecord) : null;
}

/** The parts of fetch and Response used here (tests pass a fake). */
export interface ResponseLike {
  status: number;
  body: ReadableStream<Uint8Array> | null;
  text(): Promise<string>;
}
export type FetchLike = (url: string, init: RequestInit) => Promise<ResponseLike>;

export interface RemoteDownloadOptions {
  fetch?: FetchLike;
  now?: () => number;
}

/**
 * One URL download at a time: running → done | failed | cancelled, like UploadController.
 * No timeout: a large image takes as long as it takes (kvmd's own connect timeout is 10 s).
 */
export class RemoteDownload extends TransferTask {
  private readonly fetchFn: FetchLike;
  private controller: AbortController | null = null;

  constructor(options: RemoteDownloadOptions = {}) {
    super(options.now);
    this.fetchFn = options.fetch ?? ((url, init) => fetch(url, init));
  }

  /** Starts the download; resolves with the last record's result. */
  async start(text: string): Promise<MsdWriteResult> {
    const url = checkImageUrl(text);
    if (!url) throw new TransferError('invalidUrl');
    this.begin(nameFromUrl(url), 0);
    const controller = new AbortController();
    this.controller = controller;
    const headers: Record<string, string> = { Accept: 'application/x-ndjson, application/json' };
    const token = getAuthToken();
    if (token) headers.Token = token;

    let last: WriteRecord | null = null;
    try {
      const response = await this.fetchFn(
        buildApiUrl('/msd/write_remote', {
          url: url.href,
          prefix: '',
          remove_incomplete: true,
        }),
        { method: 'POST', headers, credentials: 'same-origin', signal: controller.signal },
      );
      if (response.status !== 200) {
        // Refused before streaming (bad URL, unreachable host, image exists): a plain envelope.
        let result: Partial<ApiErrorResult> = {};
        try {
          result = asRecord(JSON.parse(await response.text()))?.result ?? {};
        } catch {
          // Not JSON (a proxy's error page).
        }
        throw new TransferError(failureOf(response.status, result.error), response.status, result);
      }
      const onRecord = (value: unknown) => {
        const record = asRecord(value);
        if (!record) return;
        last = record;
        const image = record.ok === true ? record.result?.image : undefined;
        if (image && typeof image.written === 'number' && typeof image.size === 'number') {
          this.progress(image.written, image.size, image.name || this.snapshot.name);
        }
      };
      if (response.body) {
        await readNdjson(response.body, onRecord);
      } else {
        for (const line of (await response.text()).split('\n')) {
          try {
            onRecord(JSON.parse(line) as unknown);
          } catch {
            // Blank or cut line.
          }
        }
      }
    } catch (err) {
      this.controller = null;
      if (controller.signal.aborted) throw this.fail(new TransferError('cancelled'));
      if (err instanceof TransferError) throw this.fail(err);
      // The body was cut: a failure record before the cut says why.
      throw this.fail(this.failureFrom(last));
    }
    this.controller = null;
    if (controller.signal.aborted) throw this.fail(new TransferError('cancelled'));
    const final = last as WriteRecord | null;
    if (final?.ok !== true || !final.result?.image) throw this.fail(this.failureFrom(final));
    this.finish();
    return { image: final.result.image };
  }

  cancel(): void {
    this.controller?.abort();
  }

  private failureFrom(record: WriteRecord | null): TransferError {
    if (record && record.ok === false) {
      const result = record.result ?? {};
      return new TransferError(failureOf(200, result.error), 200, result);
    }
    return new TransferError('failed');
  }
}

/** The console's one URL download, kept while the panel is closed. */
export const msdDownloader = new RemoteDownload();

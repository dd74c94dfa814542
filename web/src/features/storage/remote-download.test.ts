import { beforeEach, describe, expect, it } from 'vitest';
import {
  checkImageUrl,
  nameFromUrl,
  readNdjson,
  RemoteDownload,
  type FetchLike,
  type ResponseLike,
} from './remote-download';

const encoder = new TextEncoder();

/** A body that yields the given chunks, then either ends or fails (a cut chunked body). */
function body(chunks: Array<string | Uint8Array>, end: 'close' | 'cut' | 'hang' = 'close') {
  let i = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      const chunk = chunks[i++];
      if (chunk !== undefined) {
        controller.enqueue(typeof chunk === 'string' ? encoder.encode(chunk) : chunk);
      } else if (end === 'close') {
        controller.close();
      } else if (end === 'cut') {
        controller.error(new TypeError('network error'));
      }
      // 'hang': never answers, like a slow server.
    },
  });
}

function record(written: number, size = 100, name = 'test.iso') {
  return JSON.stringify({ ok: true, result: { image: { name, size, written } } });
}

describe('readNdjson', () => {
  it('reads records split anywhere across chunks, with \\r\\n line ends', async () => {
    const text = `${record(0)}\r\n${record(50)}\r\n\r\n${record(100)}\r\n`;
    const chunks = [text.slice(0, 7), text.slice(7, 70), text.slice(70, 71), text.slice(71)];
    const seen: unknown[] = [];
    await readNdjson(body(chunks), (r) => seen.push(r));
    expect(seen).toHaveLength(3);
    expect(seen[2]).toEqual(JSON.parse(record(100)));
  });

  it('decodes a multi-byte character split between chunks, and a last line without end', async () => {
    const bytes = encoder.encode(`{"name":"образ.iso"}\r\n{"last":true}`);
    const seen: unknown[] = [];
    await readNdjson(body([bytes.slice(0, 12), bytes.slice(12)]), (r) => seen.push(r));
    expect(seen).toEqual([{ name: 'образ.iso' }, { last: true }]);
  });

  it('skips lines that are not JSON and throws when the body is cut', async () => {
    const seen: unknown[] = [];
    await expect(
      readNdjson(body([`garbage\r\n${record(1)}\r\n{"ok": tr`], 'cut'), (r) => seen.push(r)),
    ).rejects.toThrow('network error');
    expect(seen).toEqual([JSON.parse(record(1))]);
  });
});

describe('checkImageUrl', () => {
  it('takes http and https URLs only (SPEC 5 "Invalid URL")', () => {
    expect(checkImageUrl('https://example.com/debian.iso')?.href).toBe(
      'https://example.com/debian.iso',
    );
    expect(checkImageUrl(' http://10.0.0.1:8080/a.img ')).not.toBeNull();
    expect(checkImageUrl('not a url')).toBeNull();
    expect(checkImageUrl('')).toBeNull();
    expect(checkImageUrl('ftp://example.com/a.iso')).toBeNull();
    expect(checkImageUrl('file:///etc/passwd')).toBeNull();
    expect(nameFromUrl(new URL('https://h/dir/my%20image.iso?x=1'))).toBe('my image.iso');
    expect(nameFromUrl(new URL('https://host.example/'))).toBe('host.example');
  });
});

interface Call {
  url: string;
  init: RequestInit;
}

function fakeFetch(respond: (call: Call) => ResponseLike) {
  const calls: Call[] = [];
  const fetch: FetchLike = (url, init) => {
    const call = { url, init };
    calls.push(call);
    if (init.signal?.aborted) return Promise.reject(new DOMException('aborted', 'AbortError'));
    return Promise.resolve(respond(call));
  };
  return { calls, fetch };
}

function streamed(stream: ReadableStream<Uint8Array>): ResponseLike {
  return { status: 200, body: stream, text: () => Promise.resolve('') };
}

let clock = 0;
beforeEach(() => {
  clock = 0;
  localStorage.clear();
});

describe('RemoteDownload', () => {
  it('posts the URL to write_remote and follows the records to the end', async () => {
    localStorage.setItem('auth_token', 'tok');
    const text = `${record(0)}\r\n${record(40)}\r\n${record(100)}\r\n`;
    const { calls, fetch } = fakeFetch(() => streamed(body([text.slice(0, 90), text.slice(90)])));
    const download = new RemoteDownload({ fetch, now: () => (clock += 1000) });
    const snapshots: string[] = [];
    download.subscribe(() => {
      const s = download.getSnapshot();
      snapshots.push(`${s.phase}:${s.percent}`);
    });
    const result = await download.start('https://example.com/files/test.iso');
    expect(result).toEqual({ image: { name: 'test.iso', size: 100, written: 100 } });
    expect(calls[0]?.url).toBe(
      '/api/msd/write_remote?url=https%3A%2F%2Fexample.com%2Ffiles%2Ftest.iso&prefix=&remove_incomplete=1',
    );
    expect(calls[0]?.init.method).toBe('POST');
    expect((calls[0]?.init.headers as Record<string, string>).Token).toBe('tok');
    expect(snapshots).toEqual(['running:0', 'running:0', 'running:40', 'running:100', 'done:100']);
  });

  it('fails with the last record when it is not ok, after a cut body', async () => {
    const failure = JSON.stringify({
      ok: false,
      result: { error: 'ClientPayloadError', error_msg: 'Response payload is not completed' },
    });
    const { fetch } = fakeFetch(() => streamed(body([`${record(10)}\r\n${failure}\r\n`], 'cut')));
    const download = new RemoteDownload({ fetch });
    await expect(download.start('http://h/test.iso')).rejects.toMatchObject({
      reason: 'failed',
      error: 'ClientPayloadError',
      error_msg: 'Response payload is not completed',
    });
    expect(download.getSnapshot().phase).toBe('failed');
  });

  it('maps an error answer before the stream (image exists)', async () => {
    const { fetch } = fakeFetch(() => ({
      status: 400,
      body: null,
      text: () =>
        Promise.resolve(
          JSON.stringify({
            ok: false,
            result: { error: 'MsdImageExistsError', error_msg: 'This image is already exists' },
          }),
        ),
    }));
    await expect(new RemoteDownload({ fetch }).start('http://h/a.iso')).rejects.toMatchObject({
      reason: 'exists',
    });
  });

  it('refuses an invalid URL without calling the server', async () => {
    const { calls, fetch } = fakeFetch(() => streamed(body([])));
    const download = new RemoteDownload({ fetch });
    await expect(download.start('ftp://h/a.iso')).rejects.toMatchObject({ reason: 'invalidUrl' });
    expect(calls).toHaveLength(0);
    expect(download.getSnapshot().phase).toBe('idle');
  });

  it('cancel aborts the request while the body streams', async () => {
    let signal: AbortSignal | undefined;
    const { fetch } = fakeFetch((call) => {
      signal = call.init.signal ?? undefined;
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(encoder.encode(`${record(5)}\r\n`));
          call.init.signal?.addEventListener('abort', () =>
            controller.error(new DOMException('aborted', 'AbortError')),
          );
        },
      });
      return streamed(stream);
    });
    const download = new RemoteDownload({ fetch });
    const done = download.start('http://h/a.iso');
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(download.getSnapshot().percent).toBe(5);
    download.cancel();
    await expect(done).rejects.toMatchObject({ reason: 'cancelled' });
    expect(signal?.aborted).toBe(true);
    expect(download.getSnapshot().phase).toBe('cancelled');
  });

  it('an ended body without a final ok record is a failure', async () => {
    const { fetch } = fakeFetch(() => streamed(body([])));
    await expect(new RemoteDownload({ fetch }).start('http://h/a.iso')).rejects.toMatchObject({
      reason: 'failed',
    });
  });
});

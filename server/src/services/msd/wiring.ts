/**
 * How virtual media meets the rest of the server: `createMsd` (for createContext), the `msd`
 * state provider of `/api/ws`, and the `/api/msd/*` routes (wire-protocol.md 1.6; docs/msd.md).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  MSD_NAME_MAX_BYTES,
  MSD_NDJSON_EOL,
  checkImageName,
  checkImagePrefix,
  joinImageName,
  type MsdState,
  type MsdStatePartial,
  type MsdWriteRemoteRecord,
} from '@kvm/protocol';
import { ApiError, ValidatorError, toHttp } from '../../errors';
import type { MsdDriver } from '../../drivers/msd/types';
import type { StateProvider } from '../../ws/state-registry';
import { bool, fail, str } from '../../validators';
import { MsdDisabledError, MsdUnknownImageError } from './msd-errors';
import { MsdService, writeResult, type MsdServiceOptions } from './msd-service';
import { parseHttpUrl, type RemotePolicy } from './remote';
import { StorageLinkError, markerName } from './storage';
import type { Logger } from '../../log';

export async function createMsd(opts: {
  dataDir: string;
  driver: MsdDriver;
  log?: Logger;
  requestRestart?: () => void;
  /** Tests: progress updates of the state, ms (default 250). */
  progressIntervalMs?: number;
  /** Tests: how long an upload may send nothing (default 120 s). */
  uploadIdleMs?: number;
  /** `msd.remote` of the config. */
  remote?: RemotePolicy;
}): Promise<MsdService> {
  return MsdService.open(opts satisfies MsdServiceOptions);
}

export function msdProvider(msd: MsdService): StateProvider {
  return {
    name: 'msd',
    snapshot: async () => [{ event_type: 'msd', event: await msd.snapshot() }],
    subscribe: (emit) => {
      const on = (state: MsdState | MsdStatePartial): void =>
        emit({ event_type: 'msd', event: state });
      msd.on('state', on);
      return () => msd.off('state', on);
    },
  };
}

/** kvmd's default `timeout` of write_remote, seconds. */
export const WRITE_REMOTE_TIMEOUT_S = 10;
/** kvmd's float_f01: the least `timeout`, seconds. */
export const WRITE_REMOTE_TIMEOUT_MIN_S = 0.1;
/** The most `timeout` (connect, answer and idle read), seconds: a silent remote frees MSD. */
export const WRITE_REMOTE_TIMEOUT_MAX_S = 300;
/**
 * The longest last segment of a new image name, bytes of UTF-8: its marker
 * `.__<name>.incomplete` must fit NAME_MAX (255).
 */
export const MSD_IMAGE_BASE_MAX_BYTES = MSD_NAME_MAX_BYTES - Buffer.byteLength(markerName(''));
/** Progress records of write_remote: "about every second" (wire-protocol.md 1.6). */
const REMOTE_PROGRESS_MS = 1000;

type Query = Record<string, unknown>;

function present(q: Query, key: string): boolean {
  return q[key] !== undefined && q[key] !== '';
}

/**
 * Zero-width and bidirectional controls: a name holding one shows as another name (an `.iso`
 * that reads `.exe`, two names that look the same).
 */
const INVISIBLE = /[\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/u;

/**
 * Why a new name is refused beyond the protocol's rules, or null: it must be in Unicode NFC
 * (else `é` composed and decomposed would be two images that look the same) and hold no
 * invisible or direction-changing character.
 */
function unicodeRefusal(text: string): string | null {
  if (text.normalize('NFC') !== text) return 'not in Unicode NFC form: send composed characters';
  if (INVISIBLE.test(text)) return 'an invisible or direction-changing character';
  return null;
}

/**
 * The storage name of a new image from `prefix` and `image` (protocol rules, Unicode NFC, no
 * invisible characters, a file name whose marker fits NAME_MAX), or a ValidatorError.
 */
export function imageNameOf(image: string, prefix: string): string {
  const badPrefix = checkImagePrefix(prefix) ?? unicodeRefusal(prefix);
  if (badPrefix) fail('prefix', prefix, `prefix (${badPrefix})`);
  const badImage = unicodeRefusal(image);
  if (badImage) fail('image', image, `image name (${badImage})`);
  const joined = joinImageName(prefix, image);
  if (!joined.ok) fail('image', image, `image name (${joined.reason})`);
  const base = joined.name.split('/').pop() ?? '';
  if (Buffer.byteLength(base) > MSD_IMAGE_BASE_MAX_BYTES) {
    fail(
      'image',
      image,
      `image name (the file name is longer than ${MSD_IMAGE_BASE_MAX_BYTES} bytes)`,
    );
  }
  return joined.name;
}

/** An existing image's name argument (`remove`, `set_params`, `read`). */
function storedName(value: unknown): string {
  const name = str('image', value);
  const bad = checkImageName(name);
  if (bad) fail('image', name, `image name (${bad})`);
  return name;
}

/** The upload's size: Content-Length, required (a chunked body has none). */
function contentLength(request: FastifyRequest): number {
  const raw = request.headers['content-length'];
  if (request.headers['transfer-encoding'] !== undefined || raw === undefined) {
    throw new ValidatorError(
      'None argument is not a valid int: the Content-Length header is required',
    );
  }
  const n = /^\s*\d+\s*$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(n)) fail('Content-Length', raw, 'int');
  return n;
}

/** kvmd's float_f01 (≥ 0.1 s), capped at WRITE_REMOTE_TIMEOUT_MAX_S. */
function timeoutSeconds(value: unknown): number {
  if (value === undefined || value === '') return WRITE_REMOTE_TIMEOUT_S;
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value.trim()) : Number.NaN;
  if (!Number.isFinite(n) || n < WRITE_REMOTE_TIMEOUT_MIN_S || n > WRITE_REMOTE_TIMEOUT_MAX_S) {
    fail(
      'timeout',
      value,
      `float between ${WRITE_REMOTE_TIMEOUT_MIN_S} and ${WRITE_REMOTE_TIMEOUT_MAX_S}`,
    );
  }
  return n;
}

function record(r: MsdWriteRemoteRecord): string {
  return `${JSON.stringify(r)}${MSD_NDJSON_EOL}`;
}

/** Every route but GET /api/msd and set_enabled refuses while MSD is disabled. */
function enabledOnly(msd: MsdService): void {
  if (!msd.enabled) throw new MsdDisabledError();
}

export function msdRoutes(app: FastifyInstance, msd: MsdService): void {
  app.get('/api/msd', async () => {
    await msd.refresh();
    return msd.getState();
  });

  app.post('/api/msd/set_params', async (request) => {
    enabledOnly(msd);
    const q = request.query as Query;
    await msd.setParams({
      ...(q['image'] !== undefined
        ? { image: q['image'] === '' ? '' : storedName(q['image']) }
        : {}),
      ...(present(q, 'cdrom') ? { cdrom: bool('cdrom', q['cdrom']) } : {}),
      ...(present(q, 'rw') ? { rw: bool('rw', q['rw']) } : {}),
    });
    return {};
  });

  app.post('/api/msd/set_connected', async (request) => {
    enabledOnly(msd);
    await msd.setConnected(bool('connected', (request.query as Query)['connected']));
    return {};
  });

  app.post('/api/msd/remove', async (request) => {
    enabledOnly(msd);
    await msd.remove(storedName((request.query as Query)['image']));
    return {};
  });

  app.post('/api/msd/reset', async () => {
    enabledOnly(msd);
    await msd.reset();
    return {};
  });

  app.post('/api/msd/set_enabled', async (request) => {
    await msd.setEnabled(bool('enabled', (request.query as Query)['enabled']));
    return {};
  });

  app.get('/api/msd/partition_show', async () => {
    enabledOnly(msd);
    return msd.partitionShow();
  });

  app.get('/api/msd/partition_connect', async (request) => {
    enabledOnly(msd);
    const q = request.query as Query;
    if (present(q, 'path')) {
      // One storage here: the console may name it by our path or by GL's partition paths.
      const path = str('path', q['path']);
      const known = Object.keys((await msd.partitionShow()).devices);
      if (!known.includes(path) && !path.startsWith('/dev/')) {
        fail('path', path, 'storage device');
      }
    }
    await msd.partitionConnect();
    return {};
  });

  app.get('/api/msd/partition_disconnect', async () => {
    enabledOnly(msd);
    await msd.partitionDisconnect();
    return {};
  });

  app.get('/api/msd/partition_format', async () => {
    enabledOnly(msd);
    await msd.partitionFormat();
    return {};
  });

  /** kvmd's image download; only `compress=none` (or empty) here. */
  app.get('/api/msd/read', async (request, reply) => {
    enabledOnly(msd);
    const q = request.query as Query;
    const name = storedName(q['image']);
    const compress = present(q, 'compress') ? str('compress', q['compress']) : 'none';
    if (compress !== 'none') fail('compress', compress, "compression of ['none']");
    await msd.refresh();
    const img = msd.getState().storage.images[name];
    if (!img?.complete) throw new MsdUnknownImageError();
    let body;
    try {
      body = await msd.storage.readStream(name);
    } catch (err) {
      // gone, or a link swapped in since the listing
      if (err instanceof StorageLinkError || (err as { code?: string }).code === 'ENOENT') {
        throw new MsdUnknownImageError();
      }
      throw err;
    }
    return reply
      .header('content-type', 'application/octet-stream')
      .header('content-length', String(img.size))
      .header(
        'content-disposition',
        `attachment; filename*=UTF-8''${encodeURIComponent(name.split('/').pop() ?? name)}`,
      )
      .send(body);
  });

  // The bodies of these two never go through a parser: `write` streams request.raw to the
  // disk as it arrives (a multi-GB image is never held in memory), `write_remote` has none.
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));

    scope.post('/api/msd/write', async (request, reply) => {
      try {
        enabledOnly(msd);
        const q = request.query as Query;
        const name = imageNameOf(
          str('image', q['image']),
          str('prefix', q['prefix'], { optional: true }),
        );
        const size = contentLength(request);
        const removeIncomplete = bool('remove_incomplete', q['remove_incomplete'], false);
        return await msd.upload({ name, size, body: request.raw, removeIncomplete });
      } catch (err) {
        // Refused before (or while) the body arrived: do not read the rest of it, close.
        if (!request.raw.complete) reply.header('connection', 'close');
        throw err;
      }
    });

    scope.post('/api/msd/write_remote', async (request, reply) => {
      enabledOnly(msd);
      const q = request.query as Query;
      const rawUrl = str('url', q['url']);
      const url = parseHttpUrl(rawUrl);
      if (!url) throw new ValidatorError(`The argument '${rawUrl}' is not a valid HTTP|HTTPS URL`);
      const prefix = str('prefix', q['prefix'], { optional: true });
      const badPrefix = checkImagePrefix(prefix);
      if (badPrefix) fail('prefix', prefix, `prefix (${badPrefix})`);
      const image = present(q, 'image') ? str('image', q['image']) : '';
      if (image !== '') imageNameOf(image, prefix);
      const timeoutMs = timeoutSeconds(q['timeout']) * 1000;
      const insecure = bool('insecure', q['insecure'], false);
      const removeIncomplete = bool('remove_incomplete', q['remove_incomplete'], false);
      // A caller that leaves while the remote is asked stops the download (and frees MSD).
      const gone = new AbortController();
      const onClose = (): void => {
        if (!reply.raw.writableFinished) gone.abort();
      };
      reply.raw.on('close', onClose);
      if (request.raw.socket?.destroyed) gone.abort();
      const job = await msd
        .startDownload({
          url,
          image,
          prefix,
          insecure,
          timeoutMs,
          removeIncomplete,
          nameOf: imageNameOf,
          signal: gone.signal,
        })
        .finally(() => reply.raw.off('close', onClose));
      streamDownload(request, reply, job);
    });
  });
}

/** The ndjson body of write_remote (wire-protocol.md 1.6). */
function streamDownload(
  request: FastifyRequest,
  reply: FastifyReply,
  job: Awaited<ReturnType<MsdService['startDownload']>>,
): void {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    'content-type': 'application/x-ndjson',
    'cache-control': 'no-store',
    // no proxy buffering: the progress must arrive as it is written
    'x-accel-buffering': 'no',
  });
  const progress = (): string =>
    record({ ok: true, result: writeResult(job.name, job.size, job.written()) });
  res.write(progress());
  const timer = setInterval(() => res.write(progress()), REMOTE_PROGRESS_MS);
  let over = false;
  // The client hung up: the download stops (its file goes or stays per remove_incomplete).
  res.on('close', () => {
    if (!over) job.cancel();
  });
  // ... or left while the remote was being asked
  if (request.socket.destroyed) job.cancel();
  job.done.then(
    () => {
      over = true;
      clearInterval(timer);
      res.end(progress());
    },
    (err: unknown) => {
      over = true;
      clearInterval(timer);
      if (res.destroyed) return;
      const answer = err instanceof ApiError ? toHttp(err).body : errorRecord(err);
      request.log.warn(
        { err: (err as Error).message, image: job.name },
        'msd: write_remote failed',
      );
      res.write(progress());
      // The last record, then the body is cut (no final chunk): the client sees it failed.
      res.write(record(answer), () => res.destroy());
    },
  );
}

function errorRecord(err: unknown): MsdWriteRemoteRecord {
  const e = err as Error;
  return {
    ok: false,
    result: {
      error: e?.name && e.name !== 'Error' ? e.name : 'ClientPayloadError',
      error_msg: e?.message ?? String(err),
    },
  };
}

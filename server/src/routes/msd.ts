/**
 * The `/api/msd/*` routes (wire-protocol.md 1.6; docs/msd.md): kvmd's arguments checked and
 * handed to MsdService (services/msd/msd-service.ts). Every route but the state and
 * set_enabled is refused while MSD is disabled: one check, in front of that scope.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { MSD_NDJSON_EOL, checkImagePrefix, type MsdWriteRemoteRecord } from '@kvm/protocol';
import { ApiError, ValidatorError, errorBody, toHttp } from '../errors';
import { bool, fail, float, str } from '../validators';
import { imageNameOf, storedName } from '../services/msd/image-names';
import type { MsdService } from '../services/msd/msd-service';
import { parseHttpUrl } from '../services/msd/remote';
import { writeResult, type DownloadJob } from '../services/msd/transfers';

/** kvmd's default `timeout` of write_remote, seconds. */
export const WRITE_REMOTE_TIMEOUT_S = 10;
/** kvmd's float_f01: the least `timeout`, seconds. */
export const WRITE_REMOTE_TIMEOUT_MIN_S = 0.1;
/** The most `timeout` (connect, answer and idle read), seconds: a silent remote frees MSD. */
export const WRITE_REMOTE_TIMEOUT_MAX_S = 300;
/** Progress records of write_remote: "about every second" (wire-protocol.md 1.6). */
const REMOTE_PROGRESS_MS = 1000;

type Query = Record<string, unknown>;

function present(q: Query, key: string): boolean {
  return q[key] !== undefined && q[key] !== '';
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
  return float('timeout', value, {
    min: WRITE_REMOTE_TIMEOUT_MIN_S,
    max: WRITE_REMOTE_TIMEOUT_MAX_S,
    fallback: WRITE_REMOTE_TIMEOUT_S,
    what: `float between ${WRITE_REMOTE_TIMEOUT_MIN_S} and ${WRITE_REMOTE_TIMEOUT_MAX_S}`,
  });
}

export function msdRoutes(app: FastifyInstance, msd: MsdService): void {
  app.get('/api/msd', async () => {
    await msd.refresh();
    return msd.getState();
  });

  app.post('/api/msd/set_enabled', async (request) => {
    await msd.setEnabled(bool('enabled', (request.query as Query)['enabled']));
    return {};
  });

  void app.register(async (scope) => {
    // The one `enabled` check of the subsystem, before any argument is read.
    scope.addHook('preHandler', async () => msd.requireEnabled());
    verbRoutes(scope, msd);
    void scope.register(async (raw) => transferRoutes(raw, msd));
  });
}

function verbRoutes(app: FastifyInstance, msd: MsdService): void {
  app.post('/api/msd/set_params', async (request) => {
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
    await msd.setConnected(bool('connected', (request.query as Query)['connected']));
    return {};
  });

  app.post('/api/msd/remove', async (request) => {
    await msd.remove(storedName((request.query as Query)['image']));
    return {};
  });

  app.post('/api/msd/reset', async () => {
    await msd.reset();
    return {};
  });

  app.get('/api/msd/partition_show', async () => msd.partitionShow());

  app.get('/api/msd/partition_connect', async (request) => {
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
    await msd.partitionDisconnect();
    return {};
  });

  app.get('/api/msd/partition_format', async () => {
    await msd.partitionFormat();
    return {};
  });

  /** kvmd's image download; only `compress=none` (or empty) here. */
  app.get('/api/msd/read', async (request, reply) => {
    const q = request.query as Query;
    const name = storedName(q['image']);
    const compress = present(q, 'compress') ? str('compress', q['compress']) : 'none';
    if (compress !== 'none') fail('compress', compress, "compression of ['none']");
    const image = await msd.read(name);
    return reply
      .header('content-type', 'application/octet-stream')
      .header('content-length', String(image.size))
      .header(
        'content-disposition',
        `attachment; filename*=UTF-8''${encodeURIComponent(name.split('/').pop() ?? name)}`,
      )
      .send(image.body);
  });
}

/**
 * The bodies of these two never go through a parser: `write` streams request.raw to the disk
 * as it arrives (a multi-GB image is never held in memory), `write_remote` has none. A refusal
 * before the whole body arrived closes the connection (the app's error handler).
 */
function transferRoutes(app: FastifyInstance, msd: MsdService): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));

  app.post('/api/msd/write', async (request) => {
    const q = request.query as Query;
    const name = imageNameOf(
      str('image', q['image']),
      str('prefix', q['prefix'], { optional: true }),
    );
    const size = contentLength(request);
    const removeIncomplete = bool('remove_incomplete', q['remove_incomplete'], false);
    return msd.upload({ name, size, body: request.raw, removeIncomplete });
  });

  app.post('/api/msd/write_remote', async (request, reply) => {
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
}

function record(r: MsdWriteRemoteRecord): string {
  return `${JSON.stringify(r)}${MSD_NDJSON_EOL}`;
}

/** The ndjson body of write_remote (wire-protocol.md 1.6). */
function streamDownload(request: FastifyRequest, reply: FastifyReply, job: DownloadJob): void {
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
      // Past the headers: the error handler cannot answer, so the envelope goes as the last record.
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

/** A failure that is no ApiError (the download's socket): named as aiohttp would name it. */
function errorRecord(err: unknown): MsdWriteRemoteRecord {
  const e = err as Error;
  return errorBody(
    e?.name && e.name !== 'Error' ? e.name : 'ClientPayloadError',
    e?.message ?? String(err),
  );
}

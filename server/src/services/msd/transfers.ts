/**
 * Transfers into the image storage: `write` (an upload: the request body, exactly its
 * Content-Length) and `write_remote` (a download: remote.ts opens the stream). One runs at a
 * time; MsdService runs both inside the region's transfer part (msd-region.ts), so this file
 * never takes the region itself, only the claim on the name it writes.
 *
 * Guarantees: every check (name free, room, the storage not lent) comes before the first byte
 * is read; the image carries its `.incomplete` marker until the last byte and the folder entry
 * are on disk (storage.ts), so a cut transfer never shows as complete; a failed transfer's
 * file is removed when the disk filled up or with `remove_incomplete`, else left incomplete.
 */
import type { Readable, Writable } from 'node:stream';
import type { MsdDownloading, MsdUploading, MsdWriteResult } from '@kvm/protocol';
import { ApiError, ValidatorError } from '../../errors';
import type { Logger } from '../../log';
import {
  ClientPayloadError,
  MsdConnectedError,
  MsdImageExistsError,
  MsdNoSpaceError,
  MsdRemoteError,
  MsdStorageError,
  MsdTransferAbortedError,
} from './msd-errors';
import type { MsdRegion } from './msd-region';
import {
  baseOfSuggestedName,
  filenameFromUrl,
  openRemote,
  type RemoteBody,
  type RemotePolicy,
} from './remote';
import { isErrno, type ImageStorage, type ImageWriter, type StorageSpace } from './storage';

/** An upload without a byte for this long is ended (the partial file follows remove_incomplete). */
export const UPLOAD_IDLE_MS = 120_000;

class SourceIdleError extends Error {
  constructor(ms: number) {
    super(`No data for ${Math.round(ms / 1000)} s`);
    this.name = 'SourceIdleError';
  }
}

/** The source of a transfer closed before its last byte (a client or a remote that hung up). */
class SourceClosedError extends Error {
  constructor(message = 'The connection closed before the last byte') {
    super(message);
    this.name = 'SourceClosedError';
  }
}

/** Writing the image to the storage failed (the disk, not the source). Keeps the errno code. */
class StorageWriteError extends Error {
  readonly code: string | undefined;
  constructor(cause: Error) {
    super(cause.message);
    this.name = 'StorageWriteError';
    this.code = (cause as NodeJS.ErrnoException).code;
  }
}

export interface UploadRequest {
  /** The checked storage name. */
  name: string;
  /** Content-Length: exactly this many bytes make the image. */
  size: number;
  body: Readable;
  removeIncomplete: boolean;
}

export interface DownloadRequest {
  url: URL;
  /** `image` argument, or '' to take the remote's file name. */
  image: string;
  prefix: string;
  insecure: boolean;
  timeoutMs: number;
  removeIncomplete: boolean;
  /** Resolves the name from the arguments and the answer (the route's validation rules). */
  nameOf(image: string, prefix: string): string;
  /** Aborted when the caller went away: the download stops, before or after its stream began. */
  signal?: AbortSignal;
}

/** A download whose stream has begun. */
export interface DownloadJob {
  readonly name: string;
  readonly size: number;
  written(): number;
  /** Settles when the image is complete, or with the error that ended it. */
  readonly done: Promise<void>;
  cancel(): void;
}

/** A download as `Transfers.download` hands it over; downloadJob() adds `done`. */
export type StartedDownload = Omit<DownloadJob, 'done'>;

export function writeResult(name: string, size: number, written: number): MsdWriteResult {
  return { image: { name, size, written } };
}

/** What the transfers need to know of, and tell, the service that holds the drive. */
export interface TransferHost {
  /** `name` is the image lent to the remote computer now: it is never replaced. */
  inUse(name: string): boolean;
  /** The storage folder is lent whole (the partition drive): nothing is written into it. */
  storageLent(): boolean;
  /** The transfer began or moved on: send the state (with the free space, when read). */
  changed(space?: StorageSpace): void;
  /** The transfer ended: re-read the folder. */
  ended(): Promise<void>;
}

export interface TransfersOptions {
  storage: ImageStorage;
  region: MsdRegion;
  host: TransferHost;
  log?: Logger;
  /** Progress updates of the `msd` state, ms (at most ~4 per second). */
  progressIntervalMs?: number;
  /** An upload that sends nothing for this long ends; default UPLOAD_IDLE_MS. */
  uploadIdleMs?: number;
  /** Where write_remote may fetch from (`msd.remote` of the config); default: public only. */
  remote?: RemotePolicy;
}

interface Transfer {
  kind: 'upload' | 'download';
  name: string;
  size: number;
  writer: ImageWriter | null;
  /** Why the service stopped it (cancel, reset), if it did. */
  stopped: Error | null;
  /** Frees the name's claim. */
  release: () => void;
  /** Aborted by `abort`: the copy stops (an upload's request is left open for the answer). */
  readonly signal: AbortSignal;
  abort(reason: Error): void;
}

export class Transfers {
  /** The running transfer (its progress). */
  private current: Transfer | null = null;
  private ticker: NodeJS.Timeout | null = null;
  private readonly storage: ImageStorage;
  private readonly log: Logger | undefined;

  constructor(private readonly opts: TransfersOptions) {
    this.storage = opts.storage;
    this.log = opts.log;
  }

  /** The name being written, or null: that image is not complete yet. */
  get writing(): string | null {
    return this.current?.name ?? null;
  }

  /** `storage.downloading` and `storage.uploading` of the state, once the file exists. */
  progress(): { downloading: MsdDownloading | null; uploading: MsdUploading | null } {
    const t = this.current;
    const w = t?.writer;
    return {
      downloading:
        t?.kind === 'download' && w ? { name: t.name, size: t.size, readed: w.written } : null,
      uploading:
        t?.kind === 'upload' && w ? { name: t.name, size: t.size, written: w.written } : null,
    };
  }

  /** Stops the running transfer: its client gets `reason(kind)`. */
  stop(reason: (kind: Transfer['kind']) => Error): void {
    const t = this.current;
    t?.abort(reason(t.kind));
  }

  dispose(): void {
    this.stop(() => new MsdTransferAbortedError('The server is stopping', 503));
    this.stopTicker();
  }

  /** `write`: streams the body into a new image; resolves once the image is on disk. */
  async upload(p: UploadRequest): Promise<MsdWriteResult> {
    const t = this.begin('upload', p.name, p.size);
    try {
      t.release = this.opts.region.claim(p.name);
      await this.prepareImage(p.name, p.size, p.removeIncomplete);
      t.writer = await this.createWriter(p.name, p.size);
      this.opts.host.changed();
      await pump(p.body, t.writer.sink, this.opts.uploadIdleMs ?? UPLOAD_IDLE_MS, t.signal);
      await finishWriter(t.writer);
      this.log?.info({ image: p.name, size: p.size }, 'msd: image uploaded');
      return writeResult(p.name, p.size, t.writer.written);
    } catch (err) {
      throw await this.fail(t, err, p.removeIncomplete);
    } finally {
      await this.end(t);
    }
  }

  /**
   * `write_remote`: asks the remote, checks the name and the room, then copies the body.
   * `started` gets the job once the stream may begin (the route then answers ndjson); what
   * fails before that rejects this call, what fails after rejects the job's `done` as well.
   */
  async download(p: DownloadRequest, started: (job: StartedDownload) => void): Promise<void> {
    const t = this.begin('download', '', 0);
    const onCallerGone = (): void =>
      t.abort(new MsdTransferAbortedError('The download was cancelled: its caller left'));
    if (p.signal?.aborted) onCallerGone();
    p.signal?.addEventListener('abort', onCallerGone, { once: true });
    let remote: RemoteBody | null = null;
    t.signal.addEventListener('abort', () => remote?.body.destroy(t.stopped ?? undefined), {
      once: true,
    });
    try {
      let writer: ImageWriter;
      try {
        remote = await openRemote(p.url, {
          insecure: p.insecure,
          timeoutMs: p.timeoutMs,
          signal: t.signal,
          policy: this.opts.remote,
        });
        const suggested = baseOfSuggestedName(remote.filename ?? '') || filenameFromUrl(remote.url);
        // a remote's name (often decomposed by macOS) is normalized, not refused
        const name = p.nameOf(p.image || baseOfSuggestedName(suggested).normalize('NFC'), p.prefix);
        t.name = name;
        t.size = remote.size;
        t.release = this.opts.region.claim(name);
        await this.prepareImage(name, remote.size, p.removeIncomplete);
        writer = await this.createWriter(name, remote.size);
        t.writer = writer;
      } catch (err) {
        remote?.abort();
        throw await this.fail(t, err, p.removeIncomplete);
      }
      this.opts.host.changed();
      started({
        name: writer.name,
        size: writer.size,
        written: () => writer.written,
        cancel: () => t.abort(new MsdTransferAbortedError('The download was cancelled')),
      });
      try {
        await pump(remote.body, writer.sink, 0, t.signal);
        if (writer.written !== writer.size) {
          throw new MsdRemoteError('ClientPayloadError', 'Response payload is not completed');
        }
        await finishWriter(writer);
        this.log?.info({ image: writer.name, size: writer.size }, 'msd: image downloaded');
      } catch (err) {
        remote.abort();
        throw await this.fail(t, err, p.removeIncomplete);
      }
    } finally {
      p.signal?.removeEventListener('abort', onCallerGone);
      await this.end(t);
    }
  }

  /** The state shows the transfer from here. */
  private begin(kind: Transfer['kind'], name: string, size: number): Transfer {
    if (this.opts.host.storageLent()) {
      throw new MsdConnectedError('The storage is connected to the remote computer');
    }
    const aborter = new AbortController();
    const t: Transfer = {
      kind,
      name,
      size,
      writer: null,
      stopped: null,
      signal: aborter.signal,
      release: () => undefined,
      abort: (reason) => {
        t.stopped ??= reason;
        aborter.abort(reason);
      },
    };
    this.current = t;
    this.startTicker();
    return t;
  }

  private async end(t: Transfer): Promise<void> {
    t.release();
    if (this.current !== t) return;
    this.current = null;
    this.stopTicker();
    await this.opts.host.ended();
  }

  /** The name is free (an incomplete image of it goes with remove_incomplete) and fits. */
  private async prepareImage(name: string, size: number, removeIncomplete: boolean): Promise<void> {
    const existing = await this.storage.get(name);
    if (existing) {
      if (existing.complete || !removeIncomplete || this.opts.host.inUse(name)) {
        throw new MsdImageExistsError();
      }
      await this.storage.remove(name).catch((err: unknown) => {
        if (!isErrno(err, 'ENOENT')) throw err;
      });
    }
    const space = await this.storage.space();
    this.opts.host.changed(space);
    if (size > space.free) {
      throw new MsdNoSpaceError(
        `The storage space is insufficient: the image needs ${size} bytes, ${space.free} are free`,
      );
    }
  }

  private async createWriter(name: string, size: number): Promise<ImageWriter> {
    try {
      return await this.storage.createWriter(name, size);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EEXIST' || code === 'EISDIR') throw new MsdImageExistsError();
      if (code === 'ENOTDIR') {
        throw new ValidatorError(`A folder of the name '${name}' is an image, not a folder`);
      }
      if (code === 'EXDEV') {
        throw new ValidatorError(
          `The image name '${name}' goes through a symbolic link in the storage: refused`,
        );
      }
      if (code === 'ENAMETOOLONG') throw new ValidatorError(`The image name '${name}' is too long`);
      if (code === 'ENOSPC' || code === 'EDQUOT') throw new MsdNoSpaceError();
      throw err;
    }
  }

  /**
   * Ends a failed transfer's file: removed when the disk filled up or with remove_incomplete,
   * else left incomplete (marker kept). Returns the error to report.
   */
  private async fail(t: Transfer, error: unknown, removeIncomplete: boolean): Promise<Error> {
    const err = t.stopped ?? error;
    const full = isNoSpace(err);
    if (t.writer) {
      await t.writer.abandon(full || removeIncomplete);
      this.log?.warn(
        {
          image: t.name,
          written: t.writer.written,
          size: t.size,
          err: (err as Error).message,
          removed: full || removeIncomplete,
        },
        `msd: ${t.kind} failed`,
      );
    }
    // An ApiError says what happened (MsdNoSpaceError before a byte was written included).
    if (err instanceof ApiError) return err;
    if (full) return new MsdNoSpaceError('The storage filled up while writing the image');
    // the disk failed, not the client or the remote: say so (500, logged as an error)
    if (err instanceof StorageWriteError) return new MsdStorageError(err.message);
    if (
      t.kind === 'upload' &&
      (err instanceof SourceClosedError || err instanceof SourceIdleError)
    ) {
      return new ClientPayloadError(`The upload ended early: ${err.message}`);
    }
    if (t.kind === 'download' && t.writer) {
      const e = err as Error;
      return new MsdRemoteError(
        'ClientPayloadError',
        `Response payload is not completed${e?.message ? ` (${e.message})` : ''}`,
      );
    }
    return err as Error;
  }

  private startTicker(): void {
    this.stopTicker();
    this.ticker = setInterval(() => {
      // free space shrinks as the image grows
      this.storage.space().then(
        (space) => this.opts.host.changed(space),
        () => this.opts.host.changed(),
      );
    }, this.opts.progressIntervalMs ?? 250);
    this.ticker.unref();
  }

  private stopTicker(): void {
    if (this.ticker) clearInterval(this.ticker);
    this.ticker = null;
  }
}

/**
 * Runs `run` (a download inside the region) and resolves with its job as soon as the stream
 * begins; the job's `done` settles when `run` does. Errors before the stream reject this.
 */
export function downloadJob(
  run: (started: (job: StartedDownload) => void) => Promise<void>,
): Promise<DownloadJob> {
  return new Promise<DownloadJob>((resolveJob, rejectJob) => {
    let begun = false;
    let finished!: (err?: Error) => void;
    const done = new Promise<void>((resolve, reject) => {
      finished = (err) => (err ? reject(err) : resolve());
    });
    // the route handles `done`; this one only keeps Node from calling it unhandled
    done.catch(() => undefined);
    run((job) => {
      begun = true;
      resolveJob({ ...job, done });
    }).then(
      () => finished(),
      (err: Error) => (begun ? finished(err) : rejectJob(err)),
    );
  });
}

function isNoSpace(err: unknown): boolean {
  return isErrno(err, 'ENOSPC', 'EDQUOT') || err instanceof MsdNoSpaceError;
}

async function finishWriter(writer: ImageWriter): Promise<void> {
  if (writer.written !== writer.size) {
    throw new SourceClosedError(`Only ${writer.written} of ${writer.size} bytes arrived`);
  }
  await writer.commit();
}

/**
 * Pipes `source` into `sink` with backpressure. Unlike stream.pipeline, a failing sink does not
 * destroy the source: for an upload the source is the request, and destroying it would close
 * the socket before the 507 answer could go out.
 */
function pump(source: Readable, sink: Writable, idleMs = 0, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    let settled = false;
    let lastData = Date.now();
    const onData = (): void => {
      lastData = Date.now();
    };
    // A client that stops sending would hold the transfer region for ever.
    const idle = idleMs
      ? setInterval(
          () => {
            if (Date.now() - lastData > idleMs) settle(new SourceIdleError(idleMs));
          },
          Math.min(idleMs, 5000),
        )
      : null;
    idle?.unref();
    if (idle) source.on('data', onData);
    const settle = (err?: Error): void => {
      if (settled) return;
      settled = true;
      if (idle) clearInterval(idle);
      source.off('data', onData);
      source.off('error', onSourceError);
      source.off('aborted', onAborted);
      source.off('close', onClose);
      sink.off('error', onSinkError);
      sink.off('finish', onFinish);
      signal?.removeEventListener('abort', onAbort);
      if (err) {
        source.unpipe(sink);
        source.pause();
        sink.destroy();
        reject(err);
      } else resolve();
    };
    const onSourceError = (err: Error): void => settle(err);
    const onSinkError = (err: Error): void => settle(new StorageWriteError(err));
    const onAborted = (): void => settle(new SourceClosedError());
    const onClose = (): void => {
      if (!source.readableEnded) settle(new SourceClosedError());
    };
    const onFinish = (): void => settle();
    // Stopped by the service (reset): the source stays open so the answer can still go out.
    const onAbort = (): void => settle(signal?.reason as Error);
    if (signal?.aborted) {
      settle(signal.reason as Error);
      return;
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    source.on('error', onSourceError);
    source.on('aborted', onAborted);
    source.on('close', onClose);
    sink.on('error', onSinkError);
    sink.on('finish', onFinish);
    if (source.destroyed) {
      settle(new SourceClosedError());
      return;
    }
    source.pipe(sink);
  });
}

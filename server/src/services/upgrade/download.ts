/**
 * The background half of an online download: the body the channel sends, hashed and counted on
 * its way to `update.pkg.part`, renamed to `update.pkg` only when it is exactly the announced
 * size with the channel's sha256. A transfer that receives nothing for DOWNLOAD_IDLE_MS is
 * abandoned.
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Logger } from '../../log';
import { messageOf, type ChannelRelease } from './channel';

/** A download that receives nothing for this long is abandoned. */
const DOWNLOAD_IDLE_MS = 30_000;

export interface ReceiveTarget {
  partPath: string;
  packagePath: string;
  log: Logger;
}

/**
 * How a download ended: `done` (the package is in place), `failed` (a stall, a short or long
 * body, a wrong hash: the console sees total_size drop to 0) or `cancelled` (aborted on purpose).
 */
export type ReceiveOutcome = 'done' | 'failed' | 'cancelled';

export async function receivePackage(
  target: ReceiveTarget,
  body: ReadableStream<Uint8Array>,
  release: ChannelRelease,
  size: number,
  controller: AbortController,
): Promise<ReceiveOutcome> {
  const hash = createHash('sha256');
  let received = 0;
  let stalled = false;
  const stall = (): void => {
    stalled = true;
    controller.abort();
  };
  let idle = setTimeout(stall, DOWNLOAD_IDLE_MS);
  const tap = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      received += chunk.length;
      if (received > size) return cb(new Error('more bytes than announced'));
      hash.update(chunk);
      clearTimeout(idle);
      idle = setTimeout(stall, DOWNLOAD_IDLE_MS);
      cb(null, chunk);
    },
  });
  try {
    await pipeline(
      Readable.fromWeb(body as Parameters<typeof Readable.fromWeb>[0]),
      tap,
      createWriteStream(target.partPath),
      { signal: controller.signal },
    );
    const sha = hash.digest('hex');
    if (received !== size) throw new Error(`received ${received} of ${size} bytes`);
    if (sha !== release.sha256) throw new Error(`sha256 ${sha} is not the channel's`);
    await rename(target.partPath, target.packagePath);
    target.log.info({ version: release.version, size }, 'upgrade package downloaded');
    return 'done';
  } catch (e) {
    // GL: silent after the answer; the console watches download_info (it stops growing).
    await rm(target.partPath, { force: true });
    if (stalled || !controller.signal.aborted) {
      target.log.warn({ err: messageOf(e) }, 'upgrade download failed');
      return 'failed';
    }
    return 'cancelled';
  } finally {
    clearTimeout(idle);
  }
}

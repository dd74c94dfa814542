/**
 * Reset to defaults, crash-safe: the request only writes a marker and restarts; the wipe runs
 * at the next start, before any store opens, and the marker goes last. A kill -9 anywhere in
 * between leaves the marker, so the next start finishes the job.
 */
import { access, readdir, rm, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { atomicWriteFile, fsyncDir } from '../../storage/atomic';

export const RESET_MARKER = '.reset-pending';
/**
 * What a reset keeps: the TLS certificate (browsers trust it), the logs (support) and the
 * runtime folder (sockets and namespace mounts of processes, not settings).
 */
export const RESET_KEEPS = new Set(['tls', 'logs', 'run', RESET_MARKER]);

export async function requestReset(dataDir: string): Promise<void> {
  await atomicWriteFile(join(dataDir, RESET_MARKER), `${new Date().toISOString()}\n`);
}

export async function resetPending(dataDir: string): Promise<boolean> {
  return access(join(dataDir, RESET_MARKER)).then(
    () => true,
    () => false,
  );
}

/** Wipes the data folder if a reset is pending; answers whether it did. */
export async function finishPendingReset(dataDir: string): Promise<boolean> {
  if (!(await resetPending(dataDir))) return false;
  for (const name of await readdir(dataDir)) {
    if (RESET_KEEPS.has(name)) continue;
    await rm(join(dataDir, name), { recursive: true, force: true });
  }
  await fsyncDir(dataDir);
  await unlink(join(dataDir, RESET_MARKER));
  await fsyncDir(dataDir);
  return true;
}

/**
 * Atomic file writes: temp file in the same folder, fsync, rename over the target, fsync the
 * folder. A crash or power cut leaves either the old file or the new one, never a torn one.
 */
import { randomBytes } from 'node:crypto';
import { open, rename, unlink, mkdir, readdir } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

const TMP_MARK = '.tmp-';

export async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export async function atomicWriteFile(
  path: string,
  data: string | Uint8Array,
  mode = 0o600,
): Promise<void> {
  const dir = dirname(path);
  await mkdir(dir, { recursive: true });
  const tmp = join(dir, `.${basename(path)}${TMP_MARK}${randomBytes(6).toString('hex')}`);
  const handle = await open(tmp, 'wx', mode);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } catch (err) {
    await handle.close().catch(() => undefined);
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
  await handle.close();
  try {
    await rename(tmp, path);
  } catch (err) {
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
  await fsyncDir(dir);
}

/** Removes temp files a crash may have left behind in `dir`. */
export async function removeStaleTemps(dir: string): Promise<number> {
  let removed = 0;
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return 0;
  }
  for (const name of names) {
    if (name.startsWith('.') && name.includes(TMP_MARK)) {
      await unlink(join(dir, name)).catch(() => undefined);
      removed += 1;
    }
  }
  return removed;
}

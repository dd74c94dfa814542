/**
 * The one atomic file write: temp file in the same folder, fsync, rename over the target, fsync
 * the folder. A crash or power cut leaves either the old file or the new one, never a torn one.
 * `atomicWriteFile` for the server; `atomicWriteFileSync`, the same steps, for the launcher
 * (install/install-dir.ts), whose steps are synchronous on purpose.
 */
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  renameSync,
  unlinkSync,
  writeFileSync,
  type Dirent,
} from 'node:fs';
import { open, rename, unlink, mkdir, readdir } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

const TMP_MARK = '.tmp-';

/** `.<name>.tmp-<hex>` in `dir`: a name of its own for each write (see TEMP_NAME). */
function tempPath(path: string, dir: string): string {
  return join(dir, `.${basename(path)}${TMP_MARK}${randomBytes(6).toString('hex')}`);
}

export async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export function fsyncDirSync(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * `tmpDir`: where the temp file is made instead of the target's folder (same file system), for
 * a folder whose every entry is used as it appears (`/etc/netns/<ns>`: `ip netns exec`
 * bind-mounts each file in it over /etc). Each call has its own temp name, so writes that
 * overlap never rename each other's file away.
 */
export async function atomicWriteFile(
  path: string,
  data: string | Uint8Array,
  mode = 0o600,
  opts: { tmpDir?: string } = {},
): Promise<void> {
  const dir = dirname(path);
  await mkdir(dir, { recursive: true });
  const tmpDir = opts.tmpDir ?? dir;
  if (tmpDir !== dir) await mkdir(tmpDir, { recursive: true });
  const tmp = tempPath(path, tmpDir);
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

/** atomicWriteFile's steps, synchronous (the launcher's records). */
export function atomicWriteFileSync(path: string, data: string | Uint8Array, mode = 0o600): void {
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true });
  const tmp = tempPath(path, dir);
  const fd = openSync(tmp, 'wx', mode);
  try {
    writeFileSync(fd, data);
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    removeQuietly(tmp);
    throw err;
  }
  closeSync(fd);
  try {
    renameSync(tmp, path);
  } catch (err) {
    removeQuietly(tmp);
    throw err;
  }
  fsyncDirSync(dir);
}

function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}

/** How deep removeStaleTemps looks under the data folder (state files sit 1-2 levels down). */
export const STALE_TEMP_MAX_DEPTH = 8;

/**
 * `.<name>.tmp-<hex>`: what atomicWriteFile makes. An image's marker (`.__<name>.incomplete`)
 * never matches, whatever the image is called.
 */
const TEMP_NAME = /^\..+\.tmp-[0-9a-f]+$/;

/**
 * Removes the temp files a crash (kill -9, power cut) left behind anywhere under `dir`, down to
 * STALE_TEMP_MAX_DEPTH folders. Symbolic links are neither followed nor removed. Returns the
 * number removed.
 */
export async function removeStaleTemps(dir: string, depth = STALE_TEMP_MAX_DEPTH): Promise<number> {
  let removed = 0;
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const e of entries) {
    if (e.isDirectory()) {
      if (depth > 0) removed += await removeStaleTemps(join(dir, e.name), depth - 1);
    } else if (e.isFile() && TEMP_NAME.test(e.name)) {
      await unlink(join(dir, e.name)).catch(() => undefined);
      removed += 1;
    }
  }
  return removed;
}

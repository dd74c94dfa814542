import { constants as fsConstants } from 'node:fs';
import { open } from 'node:fs/promises';

/**
 * The last guard before a drive lends a file: whoever opens it next (QEMU, or the kernel's
 * mass-storage gadget as root) may write to it, so it must be a regular file, not a symbolic
 * link (O_NOFOLLOW) nor a device. The MSD service already checked the folders.
 */
export async function assertRegularFile(path: string): Promise<void> {
  let handle;
  try {
    handle = await open(path, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ELOOP') {
      throw new Error(`${path} is a symbolic link: not lent`);
    }
    throw err;
  }
  try {
    if (!(await handle.stat()).isFile()) throw new Error(`${path} is not a regular file`);
  } finally {
    await handle.close();
  }
}

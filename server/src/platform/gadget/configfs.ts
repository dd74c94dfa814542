/**
 * The file operations the gadget platform does on configfs, /sys and /dev, behind one small
 * interface: the real one is node:fs, and the tests' (test-support.ts) plays the kernel on a
 * fixture tree (attribute files that appear on mkdir, a function whose module is missing,
 * `UDC` writes that change the UDC's state).
 *
 * Facts of the real configfs this code relies on (kernel Documentation/usb/gadget_configfs.rst):
 * `mkdir` makes a group with its attribute files and default groups (a gadget's `strings`,
 * `configs`, `functions`; a mass storage function's `lun.0`); attribute files cannot be
 * unlinked and default groups cannot be removed, `rmdir` of the group takes them along; a
 * function linked into a configuration cannot be removed before its link is; writing `""` to a
 * gadget's `UDC` when it is not bound fails (ENODEV).
 */
import * as fsp from 'node:fs/promises';
import { join } from 'node:path';

export interface GadgetDirEntry {
  name: string;
  kind: 'dir' | 'file' | 'link' | 'other';
}

export interface GadgetFs {
  /** mkdir -p (an existing folder is fine). */
  mkdir(path: string): Promise<void>;
  /** One write of the whole value (configfs stores an attribute per write). */
  writeFile(path: string, data: string | Uint8Array): Promise<void>;
  readFile(path: string): Promise<string>;
  readdir(path: string): Promise<GadgetDirEntry[]>;
  rmdir(path: string): Promise<void>;
  unlink(path: string): Promise<void>;
  symlink(target: string, path: string): Promise<void>;
  exists(path: string): Promise<boolean>;
}

/** node:fs, as on a board. */
export class NodeGadgetFs implements GadgetFs {
  async mkdir(path: string): Promise<void> {
    await fsp.mkdir(path, { recursive: true });
  }

  async writeFile(path: string, data: string | Uint8Array): Promise<void> {
    // configfs cannot create a file: an attribute the kernel did not make fails (a plain
    // fixture tree gets the file). An empty value is written as "\n": writeFile makes no
    // write() at all for zero bytes, so configfs would never call the attribute's store (an
    // unbind through `UDC` "" silently did nothing; measured in the device VM), and the kernel
    // drops a trailing newline from the values we write (UDC, lun file, strings).
    await fsp.writeFile(path, data === '' ? '\n' : data);
  }

  async readFile(path: string): Promise<string> {
    return fsp.readFile(path, 'utf8');
  }

  async readdir(path: string): Promise<GadgetDirEntry[]> {
    const entries = await fsp.readdir(path, { withFileTypes: true });
    return entries.map((e) => ({
      name: e.name,
      kind: e.isSymbolicLink() ? 'link' : e.isDirectory() ? 'dir' : e.isFile() ? 'file' : 'other',
    }));
  }

  async rmdir(path: string): Promise<void> {
    await fsp.rmdir(path);
  }

  async unlink(path: string): Promise<void> {
    await fsp.unlink(path);
  }

  async symlink(target: string, path: string): Promise<void> {
    await fsp.symlink(target, path);
  }

  async exists(path: string): Promise<boolean> {
    try {
      await fsp.lstat(path);
      return true;
    } catch {
      return false;
    }
  }
}

export function errnoCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

/** readdir that answers [] for a folder that is not there. */
export async function listDir(fs: GadgetFs, path: string): Promise<GadgetDirEntry[]> {
  try {
    return await fs.readdir(path);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'ENOTDIR') return [];
    throw err;
  }
}

/** An attribute's value without its trailing newline; null when it cannot be read. */
export async function readAttr(fs: GadgetFs, path: string): Promise<string | null> {
  try {
    return (await fs.readFile(path)).replace(/\n+$/, '');
  } catch {
    return null;
  }
}

/**
 * Removes a configfs group: links and child groups first (best effort: attribute files and
 * default groups refuse, and go with the group), then the group itself, whose rmdir is the one
 * that must succeed. On a fixture tree the same walk removes the plain files too.
 */
export async function removeGroup(fs: GadgetFs, dir: string): Promise<void> {
  for (const entry of await listDir(fs, dir)) {
    const path = join(dir, entry.name);
    if (entry.kind === 'dir') await removeGroup(fs, path).catch(() => undefined);
    else await fs.unlink(path).catch(() => undefined);
  }
  await fs.rmdir(dir);
}

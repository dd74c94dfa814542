/**
 * The guest image scripts/build-guest.mjs builds into .cache/guest/ of the checkout: the
 * remote computer's own system when no admin image is mounted (docs/drivers.md, QEMU target).
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { FACTORY_ROOT } from '../../paths';

export interface GuestImage {
  dir: string;
  /** Uncompressed ELF kernel, booted directly through QEMU's PVH entry. */
  vmlinux: string;
  /** The same kernel as Debian ships it (bzImage), inside the ISO. */
  vmlinuz: string;
  initrd: string;
  /** Hybrid ISO (isolinux) of the same kernel, initramfs and command line. */
  iso: string;
  /** The same guest as a bootable CD that says so (kvm_media=rescue): the virtual media tests mount it. */
  rescueIso: string;
  manifest: string;
}

export interface GuestManifest {
  scriptHash: string;
  kernelVersion: string;
  /** The exact kernel command line (also in the ISO's isolinux.cfg). */
  cmdline: string;
  modules: string[];
}

export function guestImagePaths(dir = join(FACTORY_ROOT, '.cache', 'guest')): GuestImage {
  return {
    dir,
    vmlinux: join(dir, 'vmlinux'),
    vmlinuz: join(dir, 'vmlinuz'),
    initrd: join(dir, 'initrd.img'),
    iso: join(dir, 'guest.iso'),
    rescueIso: join(dir, 'rescue.iso'),
    manifest: join(dir, 'guest.json'),
  };
}

/** Reads guest.json; a missing image is an error that says how to build it. */
export async function readGuestManifest(image: GuestImage): Promise<GuestManifest> {
  try {
    const manifest = JSON.parse(await readFile(image.manifest, 'utf8')) as GuestManifest;
    await Promise.all([stat(image.vmlinux), stat(image.initrd), stat(image.iso)]);
    return manifest;
  } catch (err) {
    throw new Error(
      `QEMU guest image missing in ${image.dir} (${(err as Error).message}): ` +
        'run `node scripts/build-guest.mjs`',
    );
  }
}

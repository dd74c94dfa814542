import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { GadgetPlatform } from '../../platform/gadget/platform';
import { FixtureKernel, until } from '../../platform/gadget/test-support';
import { GadgetMsd } from './gadget';
import type { MsdDriverState } from './types';

const LUN = 'config/usb_gadget/kvm/functions/mass_storage.usb0';

let kernel: FixtureKernel | null = null;
let platform: GadgetPlatform | null = null;
let msd: GadgetMsd | null = null;

afterEach(async () => {
  await msd?.dispose();
  await platform?.dispose();
  await kernel?.cleanup();
  kernel = platform = msd = null;
});

async function start(udcs?: string[]): Promise<{ k: FixtureKernel; m: GadgetMsd }> {
  kernel = await FixtureKernel.make(udcs ? { udcs } : {});
  platform = new GadgetPlatform(kernel.options());
  msd = new GadgetMsd(platform, { partitionDevice: join(kernel.root, 'mmcblk0p10') });
  await msd.init();
  await platform.init();
  return { k: kernel, m: msd };
}

describe('GadgetMsd', () => {
  it('is online once the drive function is made and bound, and says when that changes', async () => {
    const { k, m } = await start([]);
    expect(m.getState()).toEqual({ online: false });
    const seen: MsdDriverState[] = [];
    m.onState((s) => seen.push(s));
    await k.addUdc('dummy_udc.0');
    // the state is read live; the event follows once the bind is done
    await until(() => seen.length > 0);
    expect(seen).toEqual([{ online: true }]);
    expect(m.getState()).toEqual({ online: true });
  });

  it('lends an image on lun.0 and ejects it; refuses a second, a link and a folder', async () => {
    const { k, m } = await start();
    const iso = join(k.root, 'a.iso');
    await writeFile(iso, 'x');
    await m.connectImage({ path: iso, cdrom: true, rw: false });
    expect(await k.read(`${LUN}/lun.0/file`)).toBe(iso);
    await expect(m.connectImage({ path: iso, cdrom: true, rw: false })).rejects.toThrow(
      'An image is connected already',
    );
    await m.disconnectImage();
    expect(await k.read(`${LUN}/lun.0/file`)).toBe('');
    await symlink(iso, join(k.root, 'link.iso'));
    await expect(
      m.connectImage({ path: join(k.root, 'link.iso'), cdrom: true, rw: false }),
    ).rejects.toThrow('is a symbolic link: not lent');
    await mkdir(join(k.root, 'dir.iso'));
    await expect(
      m.connectImage({ path: join(k.root, 'dir.iso'), cdrom: true, rw: false }),
    ).rejects.toThrow('is not a regular file');
    expect(await k.read(`${LUN}/lun.0/file`)).toBe('');
  });

  it('lends the board partition (config gadget.msd_partition_device) read-only on lun.1', async () => {
    const { k, m } = await start();
    await expect(m.connectPartition('/var/lib/kvm/msd')).rejects.toThrow(
      `The partition ${join(k.root, 'mmcblk0p10')} does not exist on this board`,
    );
    await writeFile(join(k.root, 'mmcblk0p10'), '');
    await m.connectPartition('/var/lib/kvm/msd');
    expect(await k.read(`${LUN}/lun.1/file`)).toBe(join(k.root, 'mmcblk0p10'));
    expect(await k.read(`${LUN}/lun.1/ro`)).toBe('1');
    await expect(m.connectPartition('/x')).rejects.toThrow('The storage is connected already');
    await m.disconnectPartition();
    expect(await k.read(`${LUN}/lun.1/file`)).toBe('');
  });
});

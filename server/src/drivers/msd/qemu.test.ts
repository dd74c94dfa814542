import { mkdir, mkdtemp, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guestImagePaths } from '../../platform/qemu/guest';
import { QemuMachine } from '../../platform/qemu/machine';
import { QemuMsd } from './qemu';
import { ensureGuestImage, readSerial, until } from '../../platform/qemu/test-support';

let dir: string;
let machine: QemuMachine;
let msd: QemuMsd;

/** The serial log's complete lines (a line still being written is not counted yet). */
async function serialLines(): Promise<string[]> {
  const text = (await readSerial(machine.paths.serial)).replace(/\r/g, '');
  const end = text.lastIndexOf('\n');
  return end < 0 ? [] : text.slice(0, end).split('\n');
}

/** Waits for a serial line matching `re` after line `from`; returns its match. */
async function line(re: RegExp, from: number, what: string, timeoutMs = 20_000) {
  return until(
    what,
    async () => {
      for (const l of (await serialLines()).slice(from)) {
        const m = re.exec(l);
        if (m) return m;
      }
      return null;
    },
    timeoutMs,
  );
}

beforeAll(async () => {
  ensureGuestImage();
  dir = await mkdtemp(join(tmpdir(), 'kvm-qemu-msd-'));
  machine = new QemuMachine({ runDir: join(dir, 'run') });
  msd = new QemuMsd(machine, undefined, { usbBus: 'xhci.0' });
  await msd.init();
  await machine.init();
  await until('guest ready', async () => (await serialLines()).includes('guest ready'), 60_000);
  // the empty CD-ROM drive has been seen (block devices are listed right after ready)
  await line(/^block sr0 0$/, 0, 'empty sr0');
}, 120_000);

afterAll(async () => {
  await msd?.dispose();
  await machine?.dispose();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('QemuMsd', () => {
  it('is online while QEMU runs', () => {
    expect(msd.getState()).toEqual({ online: true });
  });

  it('lends an ISO on the IDE CD-ROM and ejects it', async () => {
    const iso = guestImagePaths().iso;
    const from = (await serialLines()).length;
    await msd.connectImage({ path: iso, cdrom: true, rw: false });
    const m = await line(/^block sr0 (\d+) iso=KVM_GUEST$/, from, 'medium in sr0');
    expect(Number(m[1])).toBeGreaterThan(0);
    const after = (await serialLines()).length;
    await msd.disconnectImage();
    await line(/^block sr0 0$/, after, 'sr0 empty again');
  }, 60_000);

  it('lends an image as a USB flash drive and unplugs it', async () => {
    const img = join(dir, 'flash.img');
    await writeFile(img, '');
    await truncate(img, 8 * 1024 * 1024);
    const from = (await serialLines()).length;
    await msd.connectImage({ path: img, cdrom: false, rw: true });
    const m = await line(/^block (sd[a-z]+) (\d+)$/, from, 'usb disk');
    expect(Number(m[2])).toBe(16384);
    const after = (await serialLines()).length;
    await msd.disconnectImage();
    await line(new RegExp(`^block ${m[1]} gone$`), after, 'usb disk gone');
    // the node went with the device: the same ids plug again
    const again = (await serialLines()).length;
    await msd.connectImage({ path: img, cdrom: false, rw: false });
    await line(/^block (sd[a-z]+) 16384$/, again, 'usb disk again');
    await msd.disconnectImage();
  }, 60_000);

  it('lends the storage folder as a read-only FAT disk (vvfat)', async () => {
    const storage = join(dir, 'images');
    await mkdir(join(storage, 'isos'), { recursive: true });
    await writeFile(join(storage, 'isos', 'hello.iso'), 'hello');
    const from = (await serialLines()).length;
    await msd.connectPartition(storage);
    const m = await line(/^block (sd[a-z]+) (\d+)$/, from, 'storage disk');
    expect(Number(m[2])).toBeGreaterThan(100_000);
    const after = (await serialLines()).length;
    await msd.disconnectPartition();
    await line(new RegExp(`^block ${m[1]} gone$`), after, 'storage disk gone');
  }, 60_000);

  it('says so when the storage is larger than a vvfat disk', async () => {
    const storage = join(dir, 'big');
    await mkdir(storage, { recursive: true });
    await writeFile(join(storage, 'big.img'), '');
    await truncate(join(storage, 'big.img'), 600 * 1024 * 1024);
    const err = await msd.connectPartition(storage).then(
      () => null,
      (e: Error) => e,
    );
    // QEMU 7.2: "Directory does not fit in FAT16 (capacity 516.06 MB)"
    expect(err?.message).toMatch(/does not fit/);
    // nothing left behind: the regular storage still plugs
    await msd.connectPartition(join(dir, 'images'));
    await msd.disconnectPartition();
  }, 60_000);

  it('says why QEMU refused an image', async () => {
    await expect(
      msd.connectImage({ path: join(dir, 'missing.img'), cdrom: false, rw: false }),
    ).rejects.toThrow(/missing\.img/);
    // nothing half-plugged: a good image still goes in
    const img = join(dir, 'flash.img');
    await msd.connectImage({ path: img, cdrom: false, rw: false });
    await msd.disconnectImage();
  }, 30_000);

  it('plugs the CD-ROM medium again after QEMU restarts', async () => {
    const iso = guestImagePaths().iso;
    await msd.connectImage({ path: iso, cdrom: true, rw: false });
    const pid = machine.pid!;
    const restarted = new Promise<void>((resolve) => machine.once('ready', () => resolve()));
    process.kill(pid, 'SIGKILL');
    await restarted;
    // the serial log starts over with the new QEMU
    await until(
      'guest ready again',
      async () => (await serialLines()).includes('guest ready'),
      60_000,
    );
    await line(/^block sr0 \d+ iso=KVM_GUEST$/, 0, 'medium after restart', 30_000);
    await msd.disconnectImage();
  }, 120_000);
});

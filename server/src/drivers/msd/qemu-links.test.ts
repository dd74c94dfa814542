/** QemuMsd's own guard: a link or a non-file is never handed to QEMU (no VM needed). */
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { QemuMachine } from '../../platform/qemu/machine';
import { QemuMsd } from './qemu';

let dir: string;
let commands: string[];
let msd: QemuMsd;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kvm-qemu-msd-links-'));
  const machine = new QemuMachine({ runDir: join(dir, 'run') });
  commands = [];
  // records what would reach QMP; the machine is never started
  machine.command = (async (name: string) => {
    commands.push(name);
    return {};
  }) as QemuMachine['command'];
  msd = new QemuMsd(machine);
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('QemuMsd and links', () => {
  it('refuses a symbolic link to a file and a folder, before any QMP command', async () => {
    await writeFile(join(dir, 'outside.img'), 'x');
    await symlink(join(dir, 'outside.img'), join(dir, 'link.img'));
    await expect(
      msd.connectImage({ path: join(dir, 'link.img'), cdrom: false, rw: true }),
    ).rejects.toThrow(/symbolic link/);
    await expect(msd.connectImage({ path: dir, cdrom: true, rw: false })).rejects.toThrow(
      /not a regular file/,
    );
    expect(commands).toEqual([]);
  });
});

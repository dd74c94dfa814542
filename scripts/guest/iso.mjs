// The guest's hybrid ISOs (isolinux; they boot as a CD-ROM or as a disk): guest.iso and the
// rescue.iso the virtual media tests mount.
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CMDLINE } from './contents.mjs';
import { run } from './run.mjs';

/**
 * The second ISO, `rescue.iso`: the same guest, volume id KVM_RESCUE and `kvm_media=rescue` on
 * its kernel command line, so a test that mounts it as a CD-ROM and resets the VM can tell from
 * the serial log that the VM booted from the mounted medium (`guest init <release> rescue`).
 */
export const RESCUE = { volumeId: 'KVM_RESCUE', media: 'rescue' };

export function buildIso(stage, iso, volumeId = 'KVM_GUEST', extraCmdline = '') {
  const isolinux = '/usr/lib/ISOLINUX';
  const syslinux = '/usr/lib/syslinux/modules/bios';
  for (const need of [join(isolinux, 'isolinux.bin'), join(syslinux, 'ldlinux.c32')]) {
    if (!existsSync(need)) {
      throw new Error(`${need} missing: apt-get install isolinux syslinux-common xorriso`);
    }
  }
  mkdirSync(join(stage, 'isolinux'), { recursive: true });
  copyFileSync(join(isolinux, 'isolinux.bin'), join(stage, 'isolinux', 'isolinux.bin'));
  copyFileSync(join(syslinux, 'ldlinux.c32'), join(stage, 'isolinux', 'ldlinux.c32'));
  writeFileSync(
    join(stage, 'isolinux', 'isolinux.cfg'),
    `DEFAULT guest\nPROMPT 0\nTIMEOUT 0\nLABEL guest\n  KERNEL /vmlinuz\n  INITRD /initrd.img\n  APPEND ${CMDLINE}${extraCmdline}\n`,
  );
  // Hybrid: boots as a CD-ROM (El Torito) and as a disk or USB stick (isohdpfx MBR).
  run('xorriso', [
    ...['-as', 'mkisofs', '-quiet', '-o', iso, '-V', volumeId, '-J', '-R'],
    ...['-isohybrid-mbr', join(isolinux, 'isohdpfx.bin')],
    ...['-c', 'isolinux/boot.cat', '-b', 'isolinux/isolinux.bin'],
    ...['-no-emul-boot', '-boot-load-size', '4', '-boot-info-table'],
    stage,
  ]);
}

// The device VM's QEMU command line, shared by scripts/device-vm.mjs (npm run device-vm) and
// the e2e harness (e2e/fixtures/device-vm.ts). docs/hardware.md, "The device VM".
import { join } from 'node:path';
import { VM, cmdline } from './contents.mjs';

/**
 * Memory of the VM in MB. Measured at 512 (issue 23): after boot the initramfs (~142 MB, unpacked
 * in RAM), the launcher (42 MB RSS) and the server (69 MB) left 233 MB available; 768 left room for
 * the page cache of drive reads and for clients. Issue 24 adds ffmpeg with its ~215 libraries
 * (~240 MB more in the initramfs) and the encoders that run at once (video, sound, camera).
 */
export const MEMORY_MB = 1536;

/**
 * @param {object} o
 * @param {string} o.dir        the build's output folder (.cache/device-vm)
 * @param {string} o.dataImage  the data disk (raw ext4), the server's data folder
 * @param {number} o.port       the host's loopback port forwarded to the server's 8443
 * @param {string} o.consoleLog file for ttyS0 (kernel, /init and the server's output)
 * @param {string} o.observerSocket unix socket of ttyS1 (the observer; QEMU listens on it)
 * @param {string} [o.target]   the server's --target (gadget)
 * @param {number} [o.memoryMb]
 * @returns {string[]} the arguments of qemu-system-x86_64
 */
export function qemuArgs(o) {
  return [
    '-accel',
    'tcg',
    '-machine',
    'pc',
    '-cpu',
    'max',
    '-m',
    String(o.memoryMb ?? MEMORY_MB),
    '-smp',
    '2',
    '-kernel',
    join(o.dir, 'vmlinux'),
    '-initrd',
    join(o.dir, 'initrd.img'),
    '-append',
    cmdline(o.target),
    '-nic',
    `user,restrict=on,model=virtio-net-pci,hostfwd=tcp:127.0.0.1:${o.port}-:${VM.port}`,
    '-drive',
    `file=${o.dataImage},if=virtio,format=raw`,
    '-serial',
    `file:${o.consoleLog}`,
    '-serial',
    `unix:${o.observerSocket},server=on,wait=off`,
    '-display',
    'none',
    '-monitor',
    'none',
    '-no-reboot',
    '-nodefaults',
  ];
}

/** Makes a sparse ext4 data disk (the host's mke2fs: the VM mounts it at its data folder). */
export const DATA_IMAGE_MB = 256;
export function mkfsArgs(path, mb = DATA_IMAGE_MB) {
  return ['-q', '-F', '-t', 'ext4', '-L', 'kvm-data', path, `${mb}M`];
}

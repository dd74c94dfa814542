// The device VM's QEMU command line, shared by scripts/device-vm.mjs (npm run device-vm) and
// the e2e harness (e2e/fixtures/device-vm.ts). docs/hardware.md, "The device VM".
import { createSocket } from 'node:dgram';
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
 * @param {readonly [number, number] | null} [o.webrtcPorts] UDP ports of the host's loopback
 *   forwarded to the same ports inside, for the server's WebRTC (cmdline kvm_webrtc_ports)
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
    cmdline(o.target, o.webrtcPorts ?? null),
    '-nic',
    nic(o.port, o.webrtcPorts ?? null),
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

/**
 * The user-mode network: the server's https port, and with `webrtcPorts` each UDP port of the
 * range. slirp's restrict=on drops every UDP packet the guest sends (replies to a forwarded port
 * too: libslirp udp_input), so WebRTC needs restrict=off: the guest then has no default route
 * (/init) and no IPv6 (ipv6=off), so it reaches its subnet only: 10.0.2.2 is the host's
 * loopback, 10.0.2.3 slirp's DNS (nothing in the VM asks it).
 */
function nic(port, webrtcPorts) {
  const fwd = [`hostfwd=tcp:127.0.0.1:${port}-:${VM.port}`];
  if (!webrtcPorts) return ['user', 'restrict=on', 'model=virtio-net-pci', ...fwd].join(',');
  for (let p = webrtcPorts[0]; p <= webrtcPorts[1]; p += 1) {
    fwd.push(`hostfwd=udp:127.0.0.1:${p}-:${p}`);
  }
  return ['user', 'restrict=off', 'ipv6=off', 'model=virtio-net-pci', ...fwd].join(',');
}

/** How many UDP ports the harness forwards for WebRTC (a viewer takes one). */
export const WEBRTC_PORTS = 8;

/**
 * `count` consecutive UDP ports free on the host's loopback now (bound, then released), at or
 * above `from`; [min, max].
 * @param {number} [count]
 * @param {number} [from]
 * @returns {Promise<[number, number]>}
 */
export async function freeUdpRange(
  count = WEBRTC_PORTS,
  from = 20000 + Math.floor(Math.random() * 30000),
) {
  for (let base = from; base + count - 1 <= 65535; base += count) {
    const sockets = [];
    let ok = true;
    for (let p = base; p < base + count && ok; p += 1) {
      const s = createSocket('udp4');
      sockets.push(s);
      ok = await new Promise((resolve) => {
        s.once('error', () => resolve(false));
        s.bind(p, '127.0.0.1', () => resolve(true));
      });
    }
    await Promise.all(sockets.map((s) => new Promise((r) => s.close(() => r(undefined)))));
    if (ok) return [base, base + count - 1];
  }
  throw new Error(`no ${count} free UDP ports from ${from}`);
}

/** Makes a sparse ext4 data disk (the host's mke2fs: the VM mounts it at its data folder). */
export const DATA_IMAGE_MB = 256;
export function mkfsArgs(path, mb = DATA_IMAGE_MB) {
  return ['-q', '-F', '-t', 'ext4', '-L', 'kvm-data', path, `${mb}M`];
}

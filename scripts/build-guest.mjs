#!/usr/bin/env node
// Builds the QEMU target's guest, the "remote computer" the server boots when no admin image is
// mounted: Debian's kernel + busybox-static in a gzip newc initramfs, plus a hybrid ISO of the
// same kernel and initramfs (isolinux). Debian packages only: the kernel and busybox-static are
// fetched with `apt-get download` and unpacked with `dpkg-deb -x` (never installed on the host);
// isolinux, syslinux-common and xorriso are host packages (scripts/bootstrap.mjs installs them).
//
// Output in .cache/guest/ of the checkout: vmlinux (the uncompressed kernel QEMU boots directly,
// PVH), vmlinuz (the same kernel as Debian ships it, for the ISO), initrd.img, guest.iso,
// guest.json (kernel version, exact kernel command line, the hash of this script). Quick and silent when guest.json
// matches this script. Options: --force (rebuild), --quiet (no progress lines).
//
// The guest (docs/drivers.md, QEMU target): a framebuffer console at 1024x768 with a shell on
// tty1 that echoes what is typed, and on the serial port (ttyS0) one line per input event and
// per block device change, the oracle of the end-to-end tests, plus a prompt-less shell that
// runs what the console's serial tab types. Sound (issue 14): QEMU's intel-hda + hda-duplex with
// the `tone`, `hear` and `listen` commands of a small static C helper (scripts/guest/snd.c,
// built here with `gcc -static`: the guest needs no alsa-lib).
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outDir = join(root, '.cache', 'guest');
const debDir = join(outDir, 'debs');
const workDir = join(outDir, 'work');
const quiet = process.argv.includes('--quiet');
const force = process.argv.includes('--force');
const sndSource = join(root, 'scripts', 'guest', 'snd.c');
// The C helper is part of the guest: a change to it rebuilds the guest too.
const scriptHash = createHash('sha256')
  .update(readFileSync(fileURLToPath(import.meta.url)))
  .update(readFileSync(sndSource))
  .digest('hex')
  .slice(0, 16);

/**
 * The kernel command line, the same for direct boot and the ISO.
 * - console=ttyS0 console=tty1: kernel errors on both; the last one (tty1) is /dev/console.
 * - no `video=`: the bochs DRM driver (QEMU's `VGA`) switches the screen from the BIOS's
 *   720x400 text mode to the preferred mode of the VGA's EDID (`xres`/`yres`, 1024x768 unless
 *   an EDID was applied: server drivers/qemu/display.ts) when init loads it.
 * - consoleblank=0: the screen never blanks (the e2e reads it at any time).
 */
const CMDLINE = ['console=ttyS0', 'console=tty1', 'quiet', 'loglevel=3', 'consoleblank=0'].join(
  ' ',
);

/** Modules loaded at boot (with their dependencies from the modules' own `depends=`). */
const MODULES = [
  // The framebuffer console on QEMU's std VGA, first so the screen switches early.
  'bochs',
  // USB host controllers: PIIX3 UHCI (`-usb`), EHCI and xHCI if a machine adds them.
  'uhci_hcd',
  'ehci_pci',
  'xhci_pci',
  // usb-kbd and usb-tablet, the PS/2 mouse (relative mode), /dev/input/event*, and the ACPI
  // power button (init powers off when it is pressed).
  'usbhid',
  'hid_generic',
  'psmouse',
  'evdev',
  'button',
  // IDE CD-ROM, USB flash drives, virtio disks, and the ISO file system.
  'ata_piix',
  'sr_mod',
  'sd_mod',
  'usb_storage',
  'virtio_pci',
  'virtio_blk',
  'isofs',
  // Sound: QEMU's hda-duplex is a generic HDA codec. The codec driver first: the controller
  // would ask /sbin/modprobe for it, which this guest does not have.
  'snd_hda_codec_generic',
  'snd_hda_intel',
];

// Serial port lines (ttyS0), one per fact, for the end-to-end tests:
//   guest init <kernel release> <media> / guest ready   boot progress (media: own or rescue)
//   input <eventN> add <name>                     an input device appeared
//   input <eventN> <sec.usec> <type> <code> <value>  one evdev event (linux/input.h numbers)
//   block <name> <512-byte sectors> [iso=<volume id>]  a block device appeared or changed
//   block <name> gone                             a block device disappeared
// Device changes arrive as uevents. CD-ROM media do not (the kernel notices an eject only when
// the drive is opened), so init opens each drive once a second, without forking a process: an
// idle guest costs almost no CPU under TCG.
const INIT = `#!/bin/sh
# The KVM test guest's init (built by scripts/build-guest.mjs).
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
# Whatever init itself prints goes to the serial log; the screen belongs to the shell.
exec > /dev/ttyS0 2>&1
# kvm_media names the medium this kernel came from (rescue.iso sets it); none = the guest's own.
media=$(sed -n 's/.*kvm_media=\\([^ ]*\\).*/\\1/p' /proc/cmdline)
echo "guest init $(uname -r) \${media:-own}"
for m in $(cat /etc/modules); do modprobe "$m" || echo "guest modprobe $m failed"; done
# A medium check must not lock the tray against QMP eject, nor close a tray QEMU opened.
echo 0 > /proc/sys/dev/cdrom/lock
echo 0 > /proc/sys/dev/cdrom/autoclose
# A steady cursor: a blinking one would redraw the screen five times a second for nothing.
echo 0 > /sys/class/graphics/fbcon/cursor_blink
uevent /bin/hotplug &
# Devices that came before the listener (twice: the listener may not be bound yet).
scan() {
  for d in /sys/class/input/event*; do
    [ -e "$d" ] && ACTION=add SUBSYSTEM=input DEVNAME=input/\${d##*/} /bin/hotplug
  done
  for d in /sys/class/block/*; do
    [ -e "$d" ] && ACTION=add SUBSYSTEM=block DEVNAME=\${d##*/} /bin/hotplug
  done
}
scan
(sleep 1; scan) &
# CD-ROM media: open each drive once a second (shell builtins only, no fork while idle).
(
  mkfifo /tmp/tick
  exec 4<> /tmp/tick
  while :; do
    for s in /sys/block/sr*; do
      [ -e "$s" ] || continue
      n=\${s##*/}
      size=0
      true 2>/dev/null < /dev/$n && read size < $s/size
      eval "last=\\$media_$n"
      [ "$size" = "$last" ] && continue
      eval "media_$n=$size"
      ACTION=change SUBSYSTEM=block DEVNAME=$n /bin/hotplug
    done
    read -t 1 x <&4
  done
) &
echo "guest ready"
# Commands on the serial line too (the console's serial tab): each line typed there runs as
# soon as it is complete, with no prompt, banner or line editing, so the serial log keeps one
# fact per line. (A non-interactive sh fed through a pipe would wait for the next line.)
( while :; do
  while IFS= read -r line; do eval "$line"; done < /dev/ttyS0 > /dev/ttyS0 2>&1
done ) &
export PS1='guest# '
while :; do
  setsid -c sh -c 'clear; echo "KVM test guest: type here. Input events and block devices are logged to ttyS0."; exec sh' < /dev/tty1 > /dev/tty1 2>&1
done
`;

/** Run by busybox `uevent` for every kernel uevent, with the uevent's variables. */
const HOTPLUG = `#!/bin/sh
export PATH=/bin
exec > /dev/ttyS0 2>/dev/null
case "$SUBSYSTEM:$ACTION:$DEVNAME" in
input:add:input/event*)
  dev=\${DEVNAME#input/}
  # One reader per device (mkdir is the lock). busybox hexdump buffers its input, so dd reads
  # whatever events are pending (one read() returns whole events) and hexdump formats them.
  mkdir /tmp/input.$dev 2>/dev/null || exit 0
  (
    exec 3< /dev/input/$dev || exit
    name=$(cat /sys/class/input/$dev/device/name)
    echo "input $dev add $name"
    while [ -e /dev/input/$dev ]; do
      batch=$(dd bs=2400 count=1 <&3 2>/dev/null | hexdump -v -e '"input '$dev' " 1/4 "%u." 4/1 "%0.0s" 1/4 "%06u" 4/1 "%0.0s" 1/2 " %u" 1/2 " %u" 1/4 " %d" "\\n"')
      [ -n "$batch" ] && echo "$batch"
      # The ACPI power button (QMP system_powerdown, the ATX short press): power off at once.
      case "$name:$batch" in "Power Button:"*" 1 116 1"*)
        echo "guest poweroff"
        poweroff -f
      esac
    done
    rmdir /tmp/input.$dev
  ) < /dev/null &
  ;;
block:remove:*)
  rm -f /tmp/block.$DEVNAME
  echo "block $DEVNAME gone"
  ;;
block:*:loop*|block:*:ram*) ;;
block:*:?*)
  n=$DEVNAME
  [ -e /sys/class/block/$n/size ] || exit 0
  size=$(cat /sys/class/block/$n/size)
  # Opening a CD-ROM revalidates it (a new medium's size shows up); an empty drive fails with
  # ENOMEDIUM and keeps a stale size.
  case $n in sr*) true 2>/dev/null < /dev/$n && size=$(cat /sys/class/block/$n/size) || size=0 ;; esac
  line="block $n $size"
  if [ "$size" != 0 ] && [ "$(dd if=/dev/$n bs=1 skip=32769 count=5 2>/dev/null)" = CD001 ]; then
    line="$line iso=$(dd if=/dev/$n bs=1 skip=32808 count=32 2>/dev/null | sed 's/ *$//')"
  fi
  [ "$(cat /tmp/block.$n 2>/dev/null)" = "$line" ] && exit 0
  echo "$line" > /tmp/block.$n
  echo "$line"
  ;;
esac
`;

/**
 * `screen`: the text of the screen (tty1), one row per line between two markers, on the serial
 * port. The end-to-end tests type it after typing something else and read back what the guest
 * shows: the console's own text buffer, exactly what is drawn. A last line `screen md5 <hex>`
 * (the md5 of the rows, each ending in a newline) lets a reader tell a dump the serial line
 * garbled (a doubled or lost character) from the screen's text.
 */
const SCREEN = `#!/bin/sh
export PATH=/bin
set -- $(hexdump -n 2 -e '2/1 "%u "' /dev/vcsa1)
fold -w "$2" /dev/vcs1 | sed 's/ *$//' > /tmp/screen.txt
{
  echo "screen begin $1x$2"
  cat /tmp/screen.txt
  echo "screen end"
  echo "screen md5 $(md5sum < /tmp/screen.txt | cut -c1-32)"
} > /dev/ttyS0
`;

/**
 * `pick`: a selection the mouse changes. Four items on text rows 10, 16, 22 and 28 (8x16 font,
 * so pixel rows 144-159, 240-255, 336-351, 432-447 of the 1024x768 screen); a left click of the
 * USB tablet on an item's row selects it, redraws the list and logs "pick selected N" on the
 * serial port; a right click ends it.
 */
const PICK = `#!/bin/sh
export PATH=/bin
dev=
for d in /sys/class/input/event*; do
  case "$(cat $d/device/name)" in *Tablet*) dev=\${d##*/} ;; esac
done
[ -n "$dev" ] || { echo "pick: no tablet"; exit 1; }
sel=0
draw() {
  printf '\\033[2J'
  for i in 1 2 3 4; do
    printf '\\033[%d;1H' $((4 + 6 * i))
    if [ $i = $sel ]; then echo "    [x] item $i"; else echo "    [ ] item $i"; fi
  done
  printf '\\033[40;1Hclick an item (right click ends)'
}
draw
echo "pick ready $dev" > /dev/ttyS0
exec 3< /dev/input/$dev
y=0
while :; do
  dd bs=2400 count=1 <&3 2>/dev/null | hexdump -v -e '16/1 "%0.0s" 1/2 "%u " 1/2 "%u " 1/4 "%d" "\\n"'
done | while read type code value; do
  case "$type:$code" in
  3:1) y=$value ;;
  1:272)
    [ "$value" = 1 ] || continue
    row=$((y * 768 / 32768 / 16 + 1))
    for i in 1 2 3 4; do
      [ $row = $((4 + 6 * i)) ] || continue
      sel=$i
      draw
      echo "pick selected $sel" > /dev/ttyS0
    done
    ;;
  1:273) [ "$value" = 1 ] && { printf '\\033[2J\\033[1;1H'; echo "pick done" > /dev/ttyS0; kill 0; } ;;
  esac
done
`;

/**
 * Sound, on the card QEMU's intel-hda + hda-duplex give the guest (docs/drivers.md). Each
 * prints its lines on the serial port wherever it was typed; each blocks until done (type
 * `tone 1000 62 &` to go on typing).
 * - `tone [hz=1000] [seconds=3]` (up to 120 s): a sine on both channels at -6 dBFS; prints
 *   `tone start <hz>` just before its first sample is written, `tone end` once it has played.
 * - `hear <hz> [seconds=10]`: records until <hz> is present in a 20 ms window (Goertzel level
 *   over -40 dBFS holding most of the window's energy): `heard <hz>` then `hear end`, or
 *   `hear none` when it never came.
 * - `listen [seconds=1]`: records, then `listen <dominant hz> <rms 0..1>`; silence is hz 0.
 */
const SOUND = {
  tone: `#!/bin/sh\nexec /bin/snd tone "\${1:-1000}" "\${2:-3}" > /dev/ttyS0 2>&1\n`,
  hear: `#!/bin/sh\nexec /bin/snd hear "$1" "\${2:-10}" > /dev/ttyS0 2>&1\n`,
  listen: `#!/bin/sh\nexec /bin/snd listen "\${1:-1}" > /dev/ttyS0 2>&1\n`,
};

/** The sound helper, statically linked: the guest has no C library. */
function buildSnd(out) {
  if (!existsSync('/usr/bin/gcc')) throw new Error('gcc missing: apt-get install gcc libc6-dev');
  run('gcc', ['-static', '-O2', '-Wall', '-o', out, sndSource, '-lm']);
}

const OUTPUTS = ['vmlinux', 'vmlinuz', 'initrd.img', 'guest.iso', 'rescue.iso'];

function log(msg) {
  if (!quiet) console.log(`build-guest: ${msg}`);
}

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20, ...opts });
  if (r.error) throw new Error(`${cmd}: ${r.error.message}`);
  if (r.status !== 0) {
    throw new Error(`'${cmd} ${args.join(' ')}' failed (exit ${r.status}): ${r.stderr ?? ''}`);
  }
  return r.stdout ?? '';
}

function upToDate() {
  try {
    const manifest = JSON.parse(readFileSync(join(outDir, 'guest.json'), 'utf8'));
    if (manifest.scriptHash !== scriptHash) return false;
    return OUTPUTS.every((f) => statSync(join(outDir, f)).size > 0);
  } catch {
    return false;
  }
}

const aptOpts = () =>
  // As root apt drops to the _apt user for downloads, which cannot write to our cache folder.
  process.getuid?.() === 0 ? ['-o', 'APT::Sandbox::User=root'] : [];

/** `apt-cache` or `apt-get download`, with one `apt-get update` if the lists are missing. */
function withAptLists(fn) {
  try {
    return fn();
  } catch (err) {
    log(`apt-get update (${err.message.split('\n')[0]})`);
    run('apt-get', ['update', '-qq']);
    return fn();
  }
}

/** The versioned kernel package the `linux-image-amd64` meta package points at. */
function kernelPackage() {
  return withAptLists(() => {
    const out = run('apt-cache', ['depends', '--important', 'linux-image-amd64']);
    const m = /Depends:\s*(linux-image-[\w.+-]+)/.exec(out);
    if (!m) throw new Error('no kernel package behind linux-image-amd64');
    return m[1];
  });
}

/** The cached .deb of `pkg`, downloaded on first use. */
function fetchDeb(pkg) {
  mkdirSync(debDir, { recursive: true });
  const find = () => readdirSync(debDir).find((f) => f.startsWith(`${pkg}_`) && f.endsWith('.deb'));
  let file = find();
  if (!file) {
    log(`apt-get download ${pkg}`);
    withAptLists(() => run('apt-get', ['download', '-qq', ...aptOpts(), pkg], { cwd: debDir }));
    file = find();
    if (!file) throw new Error(`apt-get download ${pkg} left no .deb`);
  }
  return join(debDir, file);
}

/**
 * The uncompressed ELF kernel inside a bzImage. Debian compresses with xz, and xz under TCG
 * costs about 4.5 s of every boot; QEMU boots the ELF directly through its PVH entry point.
 * The payload's place is in the setup header (Documentation/x86/boot.rst).
 */
function extractVmlinux(bzImage, out) {
  const image = readFileSync(bzImage);
  if (image.toString('latin1', 0x202, 0x206) !== 'HdrS') throw new Error('not a bzImage');
  const setupSects = image[0x1f1] || 4;
  const start = (setupSects + 1) * 512 + image.readUInt32LE(0x248);
  const payload = image.subarray(start, start + image.readUInt32LE(0x24c));
  if (payload.readUInt32BE(0) !== 0xfd377a58) throw new Error('kernel payload is not xz');
  const r = spawnSync('xz', ['-dc', '--single-stream'], { input: payload, maxBuffer: 1 << 30 });
  if (r.status !== 0) throw new Error(`xz failed: ${r.error?.message ?? r.stderr}`);
  if (r.stdout.readUInt32BE(0) !== 0x7f454c46) throw new Error('kernel payload is not ELF');
  writeFileSync(out, r.stdout);
}

/** Every `*.ko` under `dir`, by module name (`-` and `_` are the same to the kernel). */
function indexModules(dir, index = new Map()) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, e.name);
    if (e.isDirectory()) indexModules(full, index);
    else if (e.name.endsWith('.ko')) index.set(e.name.slice(0, -3).replaceAll('-', '_'), full);
  }
  return index;
}

/** The `depends=` field of a module's .modinfo section (NUL-separated key=value strings). */
function moduleDepends(path) {
  const text = readFileSync(path).toString('latin1');
  const m = /\0depends=([^\0]*)\0/.exec(text);
  return m?.[1] ? m[1].split(',').map((n) => n.replaceAll('-', '_')) : [];
}

/** The wanted modules and their dependencies, dependencies first. */
function resolveModules(index, wanted) {
  const order = [];
  const deps = new Map();
  const visit = (name, chain) => {
    if (deps.has(name)) return;
    if (chain.includes(name)) throw new Error(`module dependency loop: ${chain.join(' > ')}`);
    const path = index.get(name);
    if (!path) throw new Error(`kernel module ${name} not found (built in? then drop it)`);
    const d = moduleDepends(path);
    for (const dep of d) visit(dep, [...chain, name]);
    deps.set(name, d);
    order.push(name);
  };
  for (const name of wanted) visit(name, []);
  return { order, deps };
}

// ---- newc cpio, written here so the host needs no `cpio` --------------------------------------

class Cpio {
  chunks = [];
  ino = 1;
  entry(name, mode, data = Buffer.alloc(0), rdev = [0, 0]) {
    const fields = [
      this.ino++,
      mode,
      0, // uid
      0, // gid
      (mode & 0o170000) === 0o040000 ? 2 : 1, // nlink
      0, // mtime: reproducible output
      data.length,
      0, // devmajor
      0, // devminor
      rdev[0],
      rdev[1],
      Buffer.byteLength(name) + 1,
      0, // check
    ];
    const header = '070701' + fields.map((f) => f.toString(16).padStart(8, '0')).join('');
    this.push(Buffer.from(`${header}${name}\0`, 'latin1'));
    this.push(data);
  }
  push(buf) {
    this.chunks.push(buf);
    this.size = (this.size ?? 0) + buf.length;
    const pad = (4 - (this.size % 4)) % 4;
    if (pad) {
      this.chunks.push(Buffer.alloc(pad));
      this.size += pad;
    }
  }
  dir(name) {
    this.entry(name, 0o040755);
  }
  file(name, data, perm = 0o644) {
    this.entry(name, 0o100000 | perm, data);
  }
  symlink(name, target) {
    this.entry(name, 0o120777, Buffer.from(target));
  }
  charDev(name, major, minor) {
    this.entry(name, 0o020600, Buffer.alloc(0), [major, minor]);
  }
  finish() {
    this.entry('TRAILER!!!', 0);
    return Buffer.concat(this.chunks);
  }
}

function buildInitramfs(kernelRoot, kernelVersion, busybox, snd) {
  const modRoot = join(kernelRoot, 'lib', 'modules', kernelVersion);
  const index = indexModules(join(modRoot, 'kernel'));
  const { order, deps } = resolveModules(index, MODULES);
  const cpio = new Cpio();
  for (const d of ['bin', 'dev', 'etc', 'lib', 'lib/modules', 'proc', 'sys', 'tmp', 'root']) {
    cpio.dir(d);
  }
  // The kernel opens /dev/console before /init runs, so it must exist before devtmpfs.
  cpio.charDev('dev/console', 5, 1);
  cpio.file('bin/busybox', readFileSync(busybox), 0o755);
  cpio.symlink('bin/sh', 'busybox');
  cpio.file('init', Buffer.from(INIT), 0o755);
  cpio.file('bin/hotplug', Buffer.from(HOTPLUG), 0o755);
  cpio.file('bin/screen', Buffer.from(SCREEN), 0o755);
  cpio.file('bin/pick', Buffer.from(PICK), 0o755);
  cpio.file('bin/snd', readFileSync(snd), 0o755);
  for (const [name, text] of Object.entries(SOUND))
    cpio.file(`bin/${name}`, Buffer.from(text), 0o755);
  cpio.file('etc/modules', Buffer.from(MODULES.join('\n') + '\n'));
  // modules.dep as depmod writes it (the .deb has none: its postinst runs depmod).
  const rel = (name) => relative(modRoot, index.get(name));
  const made = new Set([`lib/modules`]);
  const mkdirs = (path) => {
    const parts = path.split('/');
    for (let i = 1; i < parts.length; i++) {
      const p = parts.slice(0, i).join('/');
      if (!made.has(p)) {
        made.add(p);
        cpio.dir(p);
      }
    }
  };
  const base = `lib/modules/${kernelVersion}`;
  const depLines = [];
  for (const name of order) {
    const target = `${base}/${rel(name)}`;
    mkdirs(target);
    cpio.file(target, readFileSync(index.get(name)));
    // Dependencies as depmod lists them: modprobe loads from the end of the list backwards.
    const closure = new Set();
    const walk = (n) => {
      for (const d of deps.get(n) ?? []) {
        if (!closure.has(d)) {
          closure.add(d);
          walk(d);
        }
      }
    };
    walk(name);
    const loadOrder = order.filter((n) => closure.has(n)).map(rel);
    depLines.push(
      `${rel(name)}:${loadOrder
        .reverse()
        .map((c) => ` ${c}`)
        .join('')}`,
    );
  }
  cpio.file(`${base}/modules.dep`, Buffer.from(depLines.join('\n') + '\n'));
  for (const f of ['modules.builtin', 'modules.order']) {
    if (existsSync(join(modRoot, f))) cpio.file(`${base}/${f}`, readFileSync(join(modRoot, f)));
  }
  return { image: gzipSync(cpio.finish(), { level: 9 }), modules: order };
}

/**
 * The second ISO, `rescue.iso`: the same guest, volume id KVM_RESCUE and `kvm_media=rescue` on
 * its kernel command line, so a test that mounts it as a CD-ROM and resets the VM can tell from
 * the serial log that the VM booted from the mounted medium (`guest init <release> rescue`).
 */
const RESCUE = { volumeId: 'KVM_RESCUE', media: 'rescue' };

function buildIso(stage, iso, volumeId = 'KVM_GUEST', extraCmdline = '') {
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

function main() {
  if (!force && upToDate()) return;
  const started = performance.now();
  for (const tool of ['xorriso', 'xz']) {
    if (!existsSync(`/usr/bin/${tool}`)) {
      throw new Error(`${tool} missing: apt-get install xorriso xz-utils isolinux syslinux-common`);
    }
  }
  const kernelPkg = kernelPackage();
  const kernelDeb = fetchDeb(kernelPkg);
  const busyboxDeb = fetchDeb('busybox-static');
  rmSync(workDir, { recursive: true, force: true });
  mkdirSync(workDir, { recursive: true });
  const kroot = join(workDir, 'kernel');
  const broot = join(workDir, 'busybox');
  log(`unpacking ${basename(kernelDeb)}`);
  run('dpkg-deb', ['-x', kernelDeb, kroot]);
  run('dpkg-deb', ['-x', busyboxDeb, broot]);
  const versions = readdirSync(join(kroot, 'lib', 'modules'));
  if (versions.length !== 1) throw new Error(`expected one kernel in ${kernelDeb}: ${versions}`);
  const kernelVersion = versions[0];

  const snd = join(workDir, 'snd');
  buildSnd(snd);
  const { image, modules } = buildInitramfs(
    kroot,
    kernelVersion,
    join(broot, 'bin', 'busybox'),
    snd,
  );
  const stage = join(workDir, 'iso');
  mkdirSync(stage, { recursive: true });
  copyFileSync(join(kroot, 'boot', `vmlinuz-${kernelVersion}`), join(stage, 'vmlinuz'));
  extractVmlinux(join(stage, 'vmlinuz'), join(workDir, 'vmlinux'));
  writeFileSync(join(stage, 'initrd.img'), image);
  buildIso(stage, join(workDir, 'guest.iso'));
  buildIso(stage, join(workDir, 'rescue.iso'), RESCUE.volumeId, ` kvm_media=${RESCUE.media}`);

  // Outputs replace the old ones by rename; guest.json last, so it only names a whole set.
  rmSync(join(outDir, 'guest.json'), { force: true });
  renameSync(join(stage, 'vmlinuz'), join(outDir, 'vmlinuz'));
  renameSync(join(workDir, 'vmlinux'), join(outDir, 'vmlinux'));
  renameSync(join(stage, 'initrd.img'), join(outDir, 'initrd.img'));
  renameSync(join(workDir, 'guest.iso'), join(outDir, 'guest.iso'));
  renameSync(join(workDir, 'rescue.iso'), join(outDir, 'rescue.iso'));
  const manifest = {
    scriptHash,
    kernelVersion,
    kernelPackage: basename(kernelDeb),
    busyboxPackage: basename(busyboxDeb),
    cmdline: CMDLINE,
    modules,
    sizes: Object.fromEntries(OUTPUTS.map((f) => [f, statSync(join(outDir, f)).size])),
    buildMs: Math.round(performance.now() - started),
  };
  writeFileSync(join(outDir, 'guest.json'), JSON.stringify(manifest, null, 2) + '\n');
  chmodSync(join(outDir, 'guest.iso'), 0o644);
  chmodSync(join(outDir, 'rescue.iso'), 0o644);
  rmSync(workDir, { recursive: true, force: true });
  log(
    `built ${kernelVersion} guest in ${(manifest.buildMs / 1000).toFixed(1)} s ` +
      `(initrd ${(image.length / 1e6).toFixed(1)} MB, iso ${(manifest.sizes['guest.iso'] / 1e6).toFixed(1)} MB)`,
  );
}

try {
  main();
} catch (err) {
  console.error(`build-guest: ${err.message}`);
  process.exit(1);
}

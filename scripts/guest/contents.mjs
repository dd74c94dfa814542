// What the QEMU test guest is made of, apart from the kernel and busybox: the kernel command
// line, the modules it loads, its /init and the small programs the end-to-end tests type
// (scripts/build-guest.mjs puts them in the initramfs; docs/drivers.md, QEMU target).

/**
 * The kernel command line, the same for direct boot and the ISO.
 * - console=ttyS0 console=tty1: kernel errors on both; the last one (tty1) is /dev/console.
 * - no `video=`: the bochs DRM driver (QEMU's `VGA`) switches the screen from the BIOS's
 *   720x400 text mode to the preferred mode of the VGA's EDID (`xres`/`yres`, 1024x768 unless
 *   an EDID was applied: server drivers/qemu/display.ts) when init loads it.
 * - consoleblank=0: the screen never blanks (the e2e reads it at any time).
 */
export const CMDLINE = [
  'console=ttyS0',
  'console=tty1',
  'quiet',
  'loglevel=3',
  'consoleblank=0',
].join(' ');

/** Modules loaded at boot (with their dependencies from the modules' own `depends=`). */
export const MODULES = [
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
export const INIT = `#!/bin/sh
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
export const HOTPLUG = `#!/bin/sh
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
export const SCREEN = `#!/bin/sh
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
export const PICK = `#!/bin/sh
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
export const SOUND = {
  tone: `#!/bin/sh\nexec /bin/snd tone "\${1:-1000}" "\${2:-3}" > /dev/ttyS0 2>&1\n`,
  hear: `#!/bin/sh\nexec /bin/snd hear "$1" "\${2:-10}" > /dev/ttyS0 2>&1\n`,
  listen: `#!/bin/sh\nexec /bin/snd listen "\${1:-1}" > /dev/ttyS0 2>&1\n`,
};

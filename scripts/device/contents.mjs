// What the device VM is made of apart from the kernel, busybox and node (scripts/build-device-vm.mjs
// puts it in the initramfs): the kernel command line, the modules /init loads, /init itself, the
// power-off script and the server's config. docs/hardware.md, "The device VM".

/** Where things live inside the VM. */
export const VM = {
  /** The checkout's files the server reads (REPO_ROOT of server/src/paths.ts). */
  app: '/app',
  /** The data disk's mount point: the server's data folder (`--data`). */
  data: '/data',
  /** The server's https port inside (QEMU forwards a loopback port of the host to it). */
  port: 8443,
  /** The observer's serial port (the second 16550; ttyS0 is the console). */
  observerTty: '/dev/ttyS1',
};

/**
 * The kernel command line.
 * - console=ttyS0: kernel and /init lines (and the server's log) go to the host's log file.
 * - panic=-1: a panic reboots at once, and QEMU's -no-reboot turns that into QEMU's exit.
 * - kvm_target: the server's --target (scripts/device-vm.mjs --target overrides it).
 * - kvm_webrtc_ports=MIN-MAX (with `webrtcPorts`): the UDP ports QEMU forwards from the host's
 *   loopback, same numbers; /init gives them to the server as `webrtc.port_range` with
 *   `webrtc.nat_1to1_ips: [127.0.0.1]`, so a browser on the host reaches its WebRTC
 *   (docs/webrtc.md "Behind a 1:1 NAT").
 * @param {string} [target]
 * @param {readonly [number, number] | null} [webrtcPorts]
 */
export const cmdline = (target = 'gadget', webrtcPorts = null) =>
  [
    'console=ttyS0',
    'quiet',
    'loglevel=4',
    'panic=-1',
    `kvm_target=${target}`,
    ...(webrtcPorts ? [`kvm_webrtc_ports=${webrtcPorts[0]}-${webrtcPorts[1]}`] : []),
  ].join(' ');

/**
 * Modules /init loads with insmod, dependencies first (scripts/guest/kernel.mjs resolves them from
 * the modules' own `depends=`). All are `=m` in Debian's 6.1 kernel.
 */
export const MODULES = [
  // The gadget side: configfs, libcomposite and its functions, and the UDC dummy_hcd makes.
  'configfs',
  'libcomposite',
  'usb_f_hid',
  'usb_f_mass_storage',
  'dummy_hcd',
  // The host side of the same kernel: HID, input events, USB drives and CD-ROMs.
  'usbhid',
  'hid_generic',
  'evdev',
  'usb_storage',
  'sd_mod',
  'sr_mod',
  'cdrom',
  'isofs',
  // issue 24: HDMI capture played by vivid (V4L2 with DV timings, EDID, signal controls).
  'vivid',
  // issue 24: the gadget's UAC2 sound card, and the host side's USB audio driver that sees it.
  'usb_f_uac2',
  'snd_usb_audio',
  // issue 24: the gadget's UVC webcam, and the host side's driver that captures from it.
  'usb_f_uvc',
  'uvcvideo',
  // QEMU's virtio devices: the data disk (ext4) and the network.
  'virtio_pci',
  'virtio_blk',
  'virtio_net',
  // ext4 asks the crypto API for crc32c by name (not a `depends=`): load it first.
  'crc32c_generic',
  'ext4',
];

/**
 * Module parameters /init passes to insmod (a module not named here gets none).
 * - vivid: one instance with only a video capture node (/dev/video0, made before any USB video
 *   device) whose one input is HDMI (input type 3), so it has DV timings, an EDID and the
 *   "DV Timings Signal Mode" control (Documentation/admin-guide/media/vivid.rst); no crop,
 *   compose or scaler (ccs_cap_mode=0), so its format is its DV timings' size, as an HDMI bridge's
 *   (vivid's default scales to whatever size the reader asks).
 */
export const MODULE_PARAMS = {
  vivid: 'n_devs=1 node_types=0x1 num_inputs=1 input_types=0x3 ccs_cap_mode=0',
};

/**
 * The simulated GPIO chip (gpio-sim, built by scripts/device/gpio-sim.mjs) /init makes through
 * configfs before the server starts: one bank labelled `kvm-atx` whose named lines the server's
 * `atx.gpio` drives and reads, and the observer watches and pulls (issue 24).
 */
export const GPIO_SIM = {
  chip: 'kvm-atx',
  lines: ['atx-power-button', 'atx-reset-button', 'atx-power-led', 'atx-hdd-led'],
};

/** The server's config inside the VM (the gadget section's defaults fit dummy_hcd). */
export const SERVER_CONFIG = `# The device VM's server config (scripts/device/contents.mjs).
# Tests never reach the internet: the VM reaches nothing (-nic restrict=on), or with WebRTC
# ports only its subnet (no default route; /init adds webrtc.port_range and nat_1to1_ips here).
webrtc:
  stun_url: null
# busybox's shell: the VM has no bash.
terminal:
  shell: /bin/sh
  args: [-l]
# Under TCG on a loaded machine the VM's own USB host side stalls for over 500 ms at times (a
# key write timed out while typing "Hello, World!" at host load 7, and the keys behind it were
# dropped as from a host that stopped polling); a real host polls every 1-10 ms.
gadget:
  hid_write_timeout_ms: 3000
# libx264 under TCG on a loaded machine encodes 2-7 frames a second at 640x480 and its first
# frame took over 5 s: the default stall check killed it again and again (issue 24).
video:
  encoder_stall_ms: 30000
# ATX over GPIO on the simulated chip /init makes (GPIO_SIM): its lines by name.
atx:
  gpio:
    chip: ${GPIO_SIM.chip}
    power_button: { line: ${GPIO_SIM.lines[0]} }
    reset_button: { line: ${GPIO_SIM.lines[1]} }
    power_led: { line: ${GPIO_SIM.lines[2]} }
    hdd_led: { line: ${GPIO_SIM.lines[3]} }
`;

/**
 * /init (busybox sh). Prints `device-vm init`, loads the modules, brings up the network with
 * slirp's fixed address, mounts the data disk at the data folder, starts the observer on ttyS1
 * and the server under its launcher. The observer prints `server ready` when the server answers.
 */
export const INIT = `#!/bin/sh
# The device VM's init (built by scripts/build-device-vm.mjs).
/bin/busybox --install -s /bin
export PATH=/usr/bin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec >/dev/ttyS0 2>&1 </dev/null
echo "device-vm init $(uname -r) at $(cut -d' ' -f1 /proc/uptime) s"
mkdir -p /dev/pts /dev/shm /tmp /run ${VM.data}
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
for m in $(cat /etc/modules); do
  case $m in
${Object.entries(MODULE_PARAMS)
  .map(([m, p]) => `    ${m}) args='${p}' ;;`)
  .join('\n')}
    *) args='' ;;
  esac
  insmod /lib/modules/$m.ko $args || echo "device-vm: insmod $m failed"
done
mount -t configfs configfs /sys/kernel/config || echo "device-vm: configfs not mounted"
# The HDMI source starts at 640x480p59 (vivid's own start is 1280x720p60): TCG encodes that
# size in time for the encoder's stall check on a loaded machine (docs/hardware.md "Capture").
v4l2-ctl -d /dev/video0 -c dv_timings_signal_mode=4,dv_timings=0 || echo "device-vm: vivid timings not set"
# The simulated GPIO chip of ATX over GPIO, named lines, before the server starts.
sim=/sys/kernel/config/gpio-sim/${GPIO_SIM.chip}
if mkdir $sim $sim/bank0 2>/dev/null; then
  echo ${GPIO_SIM.chip} > $sim/bank0/label
  echo ${GPIO_SIM.lines.length} > $sim/bank0/num_lines
  i=0
  for n in ${GPIO_SIM.lines.join(' ')}; do
    mkdir $sim/bank0/line$i && echo $n > $sim/bank0/line$i/name
    i=$((i + 1))
  done
  echo 1 > $sim/live && echo "device-vm: gpio-sim $(cat $sim/bank0/chip_name) ($(cat $sim/dev_name))" \\
    || echo "device-vm: gpio-sim chip not live"
else
  echo "device-vm: no gpio-sim"
fi
# CD-ROM and removable media changes are seen only when the kernel polls the drive.
echo 500 > /sys/module/block/parameters/events_dfl_poll_msecs
hostname device-vm
ip link set lo up
webrtc_ports=$(sed -n 's/.*kvm_webrtc_ports=\\([0-9]*-[0-9]*\\).*/\\1/p' /proc/cmdline)
# With WebRTC ports QEMU's slirp cannot be restricted (it drops every UDP packet a restricted
# guest sends, replies to forwarded ports too): no default route then, the VM reaches its subnet
# (the host's loopback as 10.0.2.2) and nothing beyond.
if [ -n "$webrtc_ports" ]; then route=true; else route='ip route add default via 10.0.2.2'; fi
ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 && $route || echo "device-vm: no network"
if mount -t ext4 /dev/vda ${VM.data}; then
  echo "device-vm: data disk mounted at ${VM.data}"
else
  echo "device-vm: no data disk: ${VM.data} is in memory"
fi
# One machine id per data disk, as a board keeps its own.
[ -s ${VM.data}/.machine-id ] || cat /proc/sys/kernel/random/uuid | tr -d - > ${VM.data}/.machine-id
cp ${VM.data}/.machine-id /etc/machine-id
target=$(sed -n 's/.*kvm_target=\\([^ ]*\\).*/\\1/p' /proc/cmdline)
cd ${VM.app}
# The server first (it is the boot's critical path); the observer reports devices that were
# there before it started as added, so it loses nothing by starting second.
config=${VM.app}/device/config.yaml
if [ -n "$webrtc_ports" ]; then
  # the forwarded ports, announced as the host's loopback (QEMU maps them 1:1)
  awk -v r="$webrtc_ports" '{ print } /^webrtc:$/ { print "  port_range: " r; print "  nat_1to1_ips: [127.0.0.1]" }' \\
    $config > /run/config.yaml && config=/run/config.yaml
  echo "device-vm: WebRTC on UDP $webrtc_ports, announced as 127.0.0.1"
fi
HOME=/root SHELL=/bin/sh node ${VM.app}/server/dist/launcher.js --target \${target:-gadget} \\
  --data ${VM.data} --config $config &
echo $! > /run/server.pid
echo "device-vm: server started (target \${target:-gadget}, pid $!)"
stty -F ${VM.observerTty} raw -echo 115200
UV_THREADPOOL_SIZE=32 node ${VM.app}/device/observer.mjs ${VM.observerTty} &
# PID 1 stays, reaping whatever ends (ash's wait collects any child).
while :; do sleep 3600 & wait $!; done
`;

/** Powers the VM off cleanly: the server stopped, the data disk synced and unmounted. */
export const POWEROFF = `#!/bin/sh
echo "device-vm: powering off"
pid=$(cat /run/server.pid 2>/dev/null)
if [ -n "$pid" ]; then
  kill -TERM "$pid" 2>/dev/null
  i=0
  # Until it is gone or a zombie (init reaps it later).
  while [ $i -lt 100 ] && [ -e /proc/$pid/status ] && ! grep -q '^State:.*Z' /proc/$pid/status; do
    sleep 0.1
    i=$((i + 1))
  done
  kill -KILL "$pid" 2>/dev/null
fi
sync
umount ${VM.data} 2>/dev/null || mount -o remount,ro ${VM.data} 2>/dev/null
echo "device-vm: off"
poweroff -f
`;

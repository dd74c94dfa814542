#!/usr/bin/env node
// Makes a fresh Debian 12 checkout ready for `npm start` or `npm test`, and is quick and silent
// when everything is already there: Debian packages with apt-get when missing, `npm ci` when
// package-lock.json changed, a build when a source changed, the QEMU target's guest image
// (scripts/build-guest.mjs) when it is missing or its script changed.
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const mode = process.argv[2] ?? 'start';

/**
 * Debian packages each command needs. The QEMU target: qemu-system-x86 (its SPICE module comes
 * with it), ffmpeg for the encoder; the guest build: xz-utils (unpacks the kernel),
 * xorriso + isolinux + syslinux-common (the ISO). The guest's kernel and busybox-static are
 * only downloaded (`apt-get download`), never installed. Keymaps (paste, virtual keyboard):
 * qemu-system-data ships 34 in QEMU's format, xkb-data the layout en-us-altgr-intl is built from,
 * x11proto-dev the keysym names (keysymdef.h) the server reads.
 */
const QEMU_TARGET = [
  'qemu-system-x86',
  'ffmpeg',
  'xz-utils',
  'xorriso',
  'isolinux',
  'syslinux-common',
  'qemu-system-data',
  'xkb-data',
  'x11proto-dev',
];
/**
 * The apps center's WireGuard app (docs/apps.md): wireguard-go (the userspace tunnel: no kernel
 * module can be loaded here), wireguard-tools' `wg`, and nftables for a full tunnel's reply
 * policy (its tests' stand-in Internet router masquerades with it too).
 */
const APPS = ['wireguard-go', 'wireguard-tools', 'nftables'];
/**
 * Device administration on the developer targets (docs/system.md): iproute2 for the network
 * namespaces, dnsmasq-base as the LAN's DHCP and DNS server, udhcpc as the device's DHCP client,
 * tzdata for the time zones, hwdata for usb.ids (the device identity presets' vendors).
 */
// edid-decode: the EDID presets' conformity test (server edid-service.test.ts).
const SYSTEM = ['iproute2', 'dnsmasq-base', 'udhcpc', 'tzdata', 'hwdata', 'edid-decode', ...APPS];
/**
 * OCR of the remote screen (docs/api.md "OCR"): the tesseract command and its English data;
 * its tests draw known text with DejaVu Sans Mono (fonts-dejavu-core).
 */
const OCR = ['tesseract-ocr', 'tesseract-ocr-eng'];
/**
 * Sound on the QEMU target (docs/drivers.md "Audio (QEMU)"): pulseaudio, the sound server the
 * server starts per data folder; qemu-system-gui, where QEMU's `pa` audio backend lives; gcc +
 * libc6-dev, the guest's static sound helper (scripts/guest/snd.c).
 */
const AUDIO = ['pulseaudio', 'qemu-system-gui', 'gcc', 'libc6-dev'];
/**
 * The device VM (scripts/build-device-vm.mjs, docs/hardware.md): mke2fs makes its data disk;
 * util-linux's setpriv and prlimit are copied into it with node and openssl; so are v4l-utils'
 * v4l2-ctl (DV timings, EDID), gpiod's tools (ATX over GPIO) and alsa-utils' arecord and aplay.
 */
// gpio-sim's out-of-tree build (scripts/device/gpio-sim.mjs): make and kmod's modinfo; the
// kernel's own linux-headers-<abi> is installed by that build, matching the VM's kernel.
const DEVICE_VM = ['e2fsprogs', 'util-linux', 'v4l-utils', 'gpiod', 'alsa-utils', 'make', 'kmod'];
/**
 * The fleet server's engines (docs/cloud.md, `npm run cloud` and its tests): PostgreSQL 15,
 * NATS and coturn, each started by the project on loopback, never by the packages' services.
 */
const CLOUD = ['postgresql-15', 'nats-server', 'coturn'];
const PACKAGES = {
  cloud: ['openssl', 'ca-certificates', ...CLOUD],
  start: ['openssl', 'ca-certificates', ...QEMU_TARGET, ...SYSTEM, ...OCR, ...AUDIO],
  test: [
    'openssl',
    'ca-certificates',
    'chromium',
    'fonts-noto-cjk',
    ...QEMU_TARGET,
    ...SYSTEM,
    ...OCR,
    ...AUDIO,
    'fonts-dejavu-core',
    ...DEVICE_VM,
    ...CLOUD,
  ],
};

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', cwd: root, ...opts });
  if (r.status !== 0) {
    console.error(`bootstrap: '${cmd} ${args.join(' ')}' failed (exit ${r.status})`);
    process.exit(r.status ?? 1);
  }
}

function missingPackages(names) {
  return names.filter((name) => {
    const r = spawnSync('dpkg-query', ['-W', '-f=${Status}', name], { encoding: 'utf8' });
    return r.status !== 0 || !r.stdout.includes('install ok installed');
  });
}

function ensurePackages() {
  if (!existsSync('/usr/bin/dpkg-query')) return; // not Debian: the README lists what to install
  const missing = missingPackages(PACKAGES[mode] ?? PACKAGES.start);
  if (missing.length === 0) return;
  if (process.getuid?.() !== 0) {
    console.error(
      `bootstrap: missing Debian packages: ${missing.join(' ')}; install them as root.`,
    );
    process.exit(1);
  }
  console.log(`bootstrap: installing ${missing.join(' ')}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  run('apt-get', ['update', '-qq'], { env });
  run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing], { env });
}

function hashFile(path) {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

function ensureModules() {
  const stamp = join(root, 'node_modules', '.kvm-lock-hash');
  const want = hashFile(join(root, 'package-lock.json'));
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === want) return;
  console.log('bootstrap: npm ci');
  run('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error']);
  writeFileSync(stamp, want);
}

/** Size and mtime of every source the build reads: cheap, and changes whenever a file does. */
function sourceStamp() {
  const h = createHash('sha256');
  const walk = (dir) => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      if (e.name === 'node_modules' || e.name === 'dist') continue;
      const full = join(dir, e.name);
      if (e.isDirectory()) walk(full);
      else {
        const s = statSync(full);
        h.update(`${full}:${s.size}:${s.mtimeMs}\n`);
      }
    }
  };
  for (const d of ['protocol/src', 'server/src', 'fleet/src', 'web/src', 'web/public'])
    walk(join(root, d));
  for (const f of [
    'web/index.html',
    'web/vite.config.ts',
    'web/fleet.html',
    'web/vite.fleet.config.ts',
    'package-lock.json',
    'package.json',
    'scripts/build.mjs',
  ]) {
    const full = join(root, f);
    if (existsSync(full)) h.update(`${f}:${statSync(full).mtimeMs}\n`);
  }
  return h.digest('hex');
}

function ensureBuild() {
  const stampPath = join(root, 'server', 'dist', '.build-stamp');
  const want = sourceStamp();
  const built = [
    'server/dist/main.js',
    'web/dist/index.html',
    'fleet/dist/main.js',
    'fleet/dist/www/index.html',
  ].every((f) => existsSync(join(root, f)));
  if (built && existsSync(stampPath) && readFileSync(stampPath, 'utf8') === want) return;
  console.log('bootstrap: building');
  run('node', ['scripts/build.mjs', '--quiet']);
  writeFileSync(stampPath, want);
}

/** The QEMU guest image in .cache/guest/ (the script is quick and silent when it is built). */
function ensureGuest() {
  run(process.execPath, ['scripts/build-guest.mjs']);
}

/** The keymap QEMU does not ship (en-us-altgr-intl) in .cache/keymaps/; quick when current. */
function ensureKeymaps() {
  run(process.execPath, ['scripts/build-keymaps.mjs']);
}

/**
 * The device VM's kernel and initramfs in .cache/device-vm/ (the gadget target's e2e boots it);
 * quick when current. After the build and the keymaps: the image holds both.
 */
function ensureDeviceVm() {
  if (mode === 'test') run(process.execPath, ['scripts/build-device-vm.mjs', '--quiet']);
}

ensurePackages();
ensureModules();
ensureBuild();
ensureGuest();
ensureKeymaps();
ensureDeviceVm();

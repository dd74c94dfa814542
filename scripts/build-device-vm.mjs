#!/usr/bin/env node
// Builds the device VM (issue 23, docs/hardware.md "The device VM"): Debian's kernel (the QEMU
// guest's, scripts/build-guest.mjs) booted under QEMU with an initramfs that holds node, our
// server, the console and the observer; dummy_hcd plugs the server's USB gadget into the same
// kernel's host side. The initramfs is two newc archives one after the other (the kernel unpacks
// them in turn), each rebuilt only when its inputs change:
//   base.cpio  busybox-static, the kernel modules (scripts/device/contents.mjs) with their
//              dependencies, /usr/bin/node and openssl with exactly the libraries ldd lists, and
//              the data the server reads from the system (usb.ids, zoneinfo, QEMU's keymaps).
//   app.cpio   server/dist, web/dist, package.json, node-pty (native, built for this node), the
//              checkout's keymaps, /init, the observer and the server's config.
//
// Output in .cache/device-vm/: vmlinux, initrd.img (base.cpio + app.cpio), device-vm.json (what
// went in: kernel, modules, sizes, the inputs' hashes). Quick and silent when up to date (a hash
// of the inputs). Options: --force (rebuild both parts), --quiet (no progress lines).
import { createHash } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { INIT, MODULES, POWEROFF, SERVER_CONFIG, VM, cmdline } from './device/contents.mjs';
import { GPIO_SIM_MODULE, buildGpioSim } from './device/gpio-sim.mjs';
import { buildNative } from './build-native.mjs';
import { DUMMY_HCD_ISO, buildDummyHcdIso } from './device/dummy-hcd-iso.mjs';
import { fetchDeb, kernelPackage } from './guest/debian.mjs';
import { Cpio } from './guest/initramfs.mjs';
import { extractVmlinux, indexModules, resolveModules } from './guest/kernel.mjs';
import { run } from './guest/run.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const OUT_DIR = join(root, '.cache', 'device-vm');
// The guest's download folder: the same kernel .deb, fetched once for both.
const debDir = join(root, '.cache', 'guest', 'debs');
const workDir = join(OUT_DIR, 'work');
const partsDir = join(root, 'scripts', 'device');
const force = process.argv.includes('--force');
const quiet = process.argv.includes('--quiet');

const log = (msg) => quiet || console.log(`build-device-vm: ${msg}`);
const sha = () => createHash('sha256');

/**
 * Host programs copied into the VM with the libraries (and loader) `ldd` lists for them: node;
 * openssl (the server's certificate, services/tls.ts); util-linux's setpriv and prlimit, which
 * the server's supervisor and launcher use (busybox's setpriv has no --pdeathsig).
 */
const PROGRAMS = [
  '/usr/bin/node',
  '/usr/bin/openssl',
  '/usr/bin/setpriv',
  '/usr/bin/prlimit',
  // issue 24: the encoder and the sound/camera pipelines (ffmpeg, ~215 libraries, ~240 MB: the
  // VM's memory is sized for them in scripts/device/qemu.mjs), V4L2 (DV timings, EDID), GPIO
  // (libgpiod 1.6's tools) and ALSA (the host side's tone and recording, the board's devices).
  '/usr/bin/ffmpeg',
  '/usr/bin/v4l2-ctl',
  '/usr/bin/gpioset',
  '/usr/bin/gpioget',
  '/usr/bin/gpiomon',
  '/usr/bin/gpioinfo',
  '/usr/bin/gpiodetect',
  '/usr/bin/arecord',
  '/usr/bin/aplay',
];
/** System data the server reads (paths.ts, drivers): copied as they are, symlinks kept. */
const SYSTEM_DATA = [
  '/usr/share/hwdata/usb.ids',
  '/usr/share/zoneinfo',
  '/usr/share/qemu/keymaps',
  '/etc/ssl/openssl.cnf',
  // alsa-lib's configuration (alsa.conf and the cards' files): arecord, aplay and ffmpeg's alsa.
  '/usr/share/alsa',
];
/** node-pty's files node loads (its other folders are sources and other platforms' builds). */
const NODE_PTY = ['package.json', 'lib', 'build/Release/pty.node'];

// ---- inputs and their hashes ----------------------------------------------------------------

/** The libraries and loader of a dynamically linked program, as ldd resolves them. */
function sharedLibraries(program) {
  const out = run('ldd', [program]);
  const libs = [];
  for (const line of out.split('\n')) {
    const m = /=>\s*(\/\S+)/.exec(line) ?? /^\s*(\/\S+)\s*\(/.exec(line);
    if (m) libs.push(m[1]);
  }
  return libs;
}

/** Every file under `path` (a file or a folder), sorted, not following symlinks. */
function walk(path, out = []) {
  const st = lstatSync(path);
  if (st.isDirectory()) {
    for (const e of readdirSync(path).sort()) walk(join(path, e), out);
  } else out.push(path);
  return out;
}

/** The kernel .deb: the guest's (guest.json names it) so both boot the same kernel. */
function kernelDebName() {
  try {
    const guest = JSON.parse(readFileSync(join(root, '.cache', 'guest', 'guest.json'), 'utf8'));
    if (guest.kernelPackage) return guest.kernelPackage.split('_')[0];
  } catch {
    // no guest built yet
  }
  return kernelPackage();
}

function baseInputs() {
  const kernelPkg = kernelDebName();
  const hostFiles = [
    ...new Set(PROGRAMS.flatMap((p) => [p, ...sharedLibraries(p)])),
    ...SYSTEM_DATA.filter((p) => existsSync(p)).flatMap((p) => walk(p)),
  ];
  const h = sha()
    .update(readFileSync(fileURLToPath(import.meta.url)))
    .update(JSON.stringify({ kernelPkg, MODULES }))
    // gpio-sim's build (its .ko goes into this part)
    .update(readFileSync(join(partsDir, 'gpio-sim.mjs')))
    // dummy_hcd with isochronous transfers (replaces the kernel's: UAC2 and UVC need them)
    .update(readFileSync(join(partsDir, 'dummy-hcd-iso.mjs')))
    .update(`iso:${DUMMY_HCD_ISO}`);
  for (const f of hostFiles) {
    const st = statSync(f, { throwIfNoEntry: false });
    h.update(`${f}:${st?.size}:${st?.mtimeMs}\n`);
  }
  return { kernelPkg, hostFiles, key: h.digest('hex').slice(0, 16) };
}

function appFiles() {
  // the webcam's frame server (server/dist/uvc-stream), if the server build has not made it yet
  buildNative({ quiet: true });
  const files = [
    ...walk(join(root, 'server', 'dist')),
    ...walk(join(root, 'web', 'dist')),
    join(root, 'package.json'),
    ...NODE_PTY.flatMap((p) => walk(join(root, 'node_modules', 'node-pty', p))),
  ];
  const keymaps = join(root, '.cache', 'keymaps');
  if (existsSync(keymaps)) files.push(...walk(keymaps));
  return files;
}

function appInputs() {
  const files = appFiles();
  const h = sha().update(readFileSync(fileURLToPath(import.meta.url)));
  for (const f of readdirSync(partsDir).sort()) h.update(f).update(readFileSync(join(partsDir, f)));
  for (const f of files) {
    const st = lstatSync(f);
    h.update(`${f}\0`);
    if (st.isSymbolicLink()) h.update(readlinkSync(f));
    else h.update(readFileSync(f));
  }
  return { files, key: h.digest('hex').slice(0, 16) };
}

// ---- the two archives -----------------------------------------------------------------------

/** A Cpio that creates each parent folder once. */
class Tree extends Cpio {
  made = new Set();
  mkdirs(path) {
    const parts = path.split('/');
    for (let i = 1; i <= parts.length; i++) {
      const p = parts.slice(0, i).join('/');
      if (p && !this.made.has(p)) {
        this.made.add(p);
        this.dir(p);
      }
    }
  }
  /** A host file or symlink at `name` (no leading slash). */
  copy(host, name) {
    this.mkdirs(dirname(name));
    const st = lstatSync(host);
    if (st.isSymbolicLink()) this.symlink(name, readlinkSync(host));
    else this.file(name, readFileSync(host), st.mode & 0o111 ? 0o755 : 0o644);
  }
}

function buildBase(kernelRoot, kernelVersion, busybox, hostFiles, gpioSim, dummyHcd) {
  const cpio = new Tree();
  for (const d of ['bin', 'dev', 'etc', 'lib/modules', 'proc', 'sys', 'tmp', 'run', 'root']) {
    cpio.mkdirs(d);
  }
  // The kernel opens /dev/console before /init runs, so it must exist before devtmpfs.
  cpio.charDev('dev/console', 5, 1);
  cpio.file('bin/busybox', readFileSync(busybox), 0o755);
  cpio.symlink('bin/sh', 'busybox');
  const index = indexModules(join(kernelRoot, 'lib', 'modules', kernelVersion, 'kernel'));
  const { order } = resolveModules(index, MODULES);
  for (const name of order) {
    // dummy_hcd: ours, with isochronous transfers (scripts/device/dummy-hcd-iso.mjs)
    const ko = name === 'dummy_hcd' && dummyHcd ? dummyHcd : index.get(name);
    cpio.file(`lib/modules/${name}.ko`, readFileSync(ko));
  }
  // gpio-sim, built out of tree (scripts/device/gpio-sim.mjs); it depends on configfs only.
  cpio.file(`lib/modules/${GPIO_SIM_MODULE}.ko`, readFileSync(gpioSim));
  order.push(GPIO_SIM_MODULE);
  cpio.file('etc/modules', Buffer.from(order.join('\n') + '\n'));
  for (const f of hostFiles) {
    // Libraries go where ldd found them, and a named data file where it is named, as files
    // (their symlinks' targets); inside a data folder, symlinks stay symlinks (zoneinfo's).
    const inFolder = SYSTEM_DATA.some((d) => f.startsWith(`${d}/`));
    if (!inFolder) {
      cpio.mkdirs(dirname(f.slice(1)));
      cpio.file(f.slice(1), readFileSync(realpathSync(f)), 0o755);
    } else cpio.copy(f, f.slice(1));
  }
  // /usr/lib/ssl/openssl.cnf is where Debian's openssl looks.
  cpio.mkdirs('usr/lib/ssl');
  cpio.symlink('usr/lib/ssl/openssl.cnf', '/etc/ssl/openssl.cnf');
  cpio.file('etc/passwd', Buffer.from('root:x:0:0:root:/root:/bin/sh\n'));
  cpio.file('etc/group', Buffer.from('root:x:0:\n'));
  return { image: cpio.finish(), modules: order };
}

function buildApp(files) {
  const cpio = new Tree();
  const app = VM.app.slice(1);
  for (const f of files) cpio.copy(f, join(app, f.slice(root.length + 1)));
  cpio.mkdirs('bin');
  cpio.file('init', Buffer.from(INIT), 0o755);
  cpio.file('bin/device-poweroff', Buffer.from(POWEROFF), 0o755);
  cpio.mkdirs(`${app}/device`);
  cpio.file(`${app}/device/observer.mjs`, readFileSync(join(partsDir, 'observer.mjs')));
  cpio.file(`${app}/device/config.yaml`, Buffer.from(SERVER_CONFIG));
  return cpio.finish();
}

// ---- main -----------------------------------------------------------------------------------

function readManifest() {
  try {
    return JSON.parse(readFileSync(join(OUT_DIR, 'device-vm.json'), 'utf8'));
  } catch {
    return {};
  }
}

function main() {
  const started = performance.now();
  for (const f of ['server/dist/main.js', 'web/dist/index.html']) {
    if (!existsSync(join(root, f))) throw new Error(`${f} missing: run npm run build first`);
  }
  const old = readManifest();
  const base = baseInputs();
  const app = appInputs();
  const have = (f) => existsSync(join(OUTPUT_FILES[f]));
  const baseFresh = !force && old.baseKey === base.key && have('base') && have('vmlinux');
  const appFresh = !force && old.appKey === app.key && have('app');
  if (baseFresh && appFresh && have('initrd')) return;
  mkdirSync(OUT_DIR, { recursive: true });
  const manifest = { ...old };
  rmSync(join(OUT_DIR, 'device-vm.json'), { force: true });

  if (!baseFresh) {
    const t0 = performance.now();
    const kernelDeb = fetchDeb(base.kernelPkg, debDir);
    const busyboxDeb = fetchDeb('busybox-static', debDir);
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
    const gpioSim = buildGpioSim(kernelDeb, log);
    const dummyHcd = DUMMY_HCD_ISO ? buildDummyHcdIso(kernelDeb, log) : null;
    const { image, modules } = buildBase(
      kroot,
      kernelVersion,
      join(broot, 'bin', 'busybox'),
      base.hostFiles,
      gpioSim.path,
      dummyHcd?.path ?? null,
    );
    extractVmlinux(join(kroot, 'boot', `vmlinuz-${kernelVersion}`), `${OUTPUT_FILES.vmlinux}.new`);
    writeFileSync(`${OUTPUT_FILES.base}.new`, image);
    renameSync(`${OUTPUT_FILES.vmlinux}.new`, OUTPUT_FILES.vmlinux);
    renameSync(`${OUTPUT_FILES.base}.new`, OUTPUT_FILES.base);
    rmSync(workDir, { recursive: true, force: true });
    Object.assign(manifest, {
      baseKey: base.key,
      kernelVersion,
      kernelPackage: basename(kernelDeb),
      busyboxPackage: basename(busyboxDeb),
      modules,
      gpioSimKey: gpioSim.key,
      dummyHcdKey: dummyHcd?.key ?? null,
      baseBuildMs: Math.round(performance.now() - t0),
    });
    log(`base part: ${(image.length / 1e6).toFixed(1)} MB in ${manifest.baseBuildMs} ms`);
  }
  if (!appFresh) {
    const t0 = performance.now();
    writeFileSync(`${OUTPUT_FILES.app}.new`, buildApp(app.files));
    renameSync(`${OUTPUT_FILES.app}.new`, OUTPUT_FILES.app);
    Object.assign(manifest, { appKey: app.key, appBuildMs: Math.round(performance.now() - t0) });
  }
  // The initrd QEMU loads: both archives, one after the other.
  const initrd = Buffer.concat([readFileSync(OUTPUT_FILES.base), readFileSync(OUTPUT_FILES.app)]);
  writeFileSync(`${OUTPUT_FILES.initrd}.new`, initrd);
  renameSync(`${OUTPUT_FILES.initrd}.new`, OUTPUT_FILES.initrd);
  Object.assign(manifest, {
    cmdline: cmdline(),
    sizes: Object.fromEntries(Object.entries(OUTPUT_FILES).map(([k, f]) => [k, statSync(f).size])),
    buildMs: Math.round(performance.now() - started),
  });
  // The manifest last: it names a whole set.
  writeFileSync(join(OUT_DIR, 'device-vm.json'), JSON.stringify(manifest, null, 2) + '\n');
  log(
    `built in ${(manifest.buildMs / 1000).toFixed(1)} s (initrd ${(initrd.length / 1e6).toFixed(1)} MB)`,
  );
}

export const OUTPUT_FILES = {
  vmlinux: join(OUT_DIR, 'vmlinux'),
  initrd: join(OUT_DIR, 'initrd.img'),
  base: join(OUT_DIR, 'base.cpio'),
  app: join(OUT_DIR, 'app.cpio'),
};

/**
 * One build at a time: parallel test files, benches and `npm run device-vm` share .cache/device-vm
 * (its work folder is emptied by a build). The lock file holds the builder's pid; a lock whose
 * process is gone is taken over.
 */
function withLock(fn) {
  mkdirSync(OUT_DIR, { recursive: true });
  const lock = join(OUT_DIR, '.build.lock');
  const deadline = Date.now() + 20 * 60_000;
  for (;;) {
    try {
      writeFileSync(lock, String(process.pid), { flag: 'wx' });
      break;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
      let holder = 0;
      try {
        holder = Number(readFileSync(lock, 'utf8').trim());
      } catch {
        continue; // released meanwhile
      }
      // An empty file is a lock being written this instant: its holder is alive.
      let alive = !holder;
      try {
        if (holder) alive = process.kill(holder, 0);
      } catch {
        alive = false;
      }
      if (!alive) {
        rmSync(lock, { force: true });
        continue;
      }
      if (Date.now() > deadline) throw new Error(`another build (pid ${holder}) holds ${lock}`);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
    }
  }
  try {
    fn();
  } finally {
    rmSync(lock, { force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    withLock(main);
  } catch (err) {
    console.error(`build-device-vm: ${err.message}`);
    process.exit(1);
  }
}

// gpio-sim for the device VM (issue 24, docs/hardware.md "GPIO: gpio-sim"): Debian's 6.1 kernel
// has no GPIO_SIM, so the module is built out of tree for the VM's kernel from Debian's own
// sources, and the VM's /init makes a simulated chip with it (contents.mjs GPIO_SIM) whose lines
// the server's `atx.type: gpio` drives and the observer watches.
//
// Inputs, all Debian packages of the kernel's own version:
//   linux-source-<x.y>      only downloaded (apt-get download); three files are taken from its
//                           tarball: drivers/gpio/gpio-sim.c, drivers/gpio/gpiolib.h and
//                           kernel/irq/irq_sim.c (the kernel has no IRQ_SIM either)
//   linux-headers-<abi>     installed (apt-get install, as root) when missing: kbuild's tree
// One change to irq_sim.c: `handle_simple_irq(irq_to_desc(n))` becomes `generic_handle_irq(n)`
// (irq_to_desc is not exported to modules; generic_handle_irq looks the descriptor up itself).
// The .ko is cached in .cache/gpio-sim by a hash of those inputs and this file.
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { run } from '../guest/run.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const GPIO_SIM_DIR = join(root, '.cache', 'gpio-sim');
/** The files taken from the kernel's source tarball. */
const SOURCES = ['drivers/gpio/gpio-sim.c', 'drivers/gpio/gpiolib.h', 'kernel/irq/irq_sim.c'];
const MAKEFILE = 'obj-m += gpiosim.o\ngpiosim-objs := gpio-sim.o irq_sim.o\n';
/** The module's name in the VM (`insmod /lib/modules/gpiosim.ko`). */
export const GPIO_SIM_MODULE = 'gpiosim';

const aptOpts = () => (process.getuid?.() === 0 ? ['-o', 'APT::Sandbox::User=root'] : []);

/** `linux-image-6.1.0-56-amd64_6.1.192-2_amd64.deb` -> abi 6.1.0-56-amd64, version 6.1.192-2. */
export function kernelOfDeb(deb) {
  const m = /^linux-image-([\w.+-]+?)_([^_]+)_[^_]+\.deb$/.exec(basename(deb));
  if (!m) throw new Error(`gpio-sim: not a kernel package name: ${basename(deb)}`);
  const abi = m[1];
  const version = decodeURIComponent(m[2]);
  const series = /^(\d+\.\d+)\./.exec(abi)?.[1];
  if (!series) throw new Error(`gpio-sim: no kernel series in ${abi}`);
  return { abi, version, series };
}

/** irq_sim.c with the one change; throws when the line is not there exactly once. */
export function patchIrqSim(text) {
  const re = /handle_simple_irq\(irq_to_desc\((\w+)\)\)/g;
  const hits = text.match(re) ?? [];
  if (hits.length !== 1) {
    throw new Error(`gpio-sim: irq_sim.c has ${hits.length} handle_simple_irq(irq_to_desc(..))`);
  }
  return text.replace(re, 'generic_handle_irq($1)');
}

/** The three sources of this kernel version, unpacked once (the .deb is removed after). */
function sources(kernel, log) {
  const dir = join(GPIO_SIM_DIR, `src-${kernel.version}`);
  if (SOURCES.every((f) => existsSync(join(dir, basename(f))))) return dir;
  const pkg = `linux-source-${kernel.series}`;
  const debs = join(GPIO_SIM_DIR, 'debs');
  rmSync(debs, { recursive: true, force: true });
  mkdirSync(debs, { recursive: true });
  log(`apt-get download ${pkg}=${kernel.version}`);
  run('apt-get', ['download', '-qq', ...aptOpts(), `${pkg}=${kernel.version}`], { cwd: debs });
  const deb = join(debs, `${pkg}_${kernel.version.replace(/:/g, '%3a')}_all.deb`);
  if (!existsSync(deb)) throw new Error(`gpio-sim: apt-get download left no ${basename(deb)}`);
  const tmp = `${dir}.tmp`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const top = `linux-source-${kernel.series}`;
  const q = (s) => `'${s.replace(/'/g, `'\\''`)}'`;
  // Only the tarball out of the .deb, and only three files out of the tarball.
  run('bash', [
    '-o',
    'pipefail',
    '-c',
    `dpkg-deb --fsys-tarfile ${q(deb)} | ` +
      `tar -xO ./usr/src/${top}.tar.xz | ` +
      `tar -xJ -C ${q(tmp)} ${SOURCES.map((f) => q(`${top}/${f}`)).join(' ')}`,
  ]);
  for (const f of SOURCES) renameSync(join(tmp, top, f), join(tmp, basename(f)));
  rmSync(join(tmp, top), { recursive: true, force: true });
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  rmSync(debs, { recursive: true, force: true });
  return dir;
}

/** kbuild's tree of this kernel, installed when missing. */
function headers(kernel, log) {
  const dir = `/usr/src/linux-headers-${kernel.abi}`;
  if (existsSync(join(dir, 'Makefile'))) return dir;
  if (process.getuid?.() !== 0) {
    throw new Error(`gpio-sim: ${dir} missing: apt-get install linux-headers-${kernel.abi}`);
  }
  log(`apt-get install linux-headers-${kernel.abi}`);
  run(
    'apt-get',
    ['install', '-y', '-qq', '--no-install-recommends', `linux-headers-${kernel.abi}`],
    {
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    },
  );
  return dir;
}

/**
 * The gpio-sim module for the kernel of `kernelDeb`: its path (cached), and the hash it is
 * cached by.
 */
export function buildGpioSim(kernelDeb, log = () => {}) {
  const kernel = kernelOfDeb(kernelDeb);
  const src = sources(kernel, log);
  const h = createHash('sha256')
    .update(readFileSync(fileURLToPath(import.meta.url)))
    .update(`${kernel.abi}\0${kernel.version}\0`);
  for (const f of SOURCES) h.update(readFileSync(join(src, basename(f))));
  const key = h.digest('hex').slice(0, 16);
  const out = join(GPIO_SIM_DIR, `${GPIO_SIM_MODULE}-${kernel.abi}-${key}.ko`);
  if (existsSync(out)) return { path: out, key };
  const kbuild = headers(kernel, log);
  const work = join(GPIO_SIM_DIR, 'work');
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  for (const f of SOURCES) copyFileSync(join(src, basename(f)), join(work, basename(f)));
  const irq = join(work, 'irq_sim.c');
  writeFileSync(irq, patchIrqSim(readFileSync(irq, 'utf8')));
  writeFileSync(join(work, 'Makefile'), MAKEFILE);
  log(`building ${GPIO_SIM_MODULE}.ko for ${kernel.abi}`);
  run('make', ['-s', '-C', kbuild, `M=${work}`, 'modules']);
  const info = run('modinfo', ['-F', 'vermagic', join(work, `${GPIO_SIM_MODULE}.ko`)]);
  if (!info.startsWith(`${kernel.abi} `)) {
    throw new Error(`gpio-sim: built for ${info.trim()}, not ${kernel.abi}`);
  }
  copyFileSync(join(work, `${GPIO_SIM_MODULE}.ko`), `${out}.new`);
  renameSync(`${out}.new`, out);
  rmSync(work, { recursive: true, force: true });
  return { path: out, key };
}

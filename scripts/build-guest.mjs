#!/usr/bin/env node
// Builds the QEMU target's guest, the "remote computer" the server boots when no admin image is
// mounted: Debian's kernel + busybox-static in a gzip newc initramfs, plus a hybrid ISO of the
// same kernel and initramfs (isolinux). Debian packages only: the kernel and busybox-static are
// fetched with `apt-get download` and unpacked with `dpkg-deb -x` (never installed on the host);
// isolinux, syslinux-common and xorriso are host packages (scripts/bootstrap.mjs installs them).
//
// Output in .cache/guest/ of the checkout: vmlinux (the uncompressed kernel QEMU boots directly,
// PVH), vmlinuz (the same kernel as Debian ships it, for the ISO), initrd.img, guest.iso,
// guest.json (kernel version, exact kernel command line, the hash of this script and of
// scripts/guest/). Quick and silent when guest.json matches them. Options: --force (rebuild),
// --quiet (no progress lines).
//
// The guest (docs/drivers.md, QEMU target): a framebuffer console at 1024x768 with a shell on
// tty1 that echoes what is typed, and on the serial port (ttyS0) one line per input event and
// per block device change, the oracle of the end-to-end tests, plus a prompt-less shell that
// runs what the console's serial tab types. Sound (issue 14): QEMU's intel-hda + hda-duplex with
// the `tone`, `hear` and `listen` commands of a small static C helper (scripts/guest/snd.c,
// built here with `gcc -static`: the guest needs no alsa-lib).
//
// Its parts, in scripts/guest/: contents.mjs (command line, modules, /init and the guest's
// programs), debian.mjs (the packages), kernel.mjs (vmlinux, module dependencies),
// initramfs.mjs (the cpio), iso.mjs (the ISOs), run.mjs (commands and progress lines).
import { createHash } from 'node:crypto';
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
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CMDLINE } from './guest/contents.mjs';
import { fetchDeb, kernelPackage } from './guest/debian.mjs';
import { buildInitramfs } from './guest/initramfs.mjs';
import { RESCUE, buildIso } from './guest/iso.mjs';
import { extractVmlinux } from './guest/kernel.mjs';
import { log, run } from './guest/run.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outDir = join(root, '.cache', 'guest');
const debDir = join(outDir, 'debs');
const workDir = join(outDir, 'work');
const force = process.argv.includes('--force');
const partsDir = join(root, 'scripts', 'guest');
const sndSource = join(partsDir, 'snd.c');
// The parts in scripts/guest/ (the C helper too) are the guest: a change to one rebuilds it.
const scriptHash = readdirSync(partsDir)
  .filter((f) => f.endsWith('.mjs') || f.endsWith('.c'))
  .sort()
  .reduce(
    (hash, f) => hash.update(readFileSync(join(partsDir, f))),
    createHash('sha256').update(readFileSync(fileURLToPath(import.meta.url))),
  )
  .digest('hex')
  .slice(0, 16);

/** The sound helper, statically linked: the guest has no C library. */
function buildSnd(out) {
  if (!existsSync('/usr/bin/gcc')) throw new Error('gcc missing: apt-get install gcc libc6-dev');
  run('gcc', ['-static', '-O2', '-Wall', '-o', out, sndSource, '-lm']);
}

const OUTPUTS = ['vmlinux', 'vmlinuz', 'initrd.img', 'guest.iso', 'rescue.iso'];

function upToDate() {
  try {
    const manifest = JSON.parse(readFileSync(join(outDir, 'guest.json'), 'utf8'));
    if (manifest.scriptHash !== scriptHash) return false;
    return OUTPUTS.every((f) => statSync(join(outDir, f)).size > 0);
  } catch {
    return false;
  }
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
  const kernelDeb = fetchDeb(kernelPkg, debDir);
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

// The guest's gzip newc initramfs: busybox, /init and its programs (contents.mjs), the sound
// helper, and the kernel modules it loads with a modules.dep as depmod would write it.
import { existsSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { gzipSync } from 'node:zlib';
import { HOTPLUG, INIT, MODULES, PICK, SCREEN, SOUND } from './contents.mjs';
import { indexModules, resolveModules } from './kernel.mjs';

// ---- newc cpio, written here so the host needs no `cpio` --------------------------------------

export class Cpio {
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

export function buildInitramfs(kernelRoot, kernelVersion, busybox, snd) {
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

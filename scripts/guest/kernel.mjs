// The Debian kernel as the guest needs it: the uncompressed ELF for QEMU's direct (PVH) boot,
// and the modules it loads with their dependencies (read from the modules themselves).
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The uncompressed ELF kernel inside a bzImage. Debian compresses with xz, and xz under TCG
 * costs about 4.5 s of every boot; QEMU boots the ELF directly through its PVH entry point.
 * The payload's place is in the setup header (Documentation/x86/boot.rst).
 */
export function extractVmlinux(bzImage, out) {
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
export function indexModules(dir, index = new Map()) {
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
export function resolveModules(index, wanted) {
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

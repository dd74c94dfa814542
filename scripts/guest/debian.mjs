// The guest's Debian packages: fetched with `apt-get download` into a cache folder, never
// installed on the host (scripts/build-guest.mjs unpacks them with `dpkg-deb -x`).
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { log, run } from './run.mjs';

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
export function kernelPackage() {
  return withAptLists(() => {
    const out = run('apt-cache', ['depends', '--important', 'linux-image-amd64']);
    const m = /Depends:\s*(linux-image-[\w.+-]+)/.exec(out);
    if (!m) throw new Error('no kernel package behind linux-image-amd64');
    return m[1];
  });
}

/** The cached .deb of `pkg` in `debDir`, downloaded on first use. */
export function fetchDeb(pkg, debDir) {
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

/** Test helpers: packages built by scripts/package.mjs from a tiny tree (never a full build). */
import { execFile } from 'node:child_process';
import { createHash, randomBytes, sign, type KeyObject } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { REPO_ROOT } from '../../paths';

const run = promisify(execFile);
const SCRIPT = join(REPO_ROOT, 'scripts', 'package.mjs');

/** Runs scripts/package.mjs; the tests package a tiny tree (`--from`), never a build. */
export async function makePackage(
  work: string,
  args: string[],
): Promise<{ file: string; sha: string; stdout: string }> {
  const { stdout } = await run(process.execPath, [SCRIPT, ...args], { cwd: work, timeout: 30_000 });
  const [file, , sha] = stdout.split('\n')[0]!.split(' ');
  return { file: file!, sha: sha!, stdout };
}

/** A tiny release tree: package.json, server/dist, web/dist. */
export async function makeTree(root: string): Promise<void> {
  await mkdir(join(root, 'server', 'dist'), { recursive: true });
  await mkdir(join(root, 'web', 'dist', 'assets', 'a'.repeat(90)), { recursive: true });
  await writeFile(join(root, 'package.json'), '{"name":"kvm","version":"0.1.0","type":"module"}');
  await writeFile(join(root, 'server', 'dist', 'main.js'), 'console.log("hello")\n');
  await writeFile(join(root, 'web', 'dist', 'index.html'), '<!doctype html>');
  // A path over ustar's 100-byte name field goes through the prefix field.
  await writeFile(join(root, 'web', 'dist', 'assets', 'a'.repeat(90), 'long-name.js'), 'x');
  await writeFile(join(root, 'web', 'dist', 'assets', 'blob.bin'), randomBytes(200_000));
}

/** One tar entry of a crafted package: its bytes, or `zeros` bytes of 0 (a bomb's body). */
export interface CraftedEntry {
  path: string;
  data?: Buffer | string;
  zeros?: number;
  /** ustar type flag: '0' file, '2' symlink, '5' folder. */
  type?: string;
  /** The size the header declares, when it is not the data's. */
  size?: number;
}

function tarHeader(path: string, size: number, type: string): Buffer {
  const h = Buffer.alloc(512);
  h.write(path, 0, 100, 'utf8');
  h.write('0000644\0', 100, 'ascii');
  h.write('0000000\0', 108, 'ascii');
  h.write('0000000\0', 116, 'ascii');
  h.write(`${size.toString(8).padStart(11, '0')}\0`, 124, 'ascii');
  h.write('00000000000\0', 136, 'ascii');
  h.fill(' ', 148, 156);
  h.write(type, 156, 'ascii');
  h.write('ustar\0', 257, 'ascii');
  h.write('00', 263, 'ascii');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii');
  return h;
}

/** The manifest of `files` as scripts/package.mjs writes it (sizes and hashes of the data). */
export function craftManifest(
  files: { path: string; data?: Buffer | string; size?: number; sha256?: string }[],
  fields: Partial<Record<'version' | 'model' | 'min_version', string>> = {},
): Buffer {
  const manifest = {
    format: 1,
    version: fields.version ?? 'V0.2.0',
    model: fields.model ?? 'RM1',
    min_version: fields.min_version ?? 'V0.0.0',
    created: new Date(0).toISOString(),
    files: files.map((f) => {
      const data = Buffer.from(f.data ?? '');
      return {
        path: f.path,
        sha256: f.sha256 ?? createHash('sha256').update(data).digest('hex'),
        size: f.size ?? data.length,
      };
    }),
  };
  return Buffer.from(`${JSON.stringify(manifest, null, 1)}\n`);
}

/**
 * Writes a package by hand, outside scripts/package.mjs (which refuses to make a bad one): the
 * manifest, its signature by `key` (or garbage without one), then `entries` under `files/`.
 * A `zeros` body is many gzip members of one precompressed 16 MiB block of zeros, so a package
 * of a few MB can declare gigabytes, as the gzip bomb of issue 21 did.
 */
export async function craftPackage(
  file: string,
  manifest: Buffer,
  key: KeyObject | null,
  entries: CraftedEntry[],
): Promise<void> {
  const sig = Buffer.from(
    `${(key ? sign(null, manifest, key) : randomBytes(64)).toString('base64')}\n`,
  );
  const members: Buffer[] = [];
  let pending: Buffer[] = [];
  const flush = (): void => {
    if (pending.length) members.push(gzipSync(Buffer.concat(pending)));
    pending = [];
  };
  const add = (path: string, body: Buffer | null, size: number, type: string, zeros = 0): void => {
    pending.push(tarHeader(path, size, type));
    if (body) pending.push(body);
    if (zeros > 0) {
      flush();
      const block = 16 * 1024 * 1024;
      const packed = gzipSync(Buffer.alloc(block));
      for (let left = zeros; left > 0; left -= block) {
        members.push(left >= block ? packed : gzipSync(Buffer.alloc(left)));
      }
    }
    const pad = (512 - (size % 512)) % 512;
    if (pad) pending.push(Buffer.alloc(pad));
  };
  add('manifest.json', manifest, manifest.length, '0');
  add('manifest.sig', sig, sig.length, '0');
  for (const e of entries) {
    const data = e.data === undefined ? null : Buffer.from(e.data);
    const size = e.size ?? (data ? data.length : (e.zeros ?? 0));
    add(`files/${e.path}`, data, size, e.type ?? '0', e.zeros ?? 0);
  }
  pending.push(Buffer.alloc(1024));
  flush();
  await writeFile(file, Buffer.concat(members));
}

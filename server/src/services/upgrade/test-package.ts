/** Test helpers: packages built by scripts/package.mjs from a tiny tree (never a full build). */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
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

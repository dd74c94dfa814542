/**
 * `npm run bench -- upgrade`: firmware packages (issue 12), one JSON object.
 *
 * - package_verify_ms: a full release package of this tree (scripts/package.mjs: the built
 *   server bundle and console, as `npm run package` writes it; `--from` the tree the bench's
 *   preparation built, so the bench does not rebuild it a second time), verified by the
 *   device's verifyPackage (signature, every file's sha256 and size, model, min_version):
 *   median of 5 runs, the first (cold page cache) included in the runs. Notes give the package's
 *   size and file count.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../server/src/paths';
import { loadTrustedKeys, verifyPackage } from '../server/src/services/upgrade/package-reader';
import { median, note, round, sized } from './lib';

const run = promisify(execFile);
const RUNS = sized(5, 2);

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'kvm-bench-upgrade-'));
  try {
    const script = join(REPO_ROOT, 'scripts', 'package.mjs');
    await run(process.execPath, [script, '--gen-key', join(dir, 'k')]);
    const { stdout } = await run(
      process.execPath,
      [
        script,
        '--from',
        REPO_ROOT,
        '--version',
        'V99.0.0',
        '--key',
        join(dir, 'k.key'),
        '--out',
        dir,
      ],
      { timeout: 300_000 },
    );
    const file = stdout.split(' ')[0]!;
    const keys = await loadTrustedKeys([join(dir, 'k.pub')]);
    const times: number[] = [];
    let files = 0;
    for (let i = 0; i < RUNS; i++) {
      const t0 = performance.now();
      const r = await verifyPackage(file, keys, 'RM1', 'V0.1.0');
      times.push(performance.now() - t0);
      if (!r.signature_valid || !r.firmware_valid) throw new Error(`verify failed: ${r.reason}`);
      files = r.manifest!.files.length;
    }
    note(
      `package ${(await stat(file)).size} bytes, ${files} files, runs ${times.map((t) => round(t)).join(' ')} ms`,
    );
    process.stdout.write(`${JSON.stringify({ package_verify_ms: round(median(times)) })}\n`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();

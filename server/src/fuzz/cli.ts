/**
 * `npm run fuzz -- --minutes N [--seed S]` (scripts/fuzz.mjs bundles and runs this). The route
 * table comes from the app itself, built over a throwaway data folder and closed again; the
 * fuzzing then runs against the real server process (long-run.ts). Prints the seed first, so
 * a crash reproduces with `--seed`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildTestApp } from '../test-helpers';
import { REPO_ROOT } from '../paths';
import { runLong } from './long-run';
import { randomSeed } from './prng';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const minutes = Number(arg('minutes') ?? '1');
const seed = arg('seed') !== undefined ? Number(arg('seed')) : randomSeed();
if (!Number.isFinite(minutes) || minutes <= 0 || !Number.isSafeInteger(seed)) {
  process.stderr.write('usage: npm run fuzz -- --minutes N [--seed S]\n');
  process.exit(2);
}
process.stderr.write(`fuzz: seed ${seed}, ${minutes} min\n`);

const dir = await mkdtemp(join(tmpdir(), 'kvm-fuzz-routes-'));
let routes;
try {
  const app = await buildTestApp(dir);
  await app.ready();
  routes = [...app.routeTable];
  await app.close();
} finally {
  await rm(dir, { recursive: true, force: true });
}
const result = await runLong({ repoRoot: REPO_ROOT, routes, seconds: minutes * 60, seed });
for (const f of result.findings) {
  process.stderr.write(
    `finding: [${f.kind}] ${f.where}: ${f.detail} (x${f.count})\n  ${f.example}\n`,
  );
}
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);

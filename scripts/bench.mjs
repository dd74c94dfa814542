#!/usr/bin/env node
// `npm run bench -- <name>`: bundles bench/<name>.ts (our workspaces inlined, npm packages
// left as imports) and runs it. Each bench prints one JSON object on stdout.
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const name = process.argv[2];
const available = readdirSync(join(root, 'bench'))
  .filter((f) => f.endsWith('.ts') && !f.includes('.test.') && f !== 'lib.ts')
  .map((f) => f.replace(/\.ts$/, ''));
if (!name || !available.includes(name)) {
  console.error(`usage: npm run bench -- <${available.join('|')}>`);
  process.exit(2);
}
// Same preparation as `npm test` (quick and silent when everything is built already).
if (!process.env.KVM_BENCH_NO_BOOTSTRAP) {
  const prep = spawnSync('node', [join(root, 'scripts/bootstrap.mjs'), 'test'], {
    stdio: 'inherit',
  });
  if (prep.status !== 0) process.exit(prep.status ?? 1);
}
const outDir = join(root, '.cache', 'bench');
mkdirSync(outDir, { recursive: true });
const outfile = join(outDir, `${name}.mjs`);
await build({
  entryPoints: [join(root, 'bench', `${name}.ts`)],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  logLevel: 'error',
  plugins: [
    {
      name: 'external-packages',
      setup(b) {
        b.onResolve({ filter: /^[^./]/ }, (args) =>
          args.path.startsWith('@kvm/') ? undefined : { path: args.path, external: true },
        );
      },
    },
  ],
});
const r = spawnSync(process.execPath, [outfile, ...process.argv.slice(3)], {
  stdio: 'inherit',
  cwd: root,
});
process.exit(r.status ?? 1);

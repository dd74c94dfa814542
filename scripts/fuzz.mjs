#!/usr/bin/env node
// `npm run fuzz -- --minutes N [--seed S]`: the long fuzz run against the real server process
// (server/src/fuzz/cli.ts). Builds what is missing first (scripts/bootstrap.mjs), bundles the
// runner (our workspaces inlined, npm packages left as imports) and runs it.
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
if (!process.env.KVM_FUZZ_NO_BOOTSTRAP) {
  const prep = spawnSync('node', [join(root, 'scripts/bootstrap.mjs'), 'test'], {
    stdio: 'inherit',
  });
  if (prep.status !== 0) process.exit(prep.status ?? 1);
}
const outDir = join(root, '.cache', 'fuzz');
mkdirSync(outDir, { recursive: true });
const outfile = join(outDir, 'fuzz.mjs');
await build({
  entryPoints: [join(root, 'server/src/fuzz/cli.ts')],
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
const r = spawnSync(process.execPath, [outfile, ...process.argv.slice(2)], {
  stdio: 'inherit',
  cwd: root,
});
process.exit(r.status ?? 1);

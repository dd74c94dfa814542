// Shared by `npm run bench` and `npm run fuzz`: make the tree ready (scripts/bootstrap.mjs, quick
// when all is there), bundle one TypeScript entry point (our workspaces inlined, npm packages
// left as imports) into .cache/<folder>/, and run it with the given arguments.
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { basename, join } from 'node:path';

export const root = new URL('..', import.meta.url).pathname;

/** Runs `entry` (a path under the repository) bundled; exits with its status. */
export async function runBundled({ entry, folder, args, skipBootstrap }) {
  if (!skipBootstrap) {
    const prep = spawnSync('node', [join(root, 'scripts/bootstrap.mjs'), 'test'], {
      stdio: 'inherit',
    });
    if (prep.status !== 0) process.exit(prep.status ?? 1);
  }
  const outDir = join(root, '.cache', folder);
  mkdirSync(outDir, { recursive: true });
  const outfile = join(outDir, basename(entry).replace(/\.ts$/, '.mjs'));
  await build({
    entryPoints: [join(root, entry)],
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
          b.onResolve({ filter: /^[^./]/ }, (a) =>
            a.path.startsWith('@kvm/') ? undefined : { path: a.path, external: true },
          );
        },
      },
    ],
  });
  // KVM_BENCH_NODE_ARGS: node flags for the bundle's process, e.g. `--no-opt` to run a bench whose
  // server is in-process (video, input) under the server's own V8 settings (young-generation.ts)
  const nodeArgs = (process.env.KVM_BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const r = spawnSync(process.execPath, [...nodeArgs, outfile, ...args], {
    stdio: 'inherit',
    cwd: root,
  });
  process.exit(r.status ?? 1);
}

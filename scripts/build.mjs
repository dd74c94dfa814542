#!/usr/bin/env node
// Builds what `npm start` runs: the server bundle (esbuild) and the console (vite), then
// pre-compresses the console's assets so the server can send .br/.gz without work per request.
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const root = new URL('..', import.meta.url).pathname;
const quiet = process.argv.includes('--quiet');
const only = process.argv.find((a) => a === 'server' || a === 'web');

async function buildServer() {
  const outdir = join(root, 'server/dist');
  const result = await build({
    // main.js is the server; launcher.js (what `npm start` runs) starts it and restarts it.
    entryPoints: {
      main: join(root, 'server/src/main.ts'),
      launcher: join(root, 'server/src/launcher.ts'),
    },
    outdir,
    bundle: true,
    // Each dynamic import() becomes a chunk read only when it runs: werift (janus/webrtc.ts)
    // stays out of an idle server's memory. Chunks sit beside main.js (paths.ts counts on
    // its file being two levels below the checkout).
    splitting: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: 'linked',
    // The wire name of an error is its class name (server/src/errors.ts): esbuild renames a
    // class whose name another module also uses unless told to keep names.
    keepNames: true,
    logLevel: quiet ? 'error' : 'warning',
    metafile: true,
    // CommonJS dependencies bundled into ESM still call require(): give them one.
    banner: {
      js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
    },
  });
  removeStaleChunks(outdir, Object.keys(result.metafile.outputs));
}

/**
 * Chunks are named by content hash, so every build that changes one leaves the old file
 * behind. A server started from the last build may still import its chunks (werift comes with
 * the first viewer): only chunks that this build did not write and that are an hour old go.
 */
function removeStaleChunks(outdir, written) {
  // metafile paths are relative to the working directory
  const keep = new Set(written.map((f) => resolve(f)));
  const cutoff = Date.now() - 3_600_000;
  for (const f of readdirSync(outdir)) {
    const full = join(outdir, f);
    if (!/-[A-Z0-9]{8}\.js(\.map)?$/.test(f) || keep.has(full)) continue;
    if (statSync(full).mtimeMs < cutoff) rmSync(full);
  }
}

function compressTree(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) compressTree(full);
    else if (/\.(js|css|html|svg|json|txt|map)$/.test(entry.name) && statSync(full).size > 1024) {
      const data = readFileSync(full);
      writeFileSync(`${full}.gz`, gzipSync(data, { level: 9 }));
      writeFileSync(
        `${full}.br`,
        brotliCompressSync(data, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }),
      );
    }
  }
}

function buildWeb() {
  const r = spawnSync('npx', ['vite', 'build', ...(quiet ? ['--logLevel', 'error'] : [])], {
    cwd: join(root, 'web'),
    stdio: 'inherit',
  });
  if (r.status !== 0) process.exit(r.status ?? 1);
  compressTree(join(root, 'web/dist'));
}

if (!only || only === 'server') await buildServer();
if (!only || only === 'web') buildWeb();

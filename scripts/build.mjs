#!/usr/bin/env node
// Builds what `npm start` runs: the server bundle (esbuild) and the console (vite), then
// pre-compresses the console's assets so the server can send .br/.gz without work per request.
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { buildNative } from './build-native.mjs';

const root = new URL('..', import.meta.url).pathname;
const quiet = process.argv.includes('--quiet');
const only = process.argv.find((a) => a === 'server' || a === 'web' || a === 'fleet');

/**
 * Code an idle server never runs, in bundles of its own that main.js imports at first use:
 * janus/webrtc.ts imports peer.ts (and with it werift, ~1.7 MB of code) for the first viewer
 * (webrtc-peer.js), config.ts the YAML parser (158 KB of main.js before) for a config file only
 * (yaml.js). V8 keeps a script's source on its heap for its life, read or not. Each dynamic
 * import named here stays in main.js as an import of the entry's file beside it. (esbuild's
 * `splitting` would do it too, but it turns every dynamic import of a CommonJS package, yaml's
 * and @fastify/cookie's, into a namespace with only `default`.)
 */
const LAZY_ENTRIES = [
  {
    importer: join('janus', 'webrtc.ts'),
    path: './peer',
    entry: 'webrtc-peer',
    source: 'janus/peer.ts',
  },
  { importer: join('src', 'config.ts'), path: './yaml', entry: 'yaml', source: 'yaml.ts' },
];
const lazyEntries = {
  name: 'lazy-entries',
  setup(b) {
    const paths = LAZY_ENTRIES.map((l) => l.path.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'));
    b.onResolve({ filter: new RegExp(`^(${paths.join('|')})$`) }, (args) => {
      const lazy = LAZY_ENTRIES.find(
        (l) => l.path === args.path && args.importer.endsWith(l.importer),
      );
      return lazy && args.kind === 'dynamic-import'
        ? { path: `./${lazy.entry}.js`, external: true }
        : undefined;
    });
  },
};

/**
 * zod's namespaces re-export every locale (`z.locales`, 49 of them: 290 KB of main.js, whose
 * source V8 keeps on the heap). The server never reads `z.locales`; protocol/src/zod.ts sets
 * the English messages from `locales/en.js` directly, which stays. The namespace import is made
 * empty, so `z.locales.xx` would be undefined here (idle RSS -0.3 to -0.5 MB, bench server, same
 * build with and without, alternating starts).
 */
const noZodLocales = {
  name: 'no-zod-locales',
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      /[\\/]zod[\\/]v4[\\/](classic|core|mini)[\\/]/.test(args.importer)
        ? { path: 'zod-locales', namespace: 'no-zod-locales' }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'no-zod-locales' }, () => ({
      contents: 'export {};',
      loader: 'js',
    }));
  },
};

/**
 * The server and the protocol use zod/mini (protocol/src/zod.ts): zod's classic API (`'zod'`)
 * brings most of the library into the bundle (main.js 2.06 -> 1.81 MB without it; idle RSS
 * -1.5 MB, bench server's measure, alternating starts). The build refuses it there.
 */
const noZodClassic = {
  name: 'no-zod-classic',
  setup(b) {
    b.onResolve({ filter: /^zod(\/v4)?$/ }, (args) =>
      /[\\/](server|protocol)[\\/]src[\\/]/.test(args.importer)
        ? {
            errors: [
              {
                text: `${args.importer}: imports zod's classic API; use: import * as z from '@kvm/protocol/zod'`,
              },
            ],
          }
        : undefined,
    );
  },
};

/**
 * Fastify requires its JSON-schema compilers (@fastify/ajv-compiler, with ajv, ajv-formats and
 * fast-uri; @fastify/fast-json-stringify-compiler, with fast-json-stringify) only when no
 * `schemaController.compilersFactory` is given. http/edge.ts gives one that refuses schemas, so
 * those requires never run, and their 370 KB would only sit in the bundle's source, which V8
 * keeps on the heap. They resolve to a module that throws if it is ever reached.
 */
const noSchemaCompilers = {
  name: 'no-schema-compilers',
  setup(b) {
    b.onResolve({ filter: /^@fastify\/(ajv-compiler|fast-json-stringify-compiler)$/ }, (args) =>
      /[\\/]fastify[\\/]lib[\\/]schema-controller\.js$/.test(args.importer)
        ? { path: args.path, namespace: 'no-schema-compilers' }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'no-schema-compilers' }, (args) => ({
      contents: `module.exports = () => { throw new Error(${JSON.stringify(
        `${args.path} is left out of the bundle: give Fastify a compilersFactory`,
      )}); };`,
      loader: 'js',
    }));
  },
};

/**
 * Parts of our dependencies that the built server never calls, each resolved to a function that
 * throws if it is ever reached: @fastify/websocket's `injectWS` (duplexify, which brings
 * readable-stream, a userland copy of node:stream, evaluated at start) and Fastify's `inject`
 * (light-my-request) are for tests, which run the sources; pino's transports (thread-stream)
 * are not used, the log is written by pino's own destination.
 */
const NEVER_CALLED = {
  duplexify: "@fastify/websocket's injectWS is for tests",
  'light-my-request': "Fastify's inject is for tests",
  'thread-stream': 'pino transports are not used',
};
const neverCalled = {
  name: 'never-called',
  setup(b) {
    // package names: letters and hyphens, nothing a regular expression reads otherwise
    b.onResolve({ filter: new RegExp(`^(${Object.keys(NEVER_CALLED).join('|')})$`) }, (args) => ({
      path: args.path,
      namespace: 'never-called',
    }));
    b.onLoad({ filter: /.*/, namespace: 'never-called' }, (args) => ({
      contents: `module.exports = () => { throw new Error(${JSON.stringify(
        `${args.path} is not in the built server: ${NEVER_CALLED[args.path]}`,
      )}); };`,
      loader: 'js',
    }));
  },
};

/**
 * Fastify's plugin version check (fastify/lib/plugin-utils.js) gets our own small module for
 * `semver` (server/src/http/fastify-semver.ts): semver is 45 KB evaluated at start, with some
 * 80 regular expressions, for three checks of "5.x". Ours answers the range forms our plugins
 * use and throws at start on any other.
 */
const smallSemver = {
  name: 'small-semver',
  setup(b) {
    b.onResolve({ filter: /^semver$/ }, (args) =>
      /[\\/]fastify[\\/]lib[\\/]plugin-utils\.js$/.test(args.importer)
        ? { path: join(root, 'server/src/http/fastify-semver.ts') }
        : undefined,
    );
  },
};

/**
 * werift's DTLS key exchange on OpenSSL (server/src/janus/dtls-curves.ts says why): its ESM
 * bundle (lib/index.mjs, what `import 'werift'` loads) gets that module for `tweetnacl` and
 * `@noble/curves/p256`. The build fails if werift no longer imports them so, rather than
 * bundling the JavaScript again.
 */
function nativeDtlsCurves() {
  const wanted = ['tweetnacl', '@noble/curves/p256'];
  const replaced = new Set();
  return {
    name: 'native-dtls-curves',
    setup(b) {
      b.onResolve({ filter: /^(tweetnacl|@noble\/curves\/p256)$/ }, (args) => {
        if (!/[\\/]werift[\\/]lib[\\/]index\.mjs$/.test(args.importer)) return undefined;
        replaced.add(args.path);
        return { path: join(root, 'server/src/janus/dtls-curves.ts') };
      });
      b.onEnd((result) => {
        const missing = wanted.filter((w) => !replaced.has(w));
        if (result.errors.length === 0 && missing.length > 0) {
          throw new Error(`werift's DTLS curves were not replaced: ${missing.join(', ')}`);
        }
      });
    },
  };
}

/**
 * A Node bundle (the server's, the fleet's): ESM for node20, names kept (the wire name of an
 * error is its class name, server/src/errors.ts: esbuild renames a class whose name another
 * module also uses unless told to keep names), a `require` for the CommonJS dependencies bundled
 * into ESM, and ASCII only (below).
 */
async function buildNode(options) {
  const result = await build({
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: 'linked',
    keepNames: true,
    logLevel: quiet ? 'error' : 'warning',
    metafile: true,
    banner: {
      js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
    },
    ...options,
  });
  asciiOnly(Object.keys(result.metafile.outputs).filter((f) => f.endsWith('.js')));
  return result;
}

/**
 * The server's bundles hold no comments or indentation (V8 keeps a script's whole source on the
 * heap for its life: main.js 4.3 -> 2.7 MB) and no keepNames: its `__name` call around every
 * function cost 15 MB of idle RSS (85 -> 70 MB before the event socket, bench server, same
 * machine and load), most of it the parser's scratch memory left in malloc's heap. Identifiers
 * keep their names (a stack trace stays readable; positions are main.js.map's), so a class keeps
 * its name unless another module's class has it too: then esbuild names it `Name2`, and an error's
 * wire name (its class name, server/src/errors.ts) would change. classNamesKept refuses that.
 */
async function buildServer() {
  const result = await buildNode({
    keepNames: false,
    minifyWhitespace: true,
    minifySyntax: true,
    // main.js is the server; launcher.js (what `npm start` runs) starts it and restarts it.
    entryPoints: {
      main: join(root, 'server/src/main.ts'),
      launcher: join(root, 'server/src/launcher.ts'),
      ...Object.fromEntries(LAZY_ENTRIES.map((l) => [l.entry, join(root, 'server/src', l.source)])),
    },
    outdir: join(root, 'server/dist'),
    plugins: [
      lazyEntries,
      noZodClassic,
      noZodLocales,
      noSchemaCompilers,
      neverCalled,
      smallSemver,
      nativeDtlsCurves(),
    ],
    // A native addon cannot be bundled: main.js requires it from node_modules at run time.
    external: ['node-pty'],
  });
  classNamesKept(result.metafile);
}

/** Fails the build when a class of the server's sources was renamed in a bundle (above). */
function classNamesKept(metafile) {
  const names = new Set();
  for (const input of Object.keys(metafile.inputs)) {
    if (!/^(server|protocol)\/src\/.*\.ts$/.test(input)) continue;
    for (const m of readFileSync(input, 'utf8').matchAll(/\bclass\s+([A-Z]\w*)/g)) {
      names.add(m[1]);
    }
  }
  for (const out of Object.keys(metafile.outputs).filter((f) => f.endsWith('.js'))) {
    // metafile paths are relative to the working folder, as asciiOnly reads them
    const text = readFileSync(out, 'utf8');
    for (const name of names) {
      const renamed = new RegExp(`\\b(${name}\\d+=class\\b|class ${name}\\d+\\b)`).exec(text);
      if (renamed) {
        throw new Error(
          `${out}: class ${name} renamed to ${renamed[1]}: give one of them another name`,
        );
      }
    }
  }
}

/**
 * V8 keeps a script's source in memory for its whole life, one byte a character only while
 * every character is Latin-1: one "—" or "↔" in a comment doubles it (main.js: 3 MB -> 6 MB
 * resident). esbuild escapes strings, identifiers and regexps but copies comments as they are,
 * so what is left outside ASCII is in comments and is escaped there as `\u{...}` text.
 * (The source map's columns shift after such a character on its own line only.)
 */
function asciiOnly(files) {
  for (const f of files) {
    const text = readFileSync(f, 'utf8');
    if (!/[\u0080-\u{10ffff}]/u.test(text)) continue;
    writeFileSync(
      f,
      text.replace(/[\u0080-\u{10ffff}]/gu, (c) => `\\u{${c.codePointAt(0).toString(16)}}`),
    );
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

/** The fleet server (docs/cloud.md): one bundle, fleet/dist/main.js, its console in www/ beside. */
async function buildFleet() {
  viteBuild('vite.fleet.config.ts');
  const www = join(root, 'fleet/dist/www');
  renameSync(join(www, 'fleet.html'), join(www, 'index.html'));
  compressTree(www);
  await buildNode({
    entryPoints: {
      main: join(root, 'fleet/src/main.ts'),
      // simulated devices (docs/cloud.md "Simulated devices"): `npm run cloud -- --sim N`
      sim: join(root, 'fleet/src/sim/main.ts'),
    },
    outdir: join(root, 'fleet/dist'),
    // pg's optional native binding is never used
    external: ['pg-native'],
  });
}

function viteBuild(config) {
  const args = ['vite', 'build', '-c', config, ...(quiet ? ['--logLevel', 'error'] : [])];
  const r = spawnSync('npx', args, { cwd: join(root, 'web'), stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

function buildWeb() {
  viteBuild('vite.config.ts');
  compressTree(join(root, 'web/dist'));
}

if (!only || only === 'server') {
  await buildServer();
  // the webcam's frame server (C, static) beside the bundle
  buildNative({ quiet });
}
if (!only || only === 'web') buildWeb();
if (!only || only === 'fleet') await buildFleet();

#!/usr/bin/env node
// `npm run package -- --version X --key K [--model M] [--min-version V] [--out DIR]
//   [--channel DIR [--beta] [--release-note T] [--release-note-cn T]]`
// `npm run package -- --gen-key PREFIX` writes PREFIX.key (private) and PREFIX.pub (public).
//
// Builds the product (scripts/build.mjs) and writes one signed release package: a gzip'd ustar
// tar of `manifest.json`, `manifest.sig` (ed25519 over the manifest's bytes, base64) and the
// files under `files/`. The format is in docs/upgrade.md; the device reads it with
// server/src/services/upgrade/package-reader.ts. `--from DIR` packages DIR as it is, without
// building (the tests use a tiny tree).
import { spawnSync } from 'node:child_process';
import { createHash, createPrivateKey, generateKeyPairSync, sign } from 'node:crypto';
import {
  copyFileSync,
  createReadStream,
  createWriteStream,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { createGzip } from 'node:zlib';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';

const root = new URL('..', import.meta.url).pathname;
/** What a release holds, relative to the tree's root (server/src/paths.ts's REPO_ROOT). */
const RELEASE_DIRS = ['server/dist', 'web/dist'];
// protocol/src/enums.ts DEVICE_MODELS.
const MODELS = ['RM1', 'RM1PE', 'RM10'];

function parseArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) fail(`unexpected argument ${a}`);
    const name = a.slice(2);
    if (name === 'beta' || name === 'quiet') out[name] = true;
    else {
      const v = argv[++i];
      if (v === undefined) fail(`${a} needs a value`);
      out[name] = v;
    }
  }
  return out;
}

function fail(message) {
  process.stderr.write(`package: ${message}\n`);
  process.exit(2);
}

/** SPEC 4 versions (protocol/src/upgrade.ts's VERSION_RE). */
const VERSION_RE = /^v?(\d{1,9})\.(\d{1,9})\.(\d{1,9})(?:[\s-]+(release|beta)\.?(\d{1,9}))?$/i;

function glVersion(text, what) {
  const m = VERSION_RE.exec(String(text).trim());
  if (!m) fail(`${what} must look like V1.2.3, V1.2.3 release1 or V1.2.3 beta1: ${text}`);
  const base = `${m[1]}.${m[2]}.${m[3]}`;
  const type = m[4] ? `${m[4].toLowerCase()}${m[5]}` : '';
  return {
    gl: type ? `V${base} ${type}` : `V${base}`,
    release: base,
    type,
    npm: type ? `${base}-${type}` : base,
  };
}

function listFiles(tree) {
  const files = [];
  const walk = (rel) => {
    const full = join(tree, rel);
    for (const e of readdirSync(full, { withFileTypes: true })) {
      const r = `${rel}/${e.name}`;
      if (e.isDirectory()) walk(r);
      else if (e.isFile()) files.push(r);
      else fail(`${r}: only regular files and folders can be packaged`);
    }
  };
  for (const d of RELEASE_DIRS) {
    if (!existsSync(join(tree, d))) fail(`${join(tree, d)} is missing (build first)`);
    walk(d);
  }
  // Byte order, not locale order: the same tree gives the same package everywhere.
  return files.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

function sha256File(file) {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

// ---- ustar ----
function octal(value, width) {
  return value.toString(8).padStart(width - 1, '0') + '\0';
}

function tarHeader(path, size) {
  const h = Buffer.alloc(512);
  let name = path;
  let prefix = '';
  if (Buffer.byteLength(path) > 100) {
    const cut = path.lastIndexOf('/', 155);
    if (cut <= 0 || Buffer.byteLength(path.slice(cut + 1)) > 100) fail(`path too long: ${path}`);
    prefix = path.slice(0, cut);
    name = path.slice(cut + 1);
  }
  h.write(name, 0, 100, 'utf8');
  h.write(octal(0o644, 8), 100, 'ascii');
  h.write(octal(0, 8), 108, 'ascii');
  h.write(octal(0, 8), 116, 'ascii');
  h.write(octal(size, 12), 124, 'ascii');
  h.write(octal(0, 12), 136, 'ascii'); // mtime 0: deterministic
  h.fill(' ', 148, 156);
  h.write('0', 156, 'ascii');
  h.write('ustar\0', 257, 'ascii');
  h.write('00', 263, 'ascii');
  h.write(prefix, 345, 155, 'utf8');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(octal(sum, 7) + ' ', 148, 'ascii');
  return h;
}

async function* tarEntries(entries) {
  for (const e of entries) {
    yield tarHeader(e.path, e.size);
    if (e.data) yield e.data;
    else for await (const chunk of createReadStream(e.file)) yield chunk;
    const pad = (512 - (e.size % 512)) % 512;
    if (pad) yield Buffer.alloc(pad);
  }
  yield Buffer.alloc(1024);
}

function genKey(prefix) {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  writeFileSync(`${prefix}.key`, privateKey.export({ type: 'pkcs8', format: 'pem' }), {
    mode: 0o600,
  });
  writeFileSync(`${prefix}.pub`, publicKey.export({ type: 'spki', format: 'pem' }));
  process.stdout.write(`${prefix}.key ${prefix}.pub\n`);
}

function writeAtomic(file, data) {
  writeFileSync(`${file}.tmp`, data);
  renameSync(`${file}.tmp`, file);
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args['gen-key']) return genKey(resolve(args['gen-key']));
  if (!args.version) fail('--version is required');
  if (!args.key) fail('--key (an ed25519 private key, PEM) is required');
  const version = glVersion(args.version, '--version');
  const minVersion = glVersion(args['min-version'] ?? 'V0.0.0', '--min-version');
  if (args.beta && !version.type.startsWith('beta'))
    fail('--beta needs a beta version (V1.2.3 beta1)');
  const model = args.model ?? 'RM1';
  if (!MODELS.includes(model)) fail(`--model must be one of ${MODELS.join(', ')}`);
  const key = createPrivateKey(readFileSync(args.key));
  if (key.asymmetricKeyType !== 'ed25519') fail('--key must be an ed25519 private key');

  let tree = root;
  if (args.from) tree = resolve(args.from);
  else {
    const r = spawnSync(process.execPath, [join(root, 'scripts/build.mjs'), '--quiet'], {
      stdio: 'inherit',
    });
    if (r.status !== 0) fail('the build failed');
  }

  // The release's package.json carries its version (server/src/paths.ts productVersion).
  const pkg = JSON.parse(readFileSync(join(tree, 'package.json'), 'utf8'));
  const pkgData = Buffer.from(
    `${JSON.stringify({ name: pkg.name, version: version.npm, private: true, type: pkg.type ?? 'module' }, null, 2)}\n`,
  );
  const entries = [{ path: 'package.json', size: pkgData.length, data: pkgData }];
  for (const rel of listFiles(tree)) {
    const file = join(tree, rel);
    entries.push({ path: rel, size: statSync(file).size, file });
  }
  const manifest = {
    format: 1,
    version: version.gl,
    model,
    min_version: minVersion.gl,
    created: new Date().toISOString(),
    files: entries.map((e) => ({
      path: e.path,
      sha256: e.data ? createHash('sha256').update(e.data).digest('hex') : sha256File(e.file),
      size: e.size,
    })),
  };
  const manifestData = Buffer.from(`${JSON.stringify(manifest, null, 1)}\n`);
  const sig = Buffer.from(`${sign(null, manifestData, key).toString('base64')}\n`);

  const outDir = resolve(args.out ?? join(root, 'dist'));
  mkdirSync(outDir, { recursive: true });
  const name = `kvm-${model}-${version.npm}.pkg`;
  const outFile = join(outDir, name);
  const tar = [
    { path: 'manifest.json', size: manifestData.length, data: manifestData },
    { path: 'manifest.sig', size: sig.length, data: sig },
    ...entries.map((e) => ({ ...e, path: `files/${e.path}` })),
  ];
  // Level 6: level 9 makes a 10 MB package several times slower for ~1 % less.
  await pipeline(
    Readable.from(tarEntries(tar)),
    createGzip({ level: 6 }),
    createWriteStream(`${outFile}.tmp`),
  );
  renameSync(`${outFile}.tmp`, outFile);
  const sha = sha256File(outFile);
  process.stdout.write(`${outFile} ${statSync(outFile).size} ${sha}\n`);

  if (args.channel) {
    const ch = resolve(args.channel);
    mkdirSync(ch, { recursive: true });
    copyFileSync(outFile, join(ch, `${name}.tmp`));
    renameSync(join(ch, `${name}.tmp`), join(ch, name));
    // GL's layout (wire-protocol.md 5.6): the first line names the current release.
    writeAtomic(join(ch, 'list-sha256.txt'), `${version.release} ${basename(name)} ${sha}\n`);
    writeAtomic(
      join(ch, `metadata_${version.release}`),
      `${JSON.stringify({
        version: { release: version.release, firmware_type: version.type },
        release_note: args['release-note'] ?? '',
        release_note_cn: args['release-note-cn'] ?? '',
        model,
      })}\n`,
    );
    process.stdout.write(`${ch}/list-sha256.txt\n`);
  }
}

await main();

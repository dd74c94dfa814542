import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTrustedKeys, safePackagePath, verifyPackage } from './package-reader';
import { makePackage, makeTree } from './test-package';

let dir = '';
let pkgFile = '';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kvm-pkg-'));
  await makeTree(join(dir, 'tree'));
  await makePackage(dir, ['--gen-key', join(dir, 'k')]);
  await makePackage(dir, ['--gen-key', join(dir, 'other')]);
  pkgFile = (
    await makePackage(dir, [
      '--from',
      join(dir, 'tree'),
      '--version',
      'V0.2.0 release1',
      '--min-version',
      'V0.1.0',
      '--key',
      join(dir, 'k.key'),
      '--out',
      join(dir, 'out'),
    ])
  ).file;
}, 60_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('release package round trip', () => {
  it('verifies a package signed by a trusted key and unpacks exactly the tree', async () => {
    const keys = await loadTrustedKeys([join(dir, 'k.pub')]);
    const dest = join(dir, 'unpacked');
    const r = await verifyPackage(pkgFile, keys, 'RM1', 'V0.1.0', { extractTo: dest });
    expect(r).toMatchObject({ signature_valid: true, firmware_valid: true, reason: null });
    expect(r.manifest?.version).toBe('V0.2.0 release1');
    expect(r.manifest?.files.map((f) => f.path)).toContain('server/dist/main.js');
    expect(await readFile(join(dest, 'server', 'dist', 'main.js'), 'utf8')).toBe(
      'console.log("hello")\n',
    );
    expect(JSON.parse(await readFile(join(dest, 'package.json'), 'utf8')).version).toBe(
      '0.2.0-release1',
    );
    expect(await readdir(join(dest, 'web', 'dist', 'assets', 'a'.repeat(90)))).toEqual([
      'long-name.js',
    ]);
  });

  it('refuses a wrong key, a wrong model and a too-old local version with the right flags', async () => {
    const other = await loadTrustedKeys([await readFile(join(dir, 'other.pub'), 'utf8')]);
    expect(await verifyPackage(pkgFile, other, 'RM1', 'V0.1.0')).toMatchObject({
      signature_valid: false,
      firmware_valid: true,
    });
    const keys = await loadTrustedKeys([join(dir, 'k.pub')]);
    const model = await verifyPackage(pkgFile, keys, 'RM10', 'V0.1.0');
    expect(model).toMatchObject({ signature_valid: true, firmware_valid: false });
    expect(model.reason).toMatch(/RM1, not RM10/);
    const old = await verifyPackage(pkgFile, keys, 'RM1', 'V0.0.9');
    expect(old).toMatchObject({ signature_valid: true, firmware_valid: false });
    expect(old.reason).toMatch(/V0\.1\.0 or later/);
    // A beta of the minimum is older than the minimum (SPEC 4 order).
    expect((await verifyPackage(pkgFile, keys, 'RM1', 'V0.1.0 beta1')).firmware_valid).toBe(false);
  });

  it('refuses a flipped byte in a file, and a flipped byte in the manifest', async () => {
    const keys = await loadTrustedKeys([join(dir, 'k.pub')]);
    const tar = gunzipSync(await readFile(pkgFile));
    // The first byte of server/dist/main.js's data.
    const fileAt = tar.indexOf('console.log("hello")');
    const flipped = Buffer.from(tar);
    flipped[fileAt] = flipped[fileAt]! ^ 1;
    await writeFile(join(dir, 'flip.pkg'), gzipSync(flipped));
    const r = await verifyPackage(join(dir, 'flip.pkg'), keys, 'RM1', 'V0.1.0');
    expect(r).toMatchObject({ signature_valid: true, firmware_valid: false });
    expect(r.reason).toMatch(/server\/dist\/main\.js: sha256 mismatch/);

    const manifestAt = tar.indexOf('"model": "RM1"');
    const forged = Buffer.from(tar);
    forged.write('"model": "RM0"', manifestAt);
    await writeFile(join(dir, 'forged.pkg'), gzipSync(forged));
    const f = await verifyPackage(join(dir, 'forged.pkg'), keys, 'RM0', 'V0.1.0');
    expect(f.signature_valid).toBe(false);
  });

  it('refuses a truncated package and garbage without throwing', async () => {
    const keys = await loadTrustedKeys([join(dir, 'k.pub')]);
    const gz = await readFile(pkgFile);
    await writeFile(join(dir, 'cut.pkg'), gzipSync(gunzipSync(gz).subarray(0, 5000)));
    const cut = await verifyPackage(join(dir, 'cut.pkg'), keys, 'RM1', 'V0.1.0');
    expect(cut.firmware_valid).toBe(false);
    await writeFile(join(dir, 'junk.pkg'), randomBytes(4000));
    const junk = await verifyPackage(join(dir, 'junk.pkg'), keys, 'RM1', 'V0.1.0');
    expect(junk).toMatchObject({ signature_valid: false, firmware_valid: false });
    expect(junk.reason).toMatch(/unreadable/);
  });

  it('writes the GL channel layout; --beta wants a beta version; a bad version is refused', async () => {
    const common = ['--from', join(dir, 'tree'), '--key', join(dir, 'k.key'), '--out', dir];
    const { sha } = await makePackage(dir, [
      ...common,
      '--version',
      'V0.3.0 beta2',
      '--beta',
      '--channel',
      join(dir, 'testing'),
      '--release-note',
      'note',
    ]);
    expect(await readFile(join(dir, 'testing', 'list-sha256.txt'), 'utf8')).toBe(
      `0.3.0 kvm-RM1-0.3.0-beta2.pkg ${sha}\n`,
    );
    expect(
      JSON.parse(await readFile(join(dir, 'testing', 'metadata_0.3.0'), 'utf8')),
    ).toMatchObject({
      version: { release: '0.3.0', firmware_type: 'beta2' },
      release_note: 'note',
      release_note_cn: '',
    });
    await expect(makePackage(dir, [...common, '--version', 'V0.3.0', '--beta'])).rejects.toThrow(
      /--beta needs a beta version/,
    );
    await expect(makePackage(dir, [...common, '--version', '1.2'])).rejects.toThrow(
      /--version must look like/,
    );
  });

  it('validates paths: no .., no absolute, no empty segment', () => {
    for (const bad of ['../x', '/etc/passwd', 'a/../b', 'a//b', './a', 'a\\b', '']) {
      expect(safePackagePath(bad)).toBe(false);
    }
    expect(safePackagePath('web/dist/index.html')).toBe(true);
  });
});

import { createPrivateKey, randomBytes, type KeyObject } from 'node:crypto';
import { appendFile, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installablePath, loadTrustedKeys, safePackagePath, verifyPackage } from './package-reader';
import { craftManifest, craftPackage, makePackage, makeTree } from './test-package';

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
    // The first failed check ends the read: the files of an untrusted package are not checked.
    expect(await verifyPackage(pkgFile, other, 'RM1', 'V0.1.0')).toMatchObject({
      signature_valid: false,
      firmware_valid: false,
      reason: 'the signature is not from a trusted key',
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

describe('the reader stops at the first failed check (issue 21, item 3)', () => {
  const GiB = 1024 * 1024 * 1024;
  /** Far below any package's body: the reader took the manifest and the signature only. */
  const SMALL = 1024 * 1024;
  let priv: KeyObject;
  let keys: KeyObject[];
  beforeAll(async () => {
    priv = createPrivateKey(await readFile(join(dir, 'k.key')));
    keys = await loadTrustedKeys([join(dir, 'k.pub')]);
  });

  it('refuses an unsigned gzip bomb that declares 4 GiB after inflating only its manifest', async () => {
    const file = join(dir, 'bomb.pkg');
    const manifest = craftManifest([{ path: 'server/dist/main.js', size: 4 * GiB }]);
    await craftPackage(file, manifest, null, [{ path: 'server/dist/main.js', zeros: 4 * GiB }]);
    // A few MB on disk, as the one of the report (4.2 MB declaring 4 GiB).
    expect((await stat(file)).size).toBeLessThan(8 * 1024 * 1024);
    const dest = join(dir, 'bomb-out');
    const r = await verifyPackage(file, keys, 'RM1', 'V0.1.0', { extractTo: dest });
    expect(r).toMatchObject({
      signature_valid: false,
      firmware_valid: false,
      reason: 'the signature is not from a trusted key',
    });
    expect(r.inflated).toBeGreaterThan(0);
    expect(r.inflated).toBeLessThan(SMALL);
    // Nothing of it was written.
    await expect(readdir(dest)).rejects.toThrow(/ENOENT/);
  });

  it('a signed package stops at the manifest when the model is wrong, and at the first bad hash', async () => {
    const big = 256 * 1024 * 1024;
    const files = [
      { path: 'package.json', data: '{"version":"0.2.0"}' },
      { path: 'server/dist/main.js', size: big },
    ];
    const wrongModel = join(dir, 'model.pkg');
    await craftPackage(wrongModel, craftManifest(files, { model: 'RM10' }), priv, [
      { path: 'package.json', data: files[0]!.data },
      { path: 'server/dist/main.js', zeros: big },
    ]);
    const m = await verifyPackage(wrongModel, keys, 'RM1', 'V0.1.0');
    expect(m).toMatchObject({ signature_valid: true, firmware_valid: false });
    expect(m.reason).toMatch(/for RM10, not RM1/);
    expect(m.inflated).toBeLessThan(SMALL);

    // package.json's hash is wrong: main.js (256 MiB declared and sent) is never inflated.
    const badHash = join(dir, 'hash.pkg');
    await craftPackage(badHash, craftManifest(files), priv, [
      { path: 'package.json', data: '{"version":"6.6.6"}' },
      { path: 'server/dist/main.js', zeros: big },
    ]);
    const h = await verifyPackage(badHash, keys, 'RM1', 'V0.1.0');
    expect(h).toMatchObject({ signature_valid: true, firmware_valid: false });
    expect(h.reason).toBe('package.json: sha256 mismatch');
    expect(h.inflated).toBeLessThan(SMALL);
  });

  it('stops past its time budget (a clock that moves one second a read)', async () => {
    const big = 64 * 1024 * 1024;
    const file = join(dir, 'slow.pkg');
    await craftPackage(file, craftManifest([{ path: 'server/dist/main.js', size: big }]), priv, [
      { path: 'server/dist/main.js', zeros: big },
    ]);
    let t = 0;
    const r = await verifyPackage(file, keys, 'RM1', 'V0.1.0', {
      budgetMs: 3000,
      now: () => (t += 1000),
    });
    expect(r.firmware_valid).toBe(false);
    expect(r.reason).toMatch(/within 3 s/);
    expect(r.inflated).toBeLessThan(SMALL);
  });

  it('reads nothing after the end of the archive', async () => {
    const file = join(dir, 'tail.pkg');
    await writeFile(file, await readFile(pkgFile));
    await appendFile(file, gzipSync(Buffer.alloc(64 * 1024 * 1024)));
    const r = await verifyPackage(file, keys, 'RM1', 'V0.1.0');
    expect(r).toMatchObject({ signature_valid: true, firmware_valid: true });
    // The package's tar, and at most one read (16 KiB) of the 64 MiB after it.
    const body = gunzipSync(await readFile(pkgFile)).length;
    expect(r.inflated).toBeLessThanOrEqual(body + 16 * 1024);
  });
});

describe('a signed package installs the release tree only (issue 21, item 6)', () => {
  let priv: KeyObject;
  let keys: KeyObject[];
  beforeAll(async () => {
    priv = createPrivateKey(await readFile(join(dir, 'k.key')));
    keys = await loadTrustedKeys([join(dir, 'k.pub')]);
  });

  it('knows the installable paths', () => {
    for (const ok of ['package.json', 'server/dist/main.js', 'web/dist/assets/a.js']) {
      expect(installablePath(ok)).toBe(true);
    }
    for (const bad of [
      'etc/passwd',
      'server/src/main.ts',
      'server/dist',
      'node_modules/x/index.js',
      '.data/auth.json',
      'web/dist/../../x',
      '/server/dist/x',
      'server/distx/a',
      'package.json/x',
    ]) {
      expect(installablePath(bad)).toBe(false);
    }
  });

  it('refuses a signed manifest naming a file outside server/dist, web/dist and package.json', async () => {
    for (const path of ['server/launcher.js', 'node_modules/node-pty/lib/index.js', '.data/x']) {
      const file = join(dir, 'outside.pkg');
      const dest = join(dir, 'outside-out');
      await craftPackage(file, craftManifest([{ path, data: 'x' }]), priv, [{ path, data: 'x' }]);
      const r = await verifyPackage(file, keys, 'RM1', 'V0.1.0', { extractTo: dest });
      // Signed by a trusted key, and refused all the same.
      expect(r).toMatchObject({ signature_valid: true, firmware_valid: false });
      expect(r.reason).toBe(
        `manifest: ${JSON.stringify(path)} is outside package.json, server/dist and web/dist`,
      );
      await expect(readdir(dest)).rejects.toThrow(/ENOENT/);
    }
    for (const path of ['server/dist/../../etc/x', '/server/dist/x']) {
      const file = join(dir, 'dots.pkg');
      await craftPackage(file, craftManifest([{ path, data: 'x' }]), priv, [{ path, data: 'x' }]);
      const r = await verifyPackage(file, keys, 'RM1', 'V0.1.0');
      expect(r.firmware_valid).toBe(false);
      expect(r.reason).toMatch(/bad file entry/);
    }
  });

  it('refuses a symlink or a folder entry even when the manifest lists its path', async () => {
    const path = 'server/dist/main.js';
    for (const type of ['2', '1', '5']) {
      const file = join(dir, `link-${type}.pkg`);
      const dest = join(dir, `link-${type}-out`);
      await craftPackage(file, craftManifest([{ path, data: '' }]), priv, [
        { path, data: '', type },
      ]);
      const r = await verifyPackage(file, keys, 'RM1', 'V0.1.0', { extractTo: dest });
      expect(r.firmware_valid).toBe(false);
      expect(r.reason).toBe(`files/${path}: not a regular file`);
      expect(await readdir(dest).catch(() => [])).toEqual([]);
    }
  });
});

describe('an older release is a downgrade (issue 21, item 6)', () => {
  it('refuses it unless allowDowngrade, and says it is older', async () => {
    const keys = await loadTrustedKeys([join(dir, 'k.pub')]);
    const r = await verifyPackage(pkgFile, keys, 'RM1', 'V0.3.0');
    expect(r).toMatchObject({ signature_valid: true, firmware_valid: false, downgrade: true });
    expect(r.reason).toMatch(/V0\.2\.0 release1\) is older than the running version \(V0\.3\.0\)/);
    const ok = await verifyPackage(pkgFile, keys, 'RM1', 'V0.3.0', { allowDowngrade: true });
    expect(ok).toMatchObject({ signature_valid: true, firmware_valid: true, downgrade: false });
    // The same version again is not a downgrade (a reinstall).
    const same = await verifyPackage(pkgFile, keys, 'RM1', 'V0.2.0 release1');
    expect(same).toMatchObject({ firmware_valid: true, downgrade: false });
    // An unsigned older package answers the signature first.
    const other = await loadTrustedKeys([join(dir, 'other.pub')]);
    const u = await verifyPackage(pkgFile, other, 'RM1', 'V0.3.0');
    expect(u).toMatchObject({ signature_valid: false, downgrade: false });
  });
});

import { mkdir, readFile, readdir, stat, symlink, writeFile, chmod } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  STALE_TEMP_MAX_DEPTH,
  atomicWriteFile,
  atomicWriteFileSync,
  removeStaleTemps,
} from './atomic';
import { JsonFile } from './json-store';
import { testTempDir } from '../test-temp';

async function tempDir(): Promise<string> {
  return testTempDir('atomic');
}

describe('atomicWriteFile', () => {
  it('replaces the whole file and leaves no temp behind', async () => {
    const dir = await tempDir();
    const path = join(dir, 'state.json');
    await writeFile(path, 'old content that is longer than the new one');
    await atomicWriteFile(path, 'new');
    expect(await readFile(path, 'utf8')).toBe('new');
    expect(await readdir(dir)).toEqual(['state.json']);
  });

  it('tmpDir: the temp is made beside the folder, never in it; overlapping writes all land', async () => {
    const dir = await tempDir();
    const path = join(dir, 'ns', 'resolv.conf');
    const seen: string[][] = [];
    const writes = Array.from({ length: 10 }, (_, i) =>
      atomicWriteFile(path, `nameserver 10.0.0.${i}\n`, 0o644, { tmpDir: dir }).then(async () => {
        seen.push(await readdir(join(dir, 'ns')));
      }),
    );
    await Promise.all(writes);
    expect(await readFile(path, 'utf8')).toMatch(/^nameserver 10\.0\.0\.\d\n$/);
    // The folder held resolv.conf only, every time; the temps were all renamed.
    expect(seen.every((names) => names.join() === 'resolv.conf')).toBe(true);
    expect(await readdir(dir)).toEqual(['ns']);
  });

  it('keeps the old file when the write fails', async () => {
    const dir = await tempDir();
    const path = join(dir, 'state.json');
    await writeFile(path, 'old');
    await chmod(dir, 0o500);
    try {
      // root ignores directory permissions; simulate the failure with a missing parent instead
      await expect(atomicWriteFile(join(path, 'child'), 'x')).rejects.toThrow();
    } finally {
      await chmod(dir, 0o700);
    }
    expect(await readFile(path, 'utf8')).toBe('old');
  });

  it('cleans temp files a crash left', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, '.state.json.tmp-abcdef'), 'half');
    await writeFile(join(dir, 'state.json'), 'whole');
    expect(await removeStaleTemps(dir)).toBe(1);
    expect(await readdir(dir)).toEqual(['state.json']);
  });

  it('cleans them in every subfolder, not through links, and takes nothing else', async () => {
    const dir = await tempDir();
    const outside = await tempDir();
    await writeFile(join(outside, '.keep.json.tmp-0123456789ab'), 'not ours');
    await mkdir(join(dir, 'msd', 'images', 'isos'), { recursive: true });
    await mkdir(join(dir, 'auth'));
    const temps = [
      '.settings.json.tmp-0123456789ab',
      'auth/.sessions.json.tmp-00ff00ff00ff',
      'msd/.state.json.tmp-abcdefabcdef',
      'msd/images/isos/.x.tmp-aaaaaaaaaaaa',
    ];
    const kept = [
      'settings.json',
      'msd/state.json',
      'msd/images/isos/x.iso',
      // an image's marker, even for a name that looks like a temp
      'msd/images/isos/.__y.tmp-0123456789ab.incomplete',
      'msd/images/isos/y.tmp-0123456789ab',
    ];
    for (const f of [...temps, ...kept]) await writeFile(join(dir, f), 'x');
    await symlink(outside, join(dir, 'link'));
    expect(await removeStaleTemps(dir)).toBe(temps.length);
    for (const f of kept) expect(await readFile(join(dir, f), 'utf8')).toBe('x');
    for (const f of temps) await expect(readFile(join(dir, f))).rejects.toThrow(/ENOENT/);
    expect(await readdir(outside)).toEqual(['.keep.json.tmp-0123456789ab']);
  });

  it(`looks ${STALE_TEMP_MAX_DEPTH} folders deep, no deeper`, async () => {
    const dir = await tempDir();
    const levels = Array.from({ length: STALE_TEMP_MAX_DEPTH + 1 }, (_, i) => `d${i}`);
    await mkdir(join(dir, ...levels), { recursive: true });
    await writeFile(join(dir, ...levels.slice(0, -1), '.a.tmp-0a'), 'x');
    await writeFile(join(dir, ...levels, '.b.tmp-0b'), 'x');
    expect(await removeStaleTemps(dir)).toBe(1);
    expect(await readdir(join(dir, ...levels))).toEqual(['.b.tmp-0b']);
  });
});

describe('JsonFile', () => {
  it('serialises concurrent saves in call order', async () => {
    const dir = await tempDir();
    const file = new JsonFile(join(dir, 'doc.json'), (raw) => (raw ?? { n: -1 }) as { n: number });
    expect(await file.load()).toEqual({ n: -1 });
    await Promise.all(Array.from({ length: 20 }, (_, n) => file.save({ n })));
    expect(await file.load()).toEqual({ n: 19 });
  });

  it('idle() waits for saves nobody awaited, a failed one included', async () => {
    const dir = await tempDir();
    const path = join(dir, 'doc.json');
    const file = new JsonFile(path, (raw) => (raw ?? { n: -1 }) as { n: number });
    void file.save({ n: 1 });
    void file.save({ n: 2 });
    await file.idle();
    expect(JSON.parse(await readFile(path, 'utf8'))).toEqual({ n: 2 });
    // a save that fails (a folder where the file should be) does not stop the next
    const blocked = new JsonFile(join(dir, 'sub'), (raw) => raw);
    await mkdir(join(dir, 'sub'));
    const failed = blocked.save({ x: 1 }).catch((e: unknown) => e);
    await blocked.idle();
    expect(await failed).toBeInstanceOf(Error);
  });

  it('refuses a corrupt file instead of overwriting it silently', async () => {
    const dir = await tempDir();
    const path = join(dir, 'doc.json');
    await writeFile(path, '{"half":');
    const file = new JsonFile(path, (raw) => raw);
    await expect(file.load()).rejects.toThrow(/not valid JSON/);
  });
});

describe("atomicWriteFileSync (the launcher's records)", () => {
  it('writes 0600 through a temp of the same name scheme, and leaves none when it fails', async () => {
    const dir = await tempDir();
    const path = join(dir, 'trial.json');
    atomicWriteFileSync(path, '{"a":1}\n');
    expect(await readFile(path, 'utf8')).toBe('{"a":1}\n');
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    atomicWriteFileSync(path, '{"a":2}\n');
    expect(await readFile(path, 'utf8')).toBe('{"a":2}\n');
    expect(await readdir(dir)).toEqual(['trial.json']);
    // a folder where the file should be: the rename fails, the temp is removed
    await mkdir(join(dir, 'taken'));
    expect(() => atomicWriteFileSync(join(dir, 'taken'), 'x')).toThrow();
    expect((await readdir(dir)).sort()).toEqual(['taken', 'trial.json']);
  });
});

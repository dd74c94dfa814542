import { mkdtemp, readFile, readdir, writeFile, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { atomicWriteFile, removeStaleTemps } from './atomic';
import { JsonFile } from './json-store';

async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'kvm-atomic-'));
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
});

describe('JsonFile', () => {
  it('serialises concurrent saves in call order', async () => {
    const dir = await tempDir();
    const file = new JsonFile(join(dir, 'doc.json'), (raw) => (raw ?? { n: -1 }) as { n: number });
    expect(await file.load()).toEqual({ n: -1 });
    await Promise.all(Array.from({ length: 20 }, (_, n) => file.save({ n })));
    expect(await file.load()).toEqual({ n: 19 });
  });

  it('refuses a corrupt file instead of overwriting it silently', async () => {
    const dir = await tempDir();
    const path = join(dir, 'doc.json');
    await writeFile(path, '{"half":');
    const file = new JsonFile(path, (raw) => raw);
    await expect(file.load()).rejects.toThrow(/not valid JSON/);
  });
});

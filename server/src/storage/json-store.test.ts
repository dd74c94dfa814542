import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDataDir } from '../test-helpers';
import { CorruptFileError, JsonFile } from './json-store';

const asList = (raw: unknown): number[] => {
  if (raw === undefined) return [];
  if (!Array.isArray(raw)) throw new Error('not a list');
  return raw as number[];
};

describe('JsonFile set aside', () => {
  it('a corrupt file is set aside as <name>.bad-<time> by default', async () => {
    const path = join(await tempDataDir(), 'doc.json');
    await writeFile(path, '{"a": ');
    const file = new JsonFile(path, asList);
    await expect(file.load()).rejects.toBeInstanceOf(CorruptFileError);
    const aside = await file.setAside();
    expect(aside).toMatch(/doc\.json\.bad-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$/);
    expect(await readFile(aside, 'utf8')).toBe('{"a": ');
  });

  it("takes the document's own aside name, replacing an older one of that name", async () => {
    const dir = await tempDataDir();
    const path = join(dir, 'doc.json');
    const file = new JsonFile(path, asList, { asideName: (p) => `${p}.old` });
    await writeFile(path, '{}');
    await expect(file.load()).rejects.toMatchObject({ reason: 'not a list' });
    expect(await file.setAside()).toBe(`${path}.old`);
    await writeFile(path, 'x');
    expect(await file.setAside()).toBe(`${path}.old`);
    expect(await readFile(`${path}.old`, 'utf8')).toBe('x');
    expect(await readdir(dir)).toEqual(['doc.json.old']);
    expect(await file.load()).toEqual([]);
  });
});

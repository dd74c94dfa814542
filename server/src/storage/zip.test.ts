import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { ZipError, buildZip, readZip, zipEntries } from './zip';

let dir = '';
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = '';
});

describe('zip writer', () => {
  it('round-trips text, binary (stored) and nested names', () => {
    const random = randomBytes(4096);
    const zip = buildZip([
      { name: 'a.txt', data: 'hello '.repeat(1000) },
      { name: 'logs/server.log', data: 'línea\n' },
      { name: 'img.bin', data: random },
      { name: 'empty', data: '' },
    ]);
    const back = readZip(zip);
    expect([...back.keys()]).toEqual(['a.txt', 'logs/server.log', 'img.bin', 'empty']);
    expect(back.get('a.txt')!.toString()).toBe('hello '.repeat(1000));
    expect(back.get('logs/server.log')!.toString()).toBe('línea\n');
    expect(back.get('img.bin')!.equals(random)).toBe(true);
    expect(back.get('empty')!.length).toBe(0);
    expect(zip.length).toBeLessThan(6000 + 4096);
  });

  it('is read by unzip (Info-ZIP) when installed', async () => {
    dir = await mkdtemp(join(tmpdir(), 'kvm-zip-'));
    const file = join(dir, 'x.zip');
    await writeFile(file, buildZip([{ name: 'dir/x.txt', data: 'abc\n'.repeat(100) }]));
    const run = promisify(execFile);
    let out: string;
    try {
      out = (await run('unzip', ['-t', file], { timeout: 10_000 })).stdout;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        // Python's zipfile checks it instead.
        out = (
          await run(
            'python3',
            [
              '-c',
              'import sys,zipfile;z=zipfile.ZipFile(sys.argv[1]);print(z.testzip(),z.namelist())',
              file,
            ],
            { timeout: 10_000 },
          )
        ).stdout;
        expect(out).toContain("None ['dir/x.txt']");
        return;
      }
      throw err;
    }
    expect(out).toContain('No errors detected');
  });
});

describe('zip reader (one for every caller)', () => {
  it('reads what the writer makes, with the strict checks of a firmware package', () => {
    const zip = buildZip([
      { name: 'a.txt', data: 'x'.repeat(5000) },
      { name: 'b.bin', data: randomBytes(100) },
    ]);
    expect(zipEntries(zip).map((e) => [e.name, e.size])).toEqual([
      ['a.txt', 5000],
      ['b.bin', 100],
    ]);
    expect(readZip(zip).get('a.txt')!.toString()).toBe('x'.repeat(5000));
    // the limits are the caller's: the same archive is refused under smaller ones
    expect(() =>
      readZip(zip, { maxEntries: 64, entryMaxBytes: 4096, totalMaxBytes: 1 << 20 }),
    ).toThrow('entry a.txt declares 5000 bytes (at most 4096)');
    expect(() =>
      readZip(zip, { maxEntries: 1, entryMaxBytes: 1 << 20, totalMaxBytes: 1 << 20 }),
    ).toThrow('too many entries (2, at most 1)');
  });

  it('refuses a repeated name and a local header that disagrees with the directory', () => {
    const twice = buildZip([
      { name: 'same', data: 'first' },
      { name: 'same', data: 'second' },
    ]);
    expect(() => readZip(twice)).toThrow(ZipError);
    expect(() => readZip(twice)).toThrow('entry same is there twice');
    const lying = Buffer.from(buildZip([{ name: 'f', data: 'content' }]));
    lying.writeUInt32LE(lying.readUInt32LE(22) + 1, 22); // the local header's size
    expect(() => readZip(lying)).toThrow('the local header disagrees with the directory');
  });
});

import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { NodeGadgetFs } from './configfs';

let dir: string | null = null;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = null;
});

describe('NodeGadgetFs', () => {
  it('writes an empty value as one newline, so configfs gets a write at all (UDC "" unbinds)', async () => {
    dir = await mkdtemp(join(tmpdir(), 'gadget-fs-'));
    const udc = join(dir, 'UDC');
    await writeFile(udc, 'dummy_udc.0\n');
    await new NodeGadgetFs().writeFile(udc, '');
    expect(await readFile(udc, 'utf8')).toBe('\n');
    await new NodeGadgetFs().writeFile(udc, 'dummy_udc.0');
    expect(await readFile(udc, 'utf8')).toBe('dummy_udc.0');
    await new NodeGadgetFs().writeFile(udc, Uint8Array.of(5, 1));
    expect([...(await readFile(udc))]).toEqual([5, 1]);
  });
});

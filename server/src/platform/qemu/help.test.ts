import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { qemuHelp } from './help';
import { hasSpice } from './machine';
import { hasPulseBackend } from './pulse';

let dir: string;
let qemu: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kvm-qemu-help-'));
  qemu = join(dir, 'qemu-system-fake');
  // A QEMU without SPICE whose audio backends are none and pa; it counts its runs.
  await writeFile(
    qemu,
    `#!/bin/sh
echo "$1" >> "${dir}/runs"
case "$1" in
  -audiodev) printf 'Available audio drivers:\\nnone\\npa\\n' ;;
  *) echo "qemu-system-fake: $1: unknown option" >&2; exit 1 ;;
esac
`,
  );
  await chmod(qemu, 0o755);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('qemuHelp', () => {
  it("answers the binary's help output, null when the option is not built in, once each", async () => {
    expect(await qemuHelp(qemu, '-audiodev')).toBe('Available audio drivers:\nnone\npa\n');
    expect(await qemuHelp(qemu, '-spice')).toBeNull();
    expect(await hasPulseBackend(qemu)).toBe(true);
    expect(await hasSpice(qemu)).toBe(false);
    expect((await readFile(join(dir, 'runs'), 'utf8')).split('\n').filter(Boolean)).toEqual([
      '-audiodev',
      '-spice',
    ]);
  });

  it('a binary that does not exist has neither', async () => {
    expect(await hasSpice(join(dir, 'missing'))).toBe(false);
    expect(await hasPulseBackend(join(dir, 'missing'))).toBe(false);
  });
});

import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EDID_PRESETS } from '@kvm/protocol';
import { afterAll, describe, expect, it } from 'vitest';

const EDID_DECODE = '/usr/bin/edid-decode';

describe('presets against edid-decode', () => {
  const dir = mkdtempSync(join(tmpdir(), 'edid-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.skipIf(!existsSync(EDID_DECODE)).each(EDID_PRESETS.map((p) => [p.key, p.content]))(
    '%s conforms',
    (key, content) => {
      const file = join(dir, `${key}.bin`);
      writeFileSync(file, Buffer.from(content, 'hex'));
      let out: string;
      try {
        out = execFileSync(EDID_DECODE, ['-c', file], { encoding: 'utf8', timeout: 10_000 });
      } catch (err) {
        out = String((err as { stdout?: string }).stdout ?? err);
      }
      expect(out).toContain('EDID conformity: PASS');
      expect(out).not.toMatch(/^(Warnings|Failures):/m);
    },
  );
});

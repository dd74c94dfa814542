import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EDID_INVALID_MESSAGE, EDID_PRESETS } from '@kvm/protocol';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { DisplayDriver, DisplayMode } from '../../drivers/display/types';
import { checkEdid, EDID_APPLIED, EdidBusyError, EdidService } from './edid-service';

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

/** A display that records what it was given; `gate` holds an apply until released. */
class FakeDisplay implements DisplayDriver {
  readonly name = 'fake';
  readonly applies = 'power_cycle' as const;
  applied: DisplayMode[] = [];
  fail: Error | null = null;
  gate: Promise<void> | null = null;
  async apply(_edid: Buffer, mode: DisplayMode): Promise<void> {
    await this.gate;
    if (this.fail) throw this.fail;
    this.applied.push(mode);
  }
  pending(): boolean {
    return this.applied.length > 0;
  }
  current(): DisplayMode | null {
    return { width: 1024, height: 768, hz: 60 };
  }
  async init(): Promise<void> {}
  async dispose(): Promise<void> {}
}

describe('EdidService', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'edid-service-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const preset = EDID_PRESETS[1]!; // 3840x2160

  it('reports the display own mode before any EDID', async () => {
    const svc = new EdidService({ dataDir: dir, display: new FakeDisplay() });
    await svc.start();
    expect(svc.state()).toEqual({
      edid: '',
      preset: null,
      preferred: { width: 1024, height: 768, hz: 60 },
      applies: 'power_cycle',
      pending: false,
    });
  });

  it('a second submit while one applies answers 409; nothing runs in parallel', async () => {
    const display = new FakeDisplay();
    let release!: () => void;
    display.gate = new Promise((r) => (release = r));
    const svc = new EdidService({ dataDir: dir, display });
    const first = svc.submit(preset.content);
    await vi.waitFor(async () => {
      expect(await readFile(join(dir, 'system', 'edid.txt'), 'utf8')).toBe(preset.content);
    });
    await expect(svc.submit(preset.content)).rejects.toBeInstanceOf(EdidBusyError);
    release();
    await expect(first).resolves.toEqual(EDID_APPLIED);
    expect(display.applied).toEqual([{ width: 3840, height: 2160, hz: 30 }]);
    expect(svc.state()).toMatchObject({ preset: 'E3840x2160', pending: true });
  });

  it('a failing display leaves the text saved (GL: saved before applied) and throws', async () => {
    const display = new FakeDisplay();
    display.fail = new Error('display gone');
    const svc = new EdidService({ dataDir: dir, display });
    await expect(svc.submit(preset.content)).rejects.toThrow('display gone');
    expect(await readFile(join(dir, 'system', 'edid.txt'), 'utf8')).toBe(preset.content);
    expect(svc.state().edid).toBe(preset.content);
  });

  it('re-applies the saved EDID at start; a corrupt file is ignored', async () => {
    const display = new FakeDisplay();
    await new EdidService({ dataDir: dir, display }).submit(preset.content);
    const again = new FakeDisplay();
    await new EdidService({ dataDir: dir, display: again }).start();
    expect(again.applied).toEqual([{ width: 3840, height: 2160, hz: 30 }]);

    await writeFile(join(dir, 'system', 'edid.txt'), 'not an edid');
    const third = new FakeDisplay();
    const svc = new EdidService({ dataDir: dir, display: third });
    await svc.start();
    expect(third.applied).toEqual([]);
    expect(svc.state().edid).toBe('');
  });

  it('rejects what parseEdidHex rejects and an EDID without a detailed timing', async () => {
    const svc = new EdidService({ dataDir: dir, display: new FakeDisplay() });
    await expect(svc.submit(42)).rejects.toThrow(EDID_INVALID_MESSAGE);
    const bytes = Buffer.from(preset.content, 'hex');
    bytes.fill(0, 54, 72); // no DTD left in the base block
    let sum = 0;
    for (let i = 0; i < 127; i += 1) sum += bytes[i]!;
    bytes[127] = (256 - (sum % 256)) % 256;
    expect(checkEdid(bytes.toString('hex'))).toBeNull();
    await expect(svc.submit(bytes.toString('hex'))).rejects.toThrow(EDID_INVALID_MESSAGE);
  });
});

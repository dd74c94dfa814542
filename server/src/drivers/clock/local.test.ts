import { existsSync, lstatSync, mkdtempSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalClock, ZONEINFO_DIR } from './local';

// Only the offset kind is exercised: the system kind sets this machine's clock.
describe('LocalClock (offset kind, real zoneinfo, tmp root)', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'localclock-'));
  });
  afterEach(() => {
    rmSync(root, { recursive: true, force: true });
  });

  it.skipIf(!existsSync(join(ZONEINFO_DIR, 'Europe/Berlin')))(
    'sets the zone as a symlink into zoneinfo plus etc/timezone, and reads it back',
    async () => {
      const c = new LocalClock({ root, kind: 'offset' });
      expect(await c.zone()).toBe('UTC');
      await c.setZone('Europe/Berlin');
      const link = join(root, 'etc', 'localtime');
      expect(lstatSync(link).isSymbolicLink()).toBe(true);
      expect(readlinkSync(link)).toBe(join(ZONEINFO_DIR, 'Europe/Berlin'));
      expect(readFileSync(join(root, 'etc', 'timezone'), 'utf8')).toBe('Europe/Berlin\n');
      expect(await c.zone()).toBe('Europe/Berlin');
      // replaced by rename: no temporary link left behind
      await c.setZone('Etc/GMT-8');
      expect(await new LocalClock({ root, kind: 'offset' }).zone()).toBe('Etc/GMT-8');
      expect(existsSync(`${link}.tmp-${process.pid}`)).toBe(false);
      expect(existsSync(join(root, 'etc', 'timezone.tmp'))).toBe(false);
    },
  );

  it('refuses a zone the database does not have, leaving the old one', async () => {
    const c = new LocalClock({ root, kind: 'offset' });
    await c.setZone('UTC');
    await expect(c.setZone('Mars/Olympus_Mons')).rejects.toThrow(/no zone file/);
    expect(await c.zone()).toBe('UTC');
  });

  it('keeps the set time as an offset that survives a new instance', async () => {
    const c = new LocalClock({ root, kind: 'offset' });
    await c.init();
    const target = Date.UTC(2031, 0, 1, 12, 0, 0);
    await c.setTime(target);
    expect(Math.abs(c.now() - target)).toBeLessThan(1000);
    const again = new LocalClock({ root, kind: 'offset' });
    await again.init();
    expect(Math.abs(again.now() - target)).toBeLessThan(5000);
    // the host clock is untouched
    expect(Math.abs(Date.now() - target)).toBeGreaterThan(60_000);
  });

  it('starts at the host clock without an offset file', async () => {
    const c = new LocalClock({ root, kind: 'offset' });
    await c.init();
    expect(Math.abs(c.now() - Date.now())).toBeLessThan(1000);
  });
});

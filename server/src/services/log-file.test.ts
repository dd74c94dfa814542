import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { testTempDir } from '../test-temp';
import { RotatingLogFile } from './log-file';

describe('RotatingLogFile', () => {
  it('rotates at the size limit and keeps a fixed number of files', async () => {
    const dir = await testTempDir('log');
    try {
      const log = new RotatingLogFile(join(dir, 'server.log'), 100, 3);
      for (let i = 0; i < 12; i += 1)
        log.write(`line ${String(i).padStart(2, '0')} ${'x'.repeat(30)}\n`);
      log.close();
      expect((await readdir(dir)).sort()).toEqual(['server.log', 'server.log.1', 'server.log.2']);
      const newest = await readFile(join(dir, 'server.log'), 'utf8');
      expect(newest).toContain('line 11');
      expect(newest.length).toBeLessThanOrEqual(100);
      const oldest = await readFile(join(dir, 'server.log.2'), 'utf8');
      expect(oldest).not.toContain('line 00');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('RotatingLogFile on a full disk', () => {
  it('never throws: a log line must not fail a request or crash the process', () => {
    // /dev/full answers every write with ENOSPC
    const log = new RotatingLogFile('/dev/full', 1024 * 1024, 2);
    expect(() => log.write('{"msg":"a line"}\n')).not.toThrow();
    expect(log.write('{"msg":"another"}\n')).toBe(true);
    log.close();
  });
});

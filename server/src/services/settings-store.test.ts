import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { USER_CONFIG_DEFAULTS } from '@kvm/protocol';
import type { Logger } from '../log';
import { tempDataDir } from '../test-helpers';
import { SettingsStore } from './settings-store';

function recorder(): Logger & { lines: Array<{ level: string; msg: string; obj: object }> } {
  const lines: Array<{ level: string; msg: string; obj: object }> = [];
  const at =
    (level: string) =>
    (obj: object, msg: string): void => {
      lines.push({ level, msg, obj });
    };
  return { lines, info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug') };
}

/** `{"a":[[[…]]]}` indented two spaces a level, as an older server wrote it: quadratic bytes. */
function deepIndented(levels: number): string {
  let text = '1';
  for (let i = 0; i < levels; i += 1) text = `[\n${'  '.repeat(i + 1)}${text}\n]`;
  return `{"a": ${text}}`;
}

describe('SettingsStore.open with a stored file it cannot use', () => {
  it.each([
    ['garbage', 'this is not { json'],
    ['nested past the depth bound', JSON.stringify({ a: [[[[[[[[[[1]]]]]]]]]] })],
  ])('%s: serves the defaults, warns, keeps the file aside', async (_name, content) => {
    const dir = await tempDataDir();
    await writeFile(join(dir, 'user-config.json'), content);
    const log = recorder();
    const store = await SettingsStore.open(dir, log);
    expect(store.get()).toEqual(USER_CONFIG_DEFAULTS);
    const files = await readdir(dir);
    expect(files).not.toContain('user-config.json');
    const aside = files.find((f) => f.startsWith('user-config.json.bad-'));
    expect(aside).toBeDefined();
    expect(await readFile(join(dir, aside!), 'utf8')).toBe(content);
    expect(log.lines.some((l) => l.level === 'warn')).toBe(true);
  });

  it('an 18 MB file is not read: defaults, warning, kept aside', async () => {
    const dir = await tempDataDir();
    const text = deepIndented(3000);
    expect(text.length).toBeGreaterThan(9_000_000);
    await writeFile(join(dir, 'user-config.json'), text);
    const log = recorder();
    const store = await SettingsStore.open(dir, log);
    expect(store.get()).toEqual(USER_CONFIG_DEFAULTS);
    expect((await readdir(dir)).some((f) => f.startsWith('user-config.json.bad-'))).toBe(true);
    expect(log.lines.find((l) => l.level === 'warn')?.obj).toMatchObject({
      reason: expect.stringMatching(/bytes, over/),
    });
  });

  it('an unreadable file (an I/O error, not bad content) is left in place and logged as an error', async () => {
    const dir = await tempDataDir();
    // a directory in its place: EISDIR, as a permission or media error would be, says nothing
    // about the content, so nothing may be moved or overwritten
    await mkdir(join(dir, 'user-config.json'));
    const log = recorder();
    const store = await SettingsStore.open(dir, log);
    expect(store.get()).toEqual(USER_CONFIG_DEFAULTS);
    expect(await readdir(dir)).toEqual(['user-config.json']);
    expect(log.lines.find((l) => l.level === 'error')?.obj).toMatchObject({ code: 'EISDIR' });
  });
});

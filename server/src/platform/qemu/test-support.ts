/** Shared by the QEMU driver tests (not shipped): the guest image, polling, /proc checks. */
import { spawnSync } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { REPO_ROOT } from '../../paths';

/** Builds the guest if needed (quick and silent when it is there already). */
export function ensureGuestImage(): void {
  const r = spawnSync(
    process.execPath,
    [join(REPO_ROOT, 'scripts', 'build-guest.mjs'), '--quiet'],
    {
      encoding: 'utf8',
    },
  );
  if (r.status !== 0) throw new Error(`build-guest failed: ${r.stderr}`);
}

export async function until<T>(
  what: string,
  fn: () => T | Promise<T>,
  timeoutMs = 10_000,
): Promise<NonNullable<T>> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value) return value as NonNullable<T>;
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Pids of live processes whose command line mentions `text`. */
export async function processesMentioning(text: string): Promise<number[]> {
  const found: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const stat = await readFile(join('/proc', name, 'stat'), 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue;
      const cmdline = await readFile(join('/proc', name, 'cmdline'), 'utf8');
      if (cmdline.includes(text)) found.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** The guest's serial log, or '' before QEMU created it. */
export async function readSerial(path: string): Promise<string> {
  return readFile(path, 'utf8').catch(() => '');
}

import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Launcher } from './launcher';

/** A stand-in server: `crash` exits 1 at once, `config` exits 2, `serve` runs until SIGTERM. */
const FAKE = `
const mode = process.argv[2];
if (mode === 'crash') process.exit(1);
if (mode === 'config') process.exit(2);
process.on('SIGTERM', () => process.exit(0));
setInterval(() => {}, 1000);
`;

const FAST = { firstDelayMs: 20, maxDelayMs: 80, resetAfterMs: 60_000 };
let running: Launcher | null = null;
afterEach(() => {
  running?.stop();
  running = null;
});

async function fake(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'kvm-launcher-'));
  const entry = join(dir, 'server.mjs');
  await writeFile(entry, FAKE);
  return entry;
}

describe('Launcher', () => {
  it('restarts a crashing server with a doubling, capped wait', async () => {
    const lines: string[] = [];
    const launcher = new Launcher({
      entry: await fake(),
      args: ['crash'],
      policy: FAST,
      log: (l) => lines.push(l),
    });
    running = launcher;
    launcher.start();
    await expect.poll(() => launcher.starts, { timeout: 15_000 }).toBeGreaterThanOrEqual(5);
    const waits = lines.map((l) => Number(/restarting in (\d+) ms/.exec(l)?.[1]));
    expect(waits.slice(0, 4)).toEqual([20, 40, 80, 80]);
    expect(lines[0]).toContain('code 1');
  });

  it('does not restart a server that refused its config (exit 2)', async () => {
    let stopped: number | null = null;
    const launcher = new Launcher({
      entry: await fake(),
      args: ['config'],
      policy: FAST,
      log: () => undefined,
      onStopped: (code) => (stopped = code),
    });
    launcher.start();
    await expect.poll(() => stopped).toBe(2);
    expect(launcher.starts).toBe(1);
    expect(launcher.current).toBe('stopped');
  });

  it('forwards SIGTERM and ends with the server, without a restart', async () => {
    let stopped: number | null = null;
    const launcher = new Launcher({
      entry: await fake(),
      args: ['serve'],
      policy: FAST,
      log: () => undefined,
      onStopped: (code) => (stopped = code),
    });
    launcher.start();
    await expect.poll(() => launcher.current).toBe('running');
    launcher.stop('SIGTERM');
    await expect.poll(() => stopped).toBe(0);
    expect(launcher.starts).toBe(1);
  });
});

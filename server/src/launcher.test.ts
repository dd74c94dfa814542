import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { testTempDir } from './test-temp';
import {
  readCurrent,
  readOutcome,
  readTrial,
  writeTrial,
  type InstallLayout,
} from './install/install-dir';
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
  const dir = await testTempDir('launcher');
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

/**
 * A slot's stand-in server: writes which version it is to `<data>/booted`, then by its mode
 * (a file in the slot) sends READY, exits 1, stays silent, exits 3 (an upgrade is ready), or
 * sends READY naming a problem of its start (its network could not be restored).
 */
const SLOT_SERVER = `
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;
const mode = readFileSync(join(root, 'mode'), 'utf8').trim();
appendFileSync(process.argv[2], version + ' ' + (process.env.KVM_INSTALL_DIR ? 'env' : '-') + '\\n');
process.on('SIGTERM', () => process.exit(0));
if (mode === 'crash') process.exit(1);
if (mode === 'ready') process.send({ type: 'kvm-ready', version });
if (mode === 'problems') {
  process.send({ type: 'kvm-ready', version, problems: ['the saved network settings could not be applied: ENOENT'] });
}
if (mode === 'upgrade') {
  // once: the version it restarts into after a rollback just runs
  writeFileSync(join(root, 'mode'), 'ready');
  process.send({ type: 'kvm-ready', version });
  setTimeout(() => process.exit(3), 50);
}
setInterval(() => {}, 1000);
`;

async function slotTree(dir: string, version: string, mode: string): Promise<void> {
  await mkdir(join(dir, 'server', 'dist'), { recursive: true });
  await writeFile(join(dir, 'package.json'), JSON.stringify({ version, type: 'module' }));
  await writeFile(join(dir, 'server', 'dist', 'main.js'), SLOT_SERVER);
  await writeFile(join(dir, 'mode'), mode);
}

describe('Launcher with an install folder', () => {
  async function setup(newMode: string) {
    const root = await testTempDir('launcher-ab');
    const install: InstallLayout = {
      factoryRoot: join(root, 'factory'),
      installDir: join(root, 'install'),
    };
    await slotTree(install.factoryRoot, '0.1.0', 'ready');
    await slotTree(join(install.installDir, 'slots', 'a'), '0.2.0', newMode);
    const booted = join(root, 'booted');
    await writeFile(booted, '');
    const lines: string[] = [];
    const launcher = new Launcher({
      install,
      args: [booted],
      policy: FAST,
      healthTimeoutMs: 1500,
      log: (l) => lines.push(l),
    });
    running = launcher;
    const boots = async () => (await readFile(booted, 'utf8')).split('\n').filter(Boolean);
    const askUpgrade = () =>
      writeTrial(install, {
        id: 'u1',
        from_slot: 'factory',
        to_slot: 'a',
        from_version: 'V0.1.0',
        to_version: 'V0.2.0',
        save_config: true,
        data_dir: join(root, 'data'),
        data_aside: null,
        attempts: 0,
        created_at: new Date().toISOString(),
      });
    return { install, launcher, boots, askUpgrade, lines };
  }

  it('a trial left by a launcher that was stopped is tried at the next start', async () => {
    const s = await setup('ready');
    s.launcher.start();
    await expect.poll(s.boots).toEqual(['0.1.0 env']);
    s.askUpgrade();
    s.launcher.stop();
    running = new Launcher({
      install: s.install,
      args: [(await testTempDir('launcher-b')) + '/booted'],
      policy: FAST,
      log: () => undefined,
    });
    // a fresh launcher over the same folder: the trial is picked up at its first boot
    running.start();
    await expect.poll(() => readOutcome(s.install)?.result, { timeout: 10_000 }).toBe('success');
    expect(readCurrent(s.install)).toBe('a');
    expect(readTrial(s.install)).toBeNull();
  });

  it('restarts at once into the prepared version when the server exits 3', async () => {
    const s = await setup('ready');
    await writeFile(join(s.install.factoryRoot, 'mode'), 'upgrade');
    s.askUpgrade();
    // the trial is already there at the first boot: the factory never runs
    s.launcher.start();
    await expect.poll(s.boots, { timeout: 10_000 }).toEqual(['0.2.0 env']);
    await expect.poll(() => readOutcome(s.install)?.result).toBe('success');
    expect(s.launcher.starts).toBe(1);
  });

  it('rolls back a new version that exits before it is ready, and starts the old one', async () => {
    const s = await setup('crash');
    await writeFile(join(s.install.factoryRoot, 'mode'), 'upgrade');
    s.launcher.start();
    await expect.poll(s.boots).toEqual(['0.1.0 env']);
    // the old server asks for the upgrade and exits 3 after its READY
    s.askUpgrade();
    await expect
      .poll(s.boots, { timeout: 10_000 })
      .toEqual(['0.1.0 env', '0.2.0 env', '0.1.0 env']);
    expect(readOutcome(s.install)).toMatchObject({
      id: 'u1',
      result: 'failed',
      reason: 'V0.2.0 exited with code 1 before it was ready',
      // the code the console translates (issue 21 item 17)
      reason_key: { code: 'exited', exit_code: 1 },
    });
    expect(readCurrent(s.install)).toBe('factory');
  });

  it('rolls back a new version that is ready but could not restore the network (issue 21)', async () => {
    const s = await setup('problems');
    s.askUpgrade();
    s.launcher.start();
    await expect.poll(s.boots, { timeout: 10_000 }).toEqual(['0.2.0 env', '0.1.0 env']);
    expect(readOutcome(s.install)).toMatchObject({
      result: 'failed',
      reason: 'V0.2.0 started, but the saved network settings could not be applied: ENOENT',
      reason_key: {
        code: 'unhealthy',
        problems: ['the saved network settings could not be applied: ENOENT'],
      },
    });
    expect(readCurrent(s.install)).toBe('factory');
  });

  it('a start with problems outside a trial is logged, and keeps running', async () => {
    const s = await setup('ready');
    await writeFile(join(s.install.factoryRoot, 'mode'), 'problems');
    s.launcher.start();
    await expect
      .poll(() => s.lines.some((l) => /started with problems: the saved network/.test(l)))
      .toBe(true);
    expect(s.launcher.current).toBe('running');
    expect(s.launcher.starts).toBe(1);
  });

  it('rolls back a new version that is not ready in time', async () => {
    const s = await setup('silent');
    s.askUpgrade();
    s.launcher.start();
    await expect.poll(s.boots, { timeout: 10_000 }).toEqual(['0.2.0 env', '0.1.0 env']);
    expect(readOutcome(s.install)).toMatchObject({
      result: 'failed',
      reason: 'V0.2.0 was not ready within 1.5 s',
      reason_key: { code: 'not_ready', seconds: 1.5 },
    });
    expect(s.lines.some((l) => /not ready within 1\.5 s: stopping it/.test(l))).toBe(true);
  });
});

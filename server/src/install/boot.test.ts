import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { keepTrial, planBoot, rollBack } from './boot';
import {
  readCurrent,
  readOutcome,
  readTrial,
  setCurrent,
  writeTrial,
  type InstallLayout,
  type TrialRecord,
} from './install-dir';

let root = '';
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function slot(dir: string, version: string): Promise<void> {
  await mkdir(join(dir, 'server', 'dist'), { recursive: true });
  await writeFile(join(dir, 'package.json'), JSON.stringify({ version }));
  await writeFile(join(dir, 'server', 'dist', 'main.js'), '');
}

async function layout(): Promise<InstallLayout & { data: string }> {
  root = await mkdtemp(join(tmpdir(), 'kvm-boot-'));
  const l = { factoryRoot: join(root, 'factory'), installDir: join(root, 'install') };
  await slot(l.factoryRoot, '0.1.0');
  const data = join(root, 'data');
  await mkdir(data);
  await writeFile(join(data, 'auth.json'), 'the old password');
  return { ...l, data };
}

function trial(data: string, over: Partial<TrialRecord> = {}): TrialRecord {
  return {
    id: 't1',
    from_slot: 'factory',
    to_slot: 'a',
    from_version: 'V0.1.0',
    to_version: 'V0.2.0',
    save_config: true,
    data_dir: data,
    data_aside: null,
    attempts: 0,
    created_at: new Date().toISOString(),
    ...over,
  };
}

const quiet = () => undefined;

describe('planBoot', () => {
  it('boots the factory tree, then whatever current names while it is usable', async () => {
    const l = await layout();
    expect(planBoot(l, quiet)).toMatchObject({ slot: 'factory', trial: null });
    await slot(join(l.installDir, 'slots', 'b'), '0.3.0');
    setCurrent(l, 'b');
    expect(planBoot(l, quiet)).toMatchObject({
      slot: 'b',
      entry: join(l.installDir, 'slots', 'b', 'server', 'dist', 'main.js'),
    });
    await rm(join(l.installDir, 'slots', 'b', 'server'), { recursive: true });
    const lines: string[] = [];
    expect(planBoot(l, (x) => lines.push(x)).slot).toBe('factory');
    expect(lines[0]).toMatch(/slot b is not usable/);
  });

  it('starts a trial: attempts counted, current switched, the data folder kept', async () => {
    const l = await layout();
    await slot(join(l.installDir, 'slots', 'a'), '0.2.0');
    writeTrial(l, trial(l.data));
    const plan = planBoot(l, quiet);
    expect(plan).toMatchObject({ slot: 'a', trial: { attempts: 1 } });
    expect(readCurrent(l)).toBe('a');
    expect(readTrial(l)?.attempts).toBe(1);
    expect(await readFile(join(l.data, 'auth.json'), 'utf8')).toBe('the old password');
  });

  it('save_config=false: a fresh data folder; a rollback brings the old one back', async () => {
    const l = await layout();
    await slot(join(l.installDir, 'slots', 'a'), '0.2.0');
    writeTrial(l, trial(l.data, { save_config: false }));
    const plan = planBoot(l, quiet);
    expect(await readdir(l.data)).toEqual([]);
    const aside = readTrial(l)!.data_aside!;
    expect(aside).toMatch(/data\.kept-V0\.1\.0-\d{8}T\d{6}$/);
    expect(await readFile(join(aside, 'auth.json'), 'utf8')).toBe('the old password');
    // the new version writes its own data, then fails
    await writeFile(join(l.data, 'auth.json'), 'a new password');
    rollBack(l, plan.trial!, 'it crashed', quiet);
    expect(await readFile(join(l.data, 'auth.json'), 'utf8')).toBe('the old password');
    expect(existsSync(aside)).toBe(false);
    expect(readCurrent(l)).toBe('factory');
    expect(readTrial(l)).toBeNull();
    expect(readOutcome(l)).toMatchObject({ id: 't1', result: 'failed', reason: 'it crashed' });
  });

  it('a second start of the same trial does not move the data folder again', async () => {
    const l = await layout();
    await slot(join(l.installDir, 'slots', 'a'), '0.2.0');
    writeTrial(l, trial(l.data, { save_config: false }));
    planBoot(l, quiet);
    const aside = readTrial(l)!.data_aside!;
    await writeFile(join(l.data, 'sessions.json'), 'made by the new version');
    // the launcher was killed during the trial: the next boot is start 2 of 2
    const again = planBoot(l, quiet);
    expect(again.trial?.attempts).toBe(2);
    expect(await readFile(join(l.data, 'sessions.json'), 'utf8')).toBe('made by the new version');
    expect(await readFile(join(aside, 'auth.json'), 'utf8')).toBe('the old password');
  });

  it('a crash between naming the kept folder and moving it: the move happens on the next boot', async () => {
    const l = await layout();
    await slot(join(l.installDir, 'slots', 'a'), '0.2.0');
    const aside = `${l.data}.kept-x`;
    writeTrial(l, trial(l.data, { save_config: false, data_aside: aside, attempts: 1 }));
    planBoot(l, quiet);
    expect(await readFile(join(aside, 'auth.json'), 'utf8')).toBe('the old password');
    expect(await readdir(l.data)).toEqual([]);
  });

  it('rolls back a trial whose starts are used up, or whose files are gone, before booting', async () => {
    const l = await layout();
    await slot(join(l.installDir, 'slots', 'a'), '0.2.0');
    setCurrent(l, 'a');
    writeTrial(l, trial(l.data, { attempts: 2 }));
    expect(planBoot(l, quiet)).toMatchObject({ slot: 'factory', trial: null });
    expect(readOutcome(l)).toMatchObject({
      result: 'failed',
      reason: 'V0.2.0 did not become healthy in 2 starts',
    });
    writeTrial(l, trial(l.data, { id: 't2', to_slot: 'b' }));
    expect(planBoot(l, quiet)).toMatchObject({ slot: 'factory', trial: null });
    expect(readOutcome(l)).toMatchObject({ id: 't2', reason: 'the files of V0.2.0 are missing' });
  });

  it('an unreadable trial.json is dropped and the current version boots', async () => {
    const l = await layout();
    await mkdir(l.installDir, { recursive: true });
    await writeFile(join(l.installDir, 'trial.json'), '{"id": 7');
    const lines: string[] = [];
    expect(planBoot(l, (x) => lines.push(x))).toMatchObject({ slot: 'factory', trial: null });
    expect(lines[0]).toMatch(/unreadable/);
    expect(existsSync(join(l.installDir, 'trial.json'))).toBe(false);
  });
});

describe('keepTrial', () => {
  it('records success, ends the trial and removes the installed package', async () => {
    const l = await layout();
    await mkdir(join(l.data, 'upgrade'));
    await writeFile(join(l.data, 'upgrade', 'update.pkg'), 'pkg');
    await slot(join(l.installDir, 'slots', 'a'), '0.2.0');
    writeTrial(l, trial(l.data));
    const t = planBoot(l, quiet).trial!;
    keepTrial(l, t);
    expect(readTrial(l)).toBeNull();
    expect(readCurrent(l)).toBe('a');
    expect(readOutcome(l)).toMatchObject({ id: 't1', result: 'success', to_version: 'V0.2.0' });
    expect(existsSync(join(l.data, 'upgrade', 'update.pkg'))).toBe(false);
  });
});

/**
 * The launcher's decisions over the install folder (install-dir.ts): which version to boot,
 * how a trial of a new one begins, is kept, or is rolled back. Each step is written before the
 * next begins, so a launcher killed between any two finds a state it can go on from:
 *
 *   server: slot unpacked → trial.json {attempts 0}        (then it exits with EXIT_UPGRADE)
 *   boot:   attempts+1 → [data folder aside] → current = new → start it
 *   ready:  last-upgrade.json success → trial.json removed
 *   failed: current = old → [data folder back] → last-upgrade.json failed → trial.json removed
 *
 * A trial found at boot with its attempts used up is rolled back before anything starts.
 */
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { RollbackReasonKey } from '@kvm/protocol';
import {
  clearTrial,
  MAX_TRIAL_ATTEMPTS,
  readCurrent,
  readTrial,
  setCurrent,
  slotEntry,
  slotUsable,
  trialFileExists,
  writeOutcome,
  writeTrial,
  type InstallLayout,
  type SlotName,
  type TrialRecord,
} from './install-dir';

/** The server's exit code that asks the launcher to boot the version an upgrade prepared. */
export const EXIT_UPGRADE = 3;

/** The IPC message a server sends once it listens with its drivers started. */
export const READY_MESSAGE = 'kvm-ready';

export interface BootPlan {
  slot: SlotName;
  entry: string;
  /** Set when this boot tries a new version: it must become healthy or be rolled back. */
  trial: TrialRecord | null;
}

export function planBoot(layout: InstallLayout, log: (line: string) => void): BootPlan {
  let trial = readTrial(layout);
  if (!trial && trialFileExists(layout)) {
    log('trial.json is unreadable: ignored, the current version boots');
    clearTrial(layout);
  }
  if (trial) {
    if (trial.attempts >= MAX_TRIAL_ATTEMPTS) {
      rollBack(
        layout,
        trial,
        `${trial.to_version} did not become healthy in ${trial.attempts} starts`,
        log,
      );
      trial = null;
    } else if (!slotUsable(layout, trial.to_slot)) {
      rollBack(layout, trial, `the files of ${trial.to_version} are missing`, log);
      trial = null;
    } else {
      trial.attempts += 1;
      writeTrial(layout, trial);
      if (!trial.save_config) moveDataAside(trial, layout);
      setCurrent(layout, trial.to_slot);
      log(
        `trying ${trial.to_version} (slot ${trial.to_slot}, start ${trial.attempts} of ${MAX_TRIAL_ATTEMPTS})`,
      );
      return { slot: trial.to_slot, entry: slotEntry(layout, trial.to_slot), trial };
    }
  }
  let slot = readCurrent(layout);
  if (slot !== 'factory' && !slotUsable(layout, slot)) {
    log(`slot ${slot} is not usable: booting the factory version`);
    slot = 'factory';
  }
  return { slot, entry: slotEntry(layout, slot), trial: null };
}

/** The new version is healthy: the upgrade is done and its package no longer needed. */
export function keepTrial(layout: InstallLayout, trial: TrialRecord): void {
  writeOutcome(layout, {
    id: trial.id,
    result: 'success',
    from_version: trial.from_version,
    to_version: trial.to_version,
    reason: null,
    save_config: trial.save_config,
    finished_at: new Date().toISOString(),
  });
  clearTrial(layout);
  // In the data folder the new version runs on (the old one, or the kept-aside one).
  for (const dir of [trial.data_dir, trial.data_aside]) {
    if (dir) rmSync(join(dir, 'upgrade', 'update.pkg'), { force: true });
  }
}

/** Back to the version the upgrade started from, with its data folder; the reason is kept. */
export function rollBack(
  layout: InstallLayout,
  trial: TrialRecord,
  reason: string,
  log: (line: string) => void,
  reasonKey: RollbackReasonKey | null = null,
): void {
  const back: SlotName = slotUsable(layout, trial.from_slot) ? trial.from_slot : 'factory';
  setCurrent(layout, back);
  restoreData(trial);
  writeOutcome(layout, {
    id: trial.id,
    result: 'failed',
    from_version: trial.from_version,
    to_version: trial.to_version,
    reason,
    reason_key: reasonKey,
    save_config: trial.save_config,
    finished_at: new Date().toISOString(),
  });
  clearTrial(layout);
  log(`upgrade to ${trial.to_version} failed (${reason}): back to ${trial.from_version}`);
}

/** save_config=false: the new version starts on an empty data folder; the old one is kept. */
function moveDataAside(trial: TrialRecord, layout: InstallLayout): void {
  if (trial.data_aside && existsSync(trial.data_aside)) return; // moved by an earlier start
  if (!trial.data_aside) {
    const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '');
    trial.data_aside = `${trial.data_dir}.kept-${trial.from_version.replace(/\s+/g, '-')}-${stamp}`;
    writeTrial(layout, trial); // the name first: a crash after the rename still finds it
  }
  if (existsSync(trial.data_dir)) renameSync(trial.data_dir, trial.data_aside);
  mkdirSync(trial.data_dir, { recursive: true, mode: 0o700 });
}

function restoreData(trial: TrialRecord): void {
  // Only with the kept folder in hand is the trial's folder removed.
  if (!trial.data_aside || !existsSync(trial.data_aside)) return;
  rmSync(trial.data_dir, { recursive: true, force: true });
  renameSync(trial.data_aside, trial.data_dir);
}

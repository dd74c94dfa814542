/**
 * The install folder of the A/B upgrade (issue 12, docs/upgrade.md "Install folder"), shared by
 * the launcher (which boots a slot, tries a new one and rolls back) and the server (which
 * unpacks a verified package into the idle slot and asks for the switch):
 *
 *   <install>/slots/a, slots/b    release trees (package.json, server/dist, web/dist)
 *   <install>/current             symlink to slots/a or slots/b; missing = the factory tree
 *   <install>/trial.json          an upgrade asked for or on trial (TrialRecord)
 *   <install>/last-upgrade.json   how the last one ended (UpgradeOutcome)
 *   <install>/node_modules        symlink to the factory's, so a slot resolves node-pty
 *
 * The factory tree is the checkout the launcher itself runs from: it is never written, so a
 * bootable version is always there. Every change here is one rename (or unlink) of a small
 * file or symlink, fsync'd with its folder: a kill -9 or power cut at any point leaves either
 * the old state or the new one. Synchronous on purpose: the launcher's steps are short and
 * their order is the crash-safety argument.
 */
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  mkdirSync,
} from 'node:fs';
import { join } from 'node:path';
import type { RollbackReasonKey, UpgradeOutcome } from '@kvm/protocol';
import { atomicWriteFileSync, fsyncDirSync } from '../storage/atomic';

export type SlotName = 'factory' | 'a' | 'b';

export interface InstallLayout {
  /** The checkout the launcher runs from: the fallback version, `.cache`, default `.data`. */
  factoryRoot: string;
  /** Slots, the `current` pointer and the upgrade records. */
  installDir: string;
}

/** An upgrade the server asked for (attempts 0) or the launcher is trying (attempts ≥ 1). */
export interface TrialRecord {
  id: string;
  from_slot: SlotName;
  to_slot: 'a' | 'b';
  from_version: string;
  to_version: string;
  save_config: boolean;
  /** The data folder, absolute (the launcher does not parse the server's config). */
  data_dir: string;
  /** save_config=false: where the old data folder is kept; set before it is moved there. */
  data_aside: string | null;
  /** Boots of the new version so far; the second unhealthy one is the last. */
  attempts: number;
  created_at: string;
}

/** A trial that was booted this many times without becoming healthy is rolled back. */
export const MAX_TRIAL_ATTEMPTS = 2;

const CURRENT = 'current';
const TRIAL = 'trial.json';
const OUTCOME = 'last-upgrade.json';

export function slotRoot(layout: InstallLayout, slot: SlotName): string {
  return slot === 'factory' ? layout.factoryRoot : join(layout.installDir, 'slots', slot);
}

/** The server entry of a slot. */
export function slotEntry(layout: InstallLayout, slot: SlotName): string {
  return join(slotRoot(layout, slot), 'server', 'dist', 'main.js');
}

/** A slot can be booted: its server bundle and package.json are there. */
export function slotUsable(layout: InstallLayout, slot: SlotName): boolean {
  const root = slotRoot(layout, slot);
  return (
    existsSync(join(root, 'server', 'dist', 'main.js')) && existsSync(join(root, 'package.json'))
  );
}

/** package.json's version of a slot, or null. */
export function slotVersion(layout: InstallLayout, slot: SlotName): string | null {
  try {
    const pkg = JSON.parse(readFileSync(join(slotRoot(layout, slot), 'package.json'), 'utf8')) as {
      version?: unknown;
    };
    return typeof pkg.version === 'string' ? pkg.version : null;
  } catch {
    return null;
  }
}

/** Where `current` points: `a`, `b`, or `factory` when it is missing or points elsewhere. */
export function readCurrent(layout: InstallLayout): SlotName {
  let target: string;
  try {
    target = readlinkSync(join(layout.installDir, CURRENT));
  } catch {
    return 'factory';
  }
  if (target === 'slots/a') return 'a';
  if (target === 'slots/b') return 'b';
  return 'factory';
}

/** The slot an upgrade may unpack into: never the one running. */
export function idleSlot(current: SlotName): 'a' | 'b' {
  return current === 'a' ? 'b' : 'a';
}

/** Points `current` at `slot` in one rename (a new symlink over the old), or removes it. */
export function setCurrent(layout: InstallLayout, slot: SlotName): void {
  mkdirSync(layout.installDir, { recursive: true });
  const link = join(layout.installDir, CURRENT);
  if (slot === 'factory') {
    rmSync(link, { force: true });
  } else {
    const tmp = `${link}.tmp-${randomBytes(4).toString('hex')}`;
    symlinkSync(`slots/${slot}`, tmp);
    try {
      renameSync(tmp, link);
    } catch (err) {
      rmSync(tmp, { force: true });
      throw err;
    }
  }
  fsyncDirSync(layout.installDir);
}

/**
 * `<install>/node_modules` → the factory's, so a slot's bundle finds its external modules
 * (node-pty) by Node's usual walk up from `slots/<x>/server/dist/`. ESM ignores NODE_PATH.
 */
export function linkModules(layout: InstallLayout): void {
  const link = join(layout.installDir, 'node_modules');
  const target = join(layout.factoryRoot, 'node_modules');
  mkdirSync(layout.installDir, { recursive: true });
  try {
    if (readlinkSync(link) === target) return;
  } catch {
    // missing or not a link
  }
  rmSync(link, { force: true, recursive: true });
  symlinkSync(target, link);
}

export function readTrial(layout: InstallLayout): TrialRecord | null {
  const t = readJson(join(layout.installDir, TRIAL)) as Partial<TrialRecord> | null;
  if (
    !t ||
    typeof t.id !== 'string' ||
    (t.to_slot !== 'a' && t.to_slot !== 'b') ||
    (t.from_slot !== 'a' && t.from_slot !== 'b' && t.from_slot !== 'factory') ||
    typeof t.data_dir !== 'string' ||
    typeof t.attempts !== 'number'
  ) {
    return null;
  }
  return {
    id: t.id,
    from_slot: t.from_slot,
    to_slot: t.to_slot,
    from_version: String(t.from_version ?? ''),
    to_version: String(t.to_version ?? ''),
    save_config: t.save_config !== false,
    data_dir: t.data_dir,
    data_aside: typeof t.data_aside === 'string' ? t.data_aside : null,
    attempts: t.attempts,
    created_at: String(t.created_at ?? ''),
  };
}

/** A trial file that exists but cannot be read (torn by hand, or a foreign format). */
export function trialFileExists(layout: InstallLayout): boolean {
  return existsSync(join(layout.installDir, TRIAL));
}

export function writeTrial(layout: InstallLayout, trial: TrialRecord): void {
  writeJsonAtomic(join(layout.installDir, TRIAL), trial);
}

export function clearTrial(layout: InstallLayout): void {
  rmSync(join(layout.installDir, TRIAL), { force: true });
  fsyncDirSync(layout.installDir);
}

export function readOutcome(layout: InstallLayout): UpgradeOutcome | null {
  const o = readJson(join(layout.installDir, OUTCOME)) as Partial<UpgradeOutcome> | null;
  if (!o || typeof o.id !== 'string' || (o.result !== 'success' && o.result !== 'failed')) {
    return null;
  }
  return {
    id: o.id,
    result: o.result,
    from_version: String(o.from_version ?? ''),
    to_version: String(o.to_version ?? ''),
    reason: typeof o.reason === 'string' ? o.reason : null,
    reason_key: reasonKeyOf(o.reason_key),
    save_config: o.save_config !== false,
    finished_at: String(o.finished_at ?? ''),
  };
}

/** A stored reason key as written by rollBack, or null (older file, or not one). */
function reasonKeyOf(value: unknown): RollbackReasonKey | null {
  if (!value || typeof value !== 'object') return null;
  const k = value as Record<string, unknown>;
  switch (k['code']) {
    case 'exited':
      return {
        code: 'exited',
        exit_code: typeof k['exit_code'] === 'number' ? k['exit_code'] : null,
      };
    case 'killed':
      return typeof k['signal'] === 'string' ? { code: 'killed', signal: k['signal'] } : null;
    case 'not_ready':
      return typeof k['seconds'] === 'number' ? { code: 'not_ready', seconds: k['seconds'] } : null;
    case 'unhealthy':
      return Array.isArray(k['problems'])
        ? { code: 'unhealthy', problems: k['problems'].filter((p) => typeof p === 'string') }
        : null;
    default:
      return null;
  }
}

export function writeOutcome(layout: InstallLayout, outcome: UpgradeOutcome): void {
  writeJsonAtomic(join(layout.installDir, OUTCOME), outcome);
}

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as unknown;
  } catch {
    return null;
  }
}

function writeJsonAtomic(path: string, value: unknown): void {
  atomicWriteFileSync(path, `${JSON.stringify(value, null, 2)}\n`);
}

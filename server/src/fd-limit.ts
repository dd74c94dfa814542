/**
 * The process's open-file limit. Every connection is a descriptor: with Debian's default soft
 * limit of 1,024 a thousand half-open connections left nothing for the next one (issue 9,
 * item 9), so the launcher raises it and the server sizes its connection cap from it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

export const WANTED_OPEN_FILES = 65_536;
const PRLIMIT = '/usr/bin/prlimit';

/** The soft open-file limit of this process (Linux /proc), or null where unknown. */
export function openFileLimit(): number | null {
  const limits = readLimits();
  return limits ? limits.soft : null;
}

function readLimits(): { soft: number; hard: number } | null {
  try {
    const text = readFileSync('/proc/self/limits', 'utf8');
    const m = /^Max open files\s+(\d+|unlimited)\s+(\d+|unlimited)/m.exec(text);
    if (!m) return null;
    const n = (v: string | undefined): number =>
      v === 'unlimited' || v === undefined ? Number.MAX_SAFE_INTEGER : Number(v);
    return { soft: n(m[1]), hard: n(m[2]) };
  } catch {
    return null;
  }
}

/**
 * Raises this process's open-file limit (children inherit it) with util-linux's prlimit: to
 * `wanted` when allowed (root), else the soft limit up to the hard one. Never throws; returns
 * the soft limit in force afterwards and how it got there, for the log.
 */
export function raiseOpenFileLimit(wanted = WANTED_OPEN_FILES): {
  limit: number | null;
  note: string;
} {
  const before = readLimits();
  if (!before) return { limit: null, note: 'limits unknown on this system' };
  if (before.soft >= wanted) return { limit: before.soft, note: 'already high enough' };
  if (!existsSync(PRLIMIT)) return { limit: before.soft, note: `${PRLIMIT} not found` };
  const set = (soft: number, hard: number): boolean =>
    spawnSync(PRLIMIT, [`--pid=${process.pid}`, `--nofile=${soft}:${hard}`], { stdio: 'ignore' })
      .status === 0;
  if (set(wanted, Math.max(wanted, before.hard))) {
    return { limit: openFileLimit(), note: 'raised' };
  }
  if (before.hard > before.soft && set(Math.min(wanted, before.hard), before.hard)) {
    return { limit: openFileLimit(), note: 'raised to the hard limit (not root)' };
  }
  return {
    limit: before.soft,
    note: `prlimit refused: raising the hard limit (${before.hard}) needs CAP_SYS_RESOURCE`,
  };
}

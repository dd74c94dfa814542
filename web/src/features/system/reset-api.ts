/**
 * Reset to defaults (issue 12 item 7; GL `GET /api/upgrade/reset_default`): the system group's
 * call and the wait for the device to come back in first-run state.
 */
import { api } from '../../lib/api';

/** GL's reset: the device wipes its settings at the restart and comes back not initialised. */
export function resetToDefaults(): Promise<unknown> {
  return api.get('/upgrade/reset_default');
}

/** Whether the device answers and is back in first-run state (after a reset). */
export async function isFirstRun(): Promise<boolean> {
  const status = await api.get<{ is_inited: boolean }>('/init/is_inited', { timeoutMs: 3000 });
  return status.is_inited === false;
}

/**
 * After a reset: asks every `pollMs` until the device answers not initialised, then calls `go`
 * with `/init` (the route guard's first-run page). Gives up after `waitMs` or on `signal`.
 */
export async function waitForFirstRun(opts: {
  go: (path: string) => void;
  pollMs?: number;
  waitMs?: number;
  signal?: AbortSignal;
}): Promise<boolean> {
  const until = Date.now() + (opts.waitMs ?? 5 * 60_000);
  while (Date.now() < until && !opts.signal?.aborted) {
    await new Promise((r) => setTimeout(r, opts.pollMs ?? 2000));
    if (opts.signal?.aborted) break;
    if (await isFirstRun().catch(() => false)) {
      opts.go('/init');
      return true;
    }
  }
  return false;
}

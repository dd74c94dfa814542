import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SILENT_LOGGER } from '../../log';
import {
  NetworkChangeNotFoundError,
  NetworkChangePendingError,
  SAFE_CHANGE_TRANSITIONS,
  SafeChanges,
  type SafeChangeSpec,
  type SafeChangeState,
} from './safe-change';
import { checkTransition } from '@kvm/protocol/transitions';

function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

let dir: string;
let safe: SafeChanges;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kvm-safe-change-'));
  safe = new SafeChanges({
    pendingPath: join(dir, 'network.pending.json'),
    timeoutS: 60,
    log: SILENT_LOGGER,
  });
});
afterEach(async () => {
  safe.dispose();
  await rm(dir, { recursive: true, force: true });
});

/** A change whose steps record the state they ran in and wait for `hold` when given. */
function spec(seen: string[], hold?: Promise<void>): SafeChangeSpec {
  const step = (name: string) => async () => {
    seen.push(`${name}:${safe.state}`);
    if (hold) await hold;
  };
  return {
    kind: 'ethernet',
    previous: null,
    previous_address: null,
    apply: step('apply'),
    newAddress: async () => 'https://10.0.0.77/',
    keep: step('keep'),
    revert: step('revert'),
  };
}

describe('SafeChanges state machine', () => {
  it('idle → applying → waiting → confirming → idle, each step in its state', async () => {
    const seen: string[] = [];
    expect(safe.state).toBe('idle');
    const { id } = await safe.run(spec(seen));
    expect(safe.state).toBe('waiting');
    await safe.confirm(id);
    expect(safe.state).toBe('idle');
    expect(seen).toEqual(['apply:applying', 'keep:confirming']);
  });

  it('waiting → reverting → idle on revert; a change needing no confirmation goes back to idle', async () => {
    const seen: string[] = [];
    const { id } = await safe.run(spec(seen));
    await safe.revert(id);
    expect(safe.state).toBe('idle');
    await safe.exclusive(async () => seen.push(`exclusive:${safe.state}`));
    expect(safe.state).toBe('idle');
    expect(seen).toEqual(['apply:applying', 'revert:reverting', 'exclusive:applying']);
  });

  it('a failed apply goes back to idle and leaves nothing pending', async () => {
    const failing = { ...spec([]), apply: () => Promise.reject(new Error('RTNETLINK')) };
    await expect(safe.run(failing)).rejects.toThrow('RTNETLINK');
    expect(safe.state).toBe('idle');
    expect(safe.pending()).toBeNull();
  });

  it('refuses a second change while one applies, waits or confirms (409)', async () => {
    const hold = gate();
    const first = safe.run(spec([], hold.promise));
    expect(safe.state).toBe('applying');
    await expect(safe.exclusive(async () => 1)).rejects.toBeInstanceOf(NetworkChangePendingError);
    hold.open();
    const { id } = await first;
    await expect(safe.run(spec([]))).rejects.toMatchObject({ status: 409 });
    const confirming = safe.confirm(id);
    expect(safe.state).toBe('confirming');
    await expect(safe.exclusive(async () => 1)).rejects.toBeInstanceOf(NetworkChangePendingError);
    await expect(safe.revert(id)).rejects.toBeInstanceOf(NetworkChangeNotFoundError);
    await confirming;
    expect(safe.state).toBe('idle');
  });

  it.each<[SafeChangeState, SafeChangeState]>([
    ['idle', 'waiting'],
    ['idle', 'confirming'],
    ['applying', 'confirming'],
    ['waiting', 'applying'],
    ['confirming', 'reverting'],
    ['reverting', 'waiting'],
  ])('an illegal move %s -> %s throws under the tests', (from, to) => {
    expect(() => checkTransition('SafeChanges', SAFE_CHANGE_TRANSITIONS, from, to)).toThrow(
      `SafeChanges: illegal state transition ${from} -> ${to}`,
    );
  });
});

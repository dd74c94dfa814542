import { describe, expect, it } from 'vitest';
import { IsBusyError } from '../errors';
import { ExclusiveRegion } from './exclusive-region';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

class TestIsBusyError extends IsBusyError {}

const busy = (): Error => new TestIsBusyError('busy');

describe('ExclusiveRegion', () => {
  it('runs one verb at a time and refuses the others at once', async () => {
    const region = new ExclusiveRegion(busy);
    const gate = deferred();
    let ran = 0;
    const first = region.enter(async () => {
      ran++;
      await gate.promise;
      return 'first';
    });
    expect(region.busy).toBe(true);
    const others = await Promise.allSettled(
      [1, 2, 3].map(() =>
        region.enter(async () => {
          ran++;
        }),
      ),
    );
    expect(others.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect((others[0] as PromiseRejectedResult).reason).toBeInstanceOf(TestIsBusyError);
    gate.resolve();
    await expect(first).resolves.toBe('first');
    expect(ran).toBe(1);
    expect(region.busy).toBe(false);
  });

  it('frees the region after a verb that throws', async () => {
    const region = new ExclusiveRegion(busy);
    await expect(
      region.enter(async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(region.busy).toBe(false);
    await expect(region.enter(async () => 1)).resolves.toBe(1);
  });

  it('refuses a nested enter from inside the verb', async () => {
    const region = new ExclusiveRegion(busy);
    await expect(region.enter(() => region.enter(async () => 1))).rejects.toBeInstanceOf(
      TestIsBusyError,
    );
  });

  it('hands the region to enterAfter without a gap, and reports each busy flip once', async () => {
    const region = new ExclusiveRegion(busy);
    const flips: boolean[] = [];
    region.onChange((b) => flips.push(b));
    const gate = deferred();
    const order: string[] = [];
    const verb = region.enter(async () => {
      await gate.promise;
      order.push('verb');
    });
    const reset = region.enterAfter(async () => {
      order.push('reset');
      // nobody got in between the verb and the reset
      await expect(region.enter(async () => order.push('intruder'))).rejects.toBeInstanceOf(
        TestIsBusyError,
      );
    });
    gate.resolve();
    await Promise.all([verb, reset]);
    expect(order).toEqual(['verb', 'reset']);
    expect(region.busy).toBe(false);
    expect(flips).toEqual([true, false]);
  });

  it('enterAfter on a free region runs at once', async () => {
    const region = new ExclusiveRegion(busy);
    await expect(region.enterAfter(async () => 'now')).resolves.toBe('now');
    expect(region.busy).toBe(false);
  });
});

import { describe, expect, it } from 'vitest';
import { MsdRegion } from './msd-region';

/** A verb that holds its part of the region until `release()`. */
function held(): { promise: Promise<void>; release: () => void } {
  let release!: () => void;
  const promise = new Promise<void>((resolve) => (release = resolve));
  return { promise, release };
}

describe('MsdRegion', () => {
  it('lets a drive verb run beside a transfer, and is busy while either runs', async () => {
    const region = new MsdRegion();
    const flips: boolean[] = [];
    region.onChange(() => flips.push(region.busy));
    const upload = held();
    const transfer = region.enterTransfer(() => upload.promise);
    expect(region.busy).toBe(true);
    await region.enterDrive(async () => undefined);
    await expect(region.enterTransfer(async () => undefined)).rejects.toMatchObject({
      wireName: 'MsdIsBusyError',
      status: 409,
    });
    upload.release();
    await transfer;
    expect(region.busy).toBe(false);
    expect(flips.at(-1)).toBe(false);
  });

  it('refuses a verb that needs both parts while a transfer runs', async () => {
    const region = new MsdRegion();
    const upload = held();
    const transfer = region.enterTransfer(() => upload.promise);
    await expect(region.enterBoth(async () => 'format')).rejects.toMatchObject({
      wireName: 'MsdIsBusyError',
    });
    // the drive part it took on the way is free again
    await expect(region.enterDrive(async () => 'plug')).resolves.toBe('plug');
    upload.release();
    await transfer;
  });

  it('runs reset after the running verbs, before any other', async () => {
    const region = new MsdRegion();
    const plug = held();
    const order: string[] = [];
    const running = region.enterDrive(async () => {
      await plug.promise;
      order.push('plug');
    });
    const reset = region.enterAfterAll(async () => {
      order.push('reset');
    });
    plug.release();
    await running;
    await expect(region.enterDrive(async () => undefined)).rejects.toMatchObject({
      wireName: 'MsdIsBusyError',
    });
    await reset;
    expect(order).toEqual(['plug', 'reset']);
    expect(region.busy).toBe(false);
  });

  it('claims a name once until it is released', () => {
    const region = new MsdRegion();
    const release = region.claim('x.iso');
    expect(() => region.claim('x.iso')).toThrow(
      expect.objectContaining({ wireName: 'MsdIsBusyError' }),
    );
    region.claim('y.iso');
    release();
    release(); // twice is harmless
    expect(() => region.claim('x.iso')).not.toThrow();
  });
});

import { describe, expect, it } from 'vitest';
import type { FingerbotDriver } from '../../drivers/fingerbot/types';
import { tempDataDir } from '../../test-helpers';
import { FingerbotIsBusyError, FingerbotService } from './fingerbot-service';

/** A robot whose press lasts until the test lets it go. */
class HeldFingerbot implements FingerbotDriver {
  readonly name = 'held';
  presses = 0;
  private releases: Array<() => void> = [];
  getState() {
    return { exist: true };
  }
  onState() {
    return () => undefined;
  }
  press(): Promise<void> {
    this.presses += 1;
    return new Promise((resolve) => this.releases.push(resolve));
  }
  release(): void {
    for (const r of this.releases.splice(0)) r();
  }
  async battery() {
    return 80;
  }
  async version() {
    return '1.0.0';
  }
  async upgrade(fw: { version: string }) {
    return fw.version;
  }
  async init() {}
  async dispose() {}
}

describe('FingerbotService: one press at a time through its ExclusiveRegion', () => {
  it('is busy for the whole press; a second press is refused at once with 409', async () => {
    const robot = new HeldFingerbot();
    const service = new FingerbotService(robot, await tempDataDir());
    const flips: boolean[] = [];
    service.region.onChange((busy) => flips.push(busy));
    const first = service.click(500, 1);
    expect(service.region.busy).toBe(true);
    const second = await service.click(500, 2).catch((e: unknown) => e);
    expect(second).toBeInstanceOf(FingerbotIsBusyError);
    expect(second).toMatchObject({ status: 409 });
    expect(robot.presses).toBe(1);
    robot.release();
    await first;
    await expect.poll(() => service.region.busy, { timeout: 5000 }).toBe(false);
    expect(flips).toEqual([true, false]);
    // free again: the next press runs
    const third = service.click(500, 1);
    expect(robot.presses).toBe(2);
    robot.release();
    await third;
    service.dispose();
  });
});

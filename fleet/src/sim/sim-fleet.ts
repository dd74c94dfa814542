/**
 * N simulated devices in one process (fleet/src/sim/device.ts), bound to one fleet account:
 * for tests, the bench and `npm run cloud -- --sim N`. Binding goes a few at a time (each is a
 * password check on the fleet); the agents then connect on their own.
 */
import { randomBytes } from 'node:crypto';
import { SimDevice, type SimDeviceOptions } from './device';

export interface SimFleetOptions extends Omit<SimDeviceOptions, 'index' | 'failUpgrade'> {
  count: number;
  /** Which devices fail their upgrades (by index, 1-based). */
  failUpgrade?: (index: number) => boolean;
  /**
   * Bindings at once (default 3: the fleet hashes one password at a time per address and
   * refuses a fifth waiting login of one address).
   */
  concurrency?: number;
}

export class SimFleet {
  private constructor(readonly devices: SimDevice[]) {}

  static async start(opts: SimFleetOptions): Promise<SimFleet> {
    const tag = opts.tag ?? randomBytes(2).toString('hex');
    const { count, failUpgrade, concurrency, ...common } = opts;
    const devices = Array.from(
      { length: count },
      (_, i) =>
        new SimDevice({
          ...common,
          tag,
          index: i + 1,
          ...(failUpgrade?.(i + 1) ? { failUpgrade: true } : {}),
        }),
    );
    const fleet = new SimFleet(devices);
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < devices.length) {
        const d = devices[next]!;
        next += 1;
        await d.start();
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(concurrency ?? 3, count) }, worker));
    } catch (e) {
      await fleet.stop();
      throw e;
    }
    return fleet;
  }

  get online(): number {
    return this.devices.filter((d) => d.online).length;
  }

  /** Resolves when every device's agent is online (rejects after `timeoutMs`). */
  async waitOnline(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.online < this.devices.length) {
      if (Date.now() > deadline) {
        throw new Error(`${this.online} of ${this.devices.length} simulated devices online`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.devices.map((d) => d.stop()));
  }
}

import { SystemFeatureUnavailableError } from '../types';
import type { ClockDriver } from './types';

export const CLOCK_DISABLED = 'Setting the clock is disabled in the configuration';

/** `system.clock: disabled`: reads this computer's clock in UTC, sets nothing. */
export class DisabledClock implements ClockDriver {
  readonly name = 'disabled';
  readonly kind = 'system' as const;
  now(): number {
    return Date.now();
  }
  async zone(): Promise<string> {
    return 'UTC';
  }
  async setZone(): Promise<never> {
    throw new SystemFeatureUnavailableError(CLOCK_DISABLED);
  }
  async setTime(): Promise<never> {
    throw new SystemFeatureUnavailableError(CLOCK_DISABLED);
  }
  async init(): Promise<void> {}
  async dispose(): Promise<void> {}
}

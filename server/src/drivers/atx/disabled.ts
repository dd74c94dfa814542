import { ApiError } from '../../errors';
import type { AtxDriver, AtxDriverState } from './types';

/** No ATX wiring: `enabled: false`, a click is kvmd's AtxDisabledError. */
export class DisabledAtx implements AtxDriver {
  readonly name = 'disabled';
  getState(): AtxDriverState {
    return { enabled: false, leds: { power: false, hdd: false } };
  }
  onState(): () => void {
    return () => undefined;
  }
  async click(): Promise<void> {
    throw new ApiError('AtxDisabledError', 400, 'ATX is disabled');
  }
  async init(): Promise<void> {}
  async dispose(): Promise<void> {}
}

import { BadRequestError } from '../../errors';
import type { AtxDriver, AtxDriverState } from './types';

/** kvmd's AtxDisabledError: ATX is off in the config (also refused before the region). */
export class AtxDisabledError extends BadRequestError {
  static override readonly defaultMessage = 'ATX is disabled';
}

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
    throw new AtxDisabledError();
  }
  async init(): Promise<void> {}
  async dispose(): Promise<void> {}
}

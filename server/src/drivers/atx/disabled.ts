import { AtxDisabledError, type AtxDriver, type AtxDriverState } from './types';

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

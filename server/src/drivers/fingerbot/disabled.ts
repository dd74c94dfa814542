import { BadRequestError } from '../../errors';
import type { FingerbotDriver, FingerbotDriverState } from './types';

export class FingerbotNotFoundError extends BadRequestError {
  static override readonly defaultMessage = 'No fingerbot is connected';
}

/** No fingerbot: `exist:false`; every action is FingerbotNotFoundError. */
export class DisabledFingerbot implements FingerbotDriver {
  readonly name = 'disabled';
  getState(): FingerbotDriverState {
    return { exist: false };
  }
  onState(): () => void {
    return () => undefined;
  }
  async press(): Promise<void> {
    throw new FingerbotNotFoundError();
  }
  async battery(): Promise<number> {
    throw new FingerbotNotFoundError();
  }
  async version(): Promise<string> {
    throw new FingerbotNotFoundError();
  }
  async upgrade(): Promise<string> {
    throw new FingerbotNotFoundError();
  }
  async init(): Promise<void> {}
  async dispose(): Promise<void> {}
}

import { FingerbotNotFoundError, type FingerbotDriver, type FingerbotDriverState } from './types';

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

import type { MsdDriver, MsdDriverState } from './types';

/** No virtual media: offline. */
export class DisabledMsd implements MsdDriver {
  readonly name = 'disabled';
  getState(): MsdDriverState {
    return { online: false };
  }
  onState(): () => void {
    return () => undefined;
  }
  async init(): Promise<void> {}
  async dispose(): Promise<void> {}
}

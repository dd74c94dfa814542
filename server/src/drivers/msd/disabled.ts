import type { MsdDriver, MsdDriverState } from './types';

/** No virtual media on this target: always offline, every plug call refused. */
export class DisabledMsd implements MsdDriver {
  readonly name = 'disabled';
  getState(): MsdDriverState {
    return { online: false };
  }
  onState(): () => void {
    return () => undefined;
  }
  async connectImage(): Promise<void> {
    throw new Error('This target has no virtual media');
  }
  async disconnectImage(): Promise<void> {}
  async connectPartition(): Promise<void> {
    throw new Error('This target has no virtual media');
  }
  async disconnectPartition(): Promise<void> {}
  async init(): Promise<void> {}
  async dispose(): Promise<void> {}
}

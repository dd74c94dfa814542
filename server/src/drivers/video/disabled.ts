import type { VideoSource, VideoSourceState } from './types';

/** No capture: offline, no frames. */
export class DisabledVideo implements VideoSource {
  readonly name = 'disabled';
  getState(): VideoSourceState {
    return { online: false, signal: false, width: 0, height: 0 };
  }
  onState(): () => void {
    return () => undefined;
  }
  async startCapture(): Promise<void> {}
  async stopCapture(): Promise<void> {}
  async init(): Promise<void> {}
  async dispose(): Promise<void> {}
}

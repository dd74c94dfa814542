import type { DisplayDriver, DisplayMode } from './types';

/** No display output to identify (`video.type: disabled`): the EDID is kept, nothing sees it. */
export class DisabledDisplay implements DisplayDriver {
  readonly name = 'none';
  readonly applies = 'none' as const;
  async apply(_edid: Buffer, _mode: DisplayMode): Promise<void> {}
  pending(): boolean {
    return false;
  }
  current(): DisplayMode | null {
    return null;
  }
  async init(): Promise<void> {}
  async dispose(): Promise<void> {}
}

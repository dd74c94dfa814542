/**
 * The testbed's display identity: the test screen takes an EDID at once (`applies: 'now'`, like
 * a monitor hot-plug) and holds it, but its picture keeps the configured size: the test picture
 * is drawn in 16-pixel cells shared with the test HID (1080 lines are not a multiple of 16), so
 * `current()` answers the size actually shown, never a pretended one (docs/system.md).
 */
import type { DisplayDriver, DisplayMode } from '../system/types';
import type { TestbedVideo } from './video';

export class TestbedDisplay implements DisplayDriver {
  readonly name = 'testbed';
  readonly applies = 'now' as const;
  private edid: Buffer | null = null;

  constructor(private readonly video: TestbedVideo | null) {}

  async apply(edid: Buffer, _mode: DisplayMode): Promise<void> {
    this.edid = Buffer.from(edid);
  }

  /** The EDID the test screen holds, or null before one was applied. */
  held(): Buffer | null {
    return this.edid;
  }

  pending(): boolean {
    return false;
  }

  current(): DisplayMode | null {
    if (!this.video) return null;
    const { width, height } = this.video.getState();
    return { width, height, hz: 30 };
  }

  async init(): Promise<void> {}
  async dispose(): Promise<void> {}
}

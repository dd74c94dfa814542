/**
 * The testbed's display identity: the test screen takes an EDID at once (`applies: 'now'`, like
 * a monitor hot-plug) and its picture switches to the EDID's preferred mode when the picture can
 * take it (testbedSizeOk: up to 3840x2160, widths in 16-pixel steps, heights in 8); otherwise it
 * keeps its size and says so in the log, and `current()` answers the size actually shown.
 */
import type { Logger } from '../../log';
import type { DisplayDriver, DisplayMode } from './types';
import type { TestbedVideo } from '../video/testbed';

export class TestbedDisplay implements DisplayDriver {
  readonly name = 'testbed';
  readonly applies = 'now' as const;
  private edid: Buffer | null = null;
  private hz = 60;

  constructor(
    private readonly video: TestbedVideo,
    private readonly log?: Logger,
  ) {}

  async apply(edid: Buffer, mode: DisplayMode): Promise<void> {
    this.edid = Buffer.from(edid);
    if (this.video.resize(mode.width, mode.height)) {
      this.hz = mode.hz;
    } else {
      this.log?.warn(
        { mode, kept: this.current() },
        'the test screen cannot show this mode: it keeps its size',
      );
    }
  }

  /** The EDID the test screen holds, or null before one was applied. */
  held(): Buffer | null {
    return this.edid;
  }

  pending(): boolean {
    return false;
  }

  current(): DisplayMode | null {
    const { width, height } = this.video.getState();
    return { width, height, hz: this.hz };
  }

  async init(): Promise<void> {}
  async dispose(): Promise<void> {}
}

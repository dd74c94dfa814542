/**
 * The monitor identity (EDID) of the `v4l2` capture device: the HDMI receiver offers the remote
 * computer the EDID written to it (VIDIOC_S_EDID through `v4l2-ctl --set-edid`), at once
 * (`applies: 'now'`: a receiver pulls hot-plug so the computer reads it again). Every write is
 * read back (`--get-edid`) and compared byte for byte; `readBack()` answers what the device holds
 * now, which GL's `get_edid` reports (services/system/edid-service.ts). A USB dongle takes no
 * EDID (ENOTTY): `apply` fails with that sentence, the text stays saved. A receiver that refuses
 * the write while it streams (EBUSY: vivid, the device VM's) gets it with the encoder stopped
 * for the write (V4l2Video.whileReleased): the viewers' picture pauses and comes back.
 */
import { ServiceUnavailableError } from '../../errors';
import type { Logger } from '../../log';
import { V4l2Error, type V4l2Ctl } from '../../platform/v4l2/ctl';
import type { V4l2Video } from '../video/v4l2';
import type { DisplayDriver, DisplayMode } from './types';

/** The capture device refused or lost the EDID (503 with its sentence; the text stays saved). */
export class EdidWriteError extends ServiceUnavailableError {}

export class V4l2Display implements DisplayDriver {
  readonly name = 'v4l2';
  readonly applies = 'now' as const;

  constructor(
    private readonly ctl: V4l2Ctl,
    private readonly video: V4l2Video,
    private readonly log?: Logger,
  ) {}

  async apply(edid: Buffer, mode: DisplayMode): Promise<void> {
    const started = performance.now();
    let released = false;
    try {
      try {
        await this.ctl.setEdid(edid);
      } catch (err) {
        if (!(err instanceof V4l2Error) || err.fault !== 'busy') throw err;
        // a receiver that refuses while it streams (vivid): the encoder lets go, then again
        released = true;
        await this.video.whileReleased(() => this.ctl.setEdid(edid));
      }
    } catch (err) {
      const e = err as V4l2Error;
      const why =
        e instanceof V4l2Error && e.fault === 'unsupported'
          ? `${this.ctl.device} takes no EDID (a USB capture dongle has its own)`
          : `${this.ctl.device}: ${e.message}`;
      throw new EdidWriteError(`The EDID was saved but not written: ${why}`);
    }
    this.log?.info(
      { mode, ms: Math.round(performance.now() - started), released },
      'EDID written to the capture device',
    );
    // a receiver may answer the new EDID with new timings (the remote computer's choice)
    void this.video.refresh();
  }

  /** What the receiver offers now, read back; null when it holds none or cannot say. */
  async readBack(): Promise<Buffer | null> {
    try {
      return await this.ctl.getEdid();
    } catch {
      return null;
    }
  }

  pending(): boolean {
    return false;
  }

  /** The mode the remote computer sends: the DV timings in force. */
  current(): DisplayMode | null {
    return this.video.timings();
  }

  async init(): Promise<void> {}
  async dispose(): Promise<void> {}
}

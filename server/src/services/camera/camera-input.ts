/**
 * The browser's camera as the Janus plugin hands it over (janus/ustreamer-plugin.ts `camera`):
 * each viewer that sends its camera registers its key-frame request, its RTP goes to the camera
 * sink (media/camera-sink.ts), decoded into the webcam's frames (camera-service.ts).
 */
import type { Logger } from '../../log';
import { CameraSink } from '../../media/camera-sink';
import type { CameraService } from './camera-service';

export class CameraInput {
  private readonly keyFrames = new Map<string, () => void>();
  readonly sink: CameraSink;

  constructor(
    private readonly service: CameraService,
    log: Logger,
    opts: { ffmpeg?: string } = {},
  ) {
    this.sink = new CameraSink(service, log, {
      ...(opts.ffmpeg ? { ffmpeg: opts.ffmpeg } : {}),
      keyFrame: (sender) => this.keyFrames.get(sender)?.(),
    });
  }

  /** The webcam can take the camera now (a watch then offers the camera's section). */
  available(): boolean {
    return this.service.state().available;
  }

  /** A viewer's peer offers the camera's section; `keyFrame` asks its browser for one. */
  open(sender: string, keyFrame: () => void): void {
    this.keyFrames.set(sender, keyFrame);
  }

  rtp(sender: string, packet: Buffer): void {
    this.sink.push(sender, packet);
  }

  /** The viewer's peer closed. */
  gone(sender: string): void {
    this.keyFrames.delete(sender);
    this.sink.senderGone(sender);
  }

  async dispose(): Promise<void> {
    this.keyFrames.clear();
    await this.sink.dispose();
  }
}

/**
 * The browser's camera for the gadget target's USB webcam (issue 24, docs/console.md "Camera"):
 * captured while the camera is on (`cam_on`) and the device says its webcam can take it
 * (AudioState.camera.available), stopped otherwise (the browser's camera light goes out). The
 * WebRTC session sends the track on the camera's section; a change swaps it in place or
 * renegotiates (lib/janus-stream.ts cameraChanged).
 */

/** What the camera is asked for: the webcam's size (YUYV 640x480 at 15-30 fps). */
export const CAMERA_CONSTRAINTS: MediaTrackConstraints = {
  width: { ideal: 640 },
  height: { ideal: 480 },
  frameRate: { ideal: 15, max: 30 },
};

export type CameraCaptureState = 'off' | 'starting' | 'on' | 'denied' | 'error';

export class CameraCapture {
  private stream: MediaStream | null = null;
  private wanted = false;
  private round = 0;
  private listener: () => void = () => undefined;
  state: CameraCaptureState = 'off';

  constructor(
    private readonly getUserMedia: (c: MediaStreamConstraints) => Promise<MediaStream> = (c) =>
      navigator.mediaDevices.getUserMedia(c),
  ) {}

  /** The track to send, or null. */
  track(): MediaStreamTrack | null {
    return this.stream?.getVideoTracks()[0] ?? null;
  }

  /** Called when track() changes. */
  onChange(listener: () => void): void {
    this.listener = listener;
  }

  /** Captures while `on` (the user's choice and the device's webcam), else stops. */
  sync(on: boolean): void {
    if (on === this.wanted) return;
    this.wanted = on;
    const round = ++this.round;
    if (!on) {
      this.stop();
      return;
    }
    this.state = 'starting';
    this.getUserMedia({ video: CAMERA_CONSTRAINTS, audio: false }).then(
      (stream) => {
        if (round !== this.round) {
          for (const t of stream.getTracks()) t.stop();
          return;
        }
        this.stream = stream;
        this.state = 'on';
        this.listener();
      },
      (err: unknown) => {
        if (round !== this.round) return;
        this.state = (err as { name?: string })?.name === 'NotAllowedError' ? 'denied' : 'error';
        this.wanted = false;
      },
    );
  }

  private stop(): void {
    const had = this.stream !== null;
    for (const t of this.stream?.getTracks() ?? []) t.stop();
    this.stream = null;
    this.state = 'off';
    if (had) this.listener();
  }
}

export const cameraCapture = new CameraCapture();

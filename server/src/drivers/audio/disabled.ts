/** No sound on this target: nothing to capture, nowhere to play the microphone. */
import type { AudioCapture, AudioDriver, AudioPlayback } from './types';

export class DisabledAudio implements AudioDriver {
  readonly kind = 'none';
  readonly simulated = false;
  readonly cameraUnavailableReason = 'This device has no camera input';
  readonly cameraUnavailableCode = 'no_camera_input' as const;
  capture(): AudioCapture | null {
    return null;
  }
  playback(): AudioPlayback | null {
    return null;
  }
  async init(): Promise<void> {}
  async dispose(): Promise<void> {}
}

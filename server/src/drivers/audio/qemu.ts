/**
 * The QEMU target's sound (docs/drivers.md, "Audio (QEMU)"): the VM's intel-hda card plays into
 * and records from the VM's own PulseAudio (platform/qemu/pulse.ts), which starts before the VM
 * and stops after it.
 */
import type { QemuPulse } from '../../platform/qemu/pulse';
import type { AudioCapture, AudioDriver, AudioPlayback } from './types';

export class QemuAudio implements AudioDriver {
  readonly kind = 'qemu';
  readonly simulated = false;
  readonly cameraUnavailableReason =
    'The camera needs the hardware target (a USB video gadget); the QEMU target has none';
  readonly cameraUnavailableCode = 'needs_hardware' as const;

  constructor(private readonly pulse: QemuPulse) {}

  /** The platform starts and stops the sound server around the VM. */
  async init(): Promise<void> {}
  async dispose(): Promise<void> {}

  /** Why this machine has no sound, or null. */
  get unavailable(): string | null {
    return this.pulse.unavailable;
  }

  capture(): AudioCapture | null {
    return this.pulse.capture();
  }

  playback(): AudioPlayback | null {
    return this.pulse.playback();
  }
}

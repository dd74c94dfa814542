/**
 * The fingerbot driver: a robot finger that presses a physical button of the remote computer
 * (GL's Bluetooth FGB01; on the QEMU target the VM's power button). The service in front of it
 * validates, serialises presses and keeps the firmware package.
 */
import { BadRequestError } from '../../errors';
export interface FingerbotDriverState {
  exist: boolean;
}

export interface FingerbotDriver {
  readonly name: string;
  getState(): FingerbotDriverState;
  onState(listener: (state: FingerbotDriverState) => void): () => void;
  /** Presses for `pressMs` at `angle` (1 light, 2 firm); resolves when the finger is back. */
  press(pressMs: number, angle: 1 | 2): Promise<void>;
  /** Battery charge, 0-100. */
  battery(): Promise<number>;
  /** The firmware version running on the robot. */
  version(): Promise<string>;
  /** Flashes a verified firmware image; resolves with the new version. */
  upgrade(firmware: { image: Buffer; version: string }): Promise<string>;
  init(): Promise<void>;
  dispose(): Promise<void>;
}

export class FingerbotNotFoundError extends BadRequestError {
  static override readonly defaultMessage = 'No fingerbot is connected';
}

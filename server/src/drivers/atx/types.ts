/** The ATX driver: the remote computer's power and reset buttons and its power LED (issue 5). */
import { BadRequestError } from '../../errors';
import type { AtxButtonName } from '@kvm/protocol';

export type AtxButton = AtxButtonName;

export interface AtxDriverState {
  enabled: boolean;
  leds: { power: boolean; hdd: boolean };
  /** Why the buttons cannot act now (GPIO: a line held elsewhere, the chip missing), else null.
   *  Drivers that cannot fail that way leave it out. */
  problem?: string | null;
}

export interface AtxDriver {
  readonly name: string;
  getState(): AtxDriverState;
  onState(listener: (state: AtxDriverState) => void): () => void;
  /** Presses `button` for its SPEC 3 hold time (0.5 s, 6.5 s, reset). */
  click(button: AtxButton): Promise<void>;
  init(): Promise<void>;
  dispose(): Promise<void>;
}

/** kvmd's AtxDisabledError: ATX is off in the config (also refused before the region). */
export class AtxDisabledError extends BadRequestError {
  static override readonly defaultMessage = 'ATX is disabled';
}

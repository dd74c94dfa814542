/**
 * Where a Wake-on-LAN magic packet leaves the device (docs/drivers.md "Wake-on-LAN"): the
 * device's own network, as its network driver has it (wol/select.ts).
 */
import { BadRequestError, InternalError, IsBusyError } from '../../errors';

/** The limited broadcast: "this network's broadcast" to every sender. */
export const LIMITED_BROADCAST = '255.255.255.255';

export interface WolSender {
  /** `host`, `netns`, or `none` (cannot send here). */
  readonly name: string;
  /**
   * Sends one UDP datagram with broadcasting allowed. `address` LIMITED_BROADCAST means the
   * broadcast of the network the sender is on. Answers the address it went to.
   */
  send(packet: Uint8Array, address: string, port: number): Promise<{ address: string }>;
}

export class WolSendError extends InternalError {
  constructor(message: string) {
    super(`The wake-up packet could not be sent: ${message}`);
  }
}

/** Nowhere to send from on this target and configuration (400: nothing the device can do now). */
export class WolUnavailableError extends BadRequestError {}

/** More wakes at once than the device sends one after the other. */
export class WolBusyError extends IsBusyError {
  static override readonly defaultMessage: string =
    'Too many wake-up packets are waiting to be sent; try again in a moment';
}

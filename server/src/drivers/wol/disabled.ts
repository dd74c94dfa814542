import { WolUnavailableError, type WolSender } from './types';

/** No network to send on here: every wake says why. */
export class DisabledWol implements WolSender {
  readonly name = 'none';

  constructor(private readonly reason: string) {}

  async send(): Promise<never> {
    throw new WolUnavailableError(this.reason);
  }
}

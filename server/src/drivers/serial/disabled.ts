import type { SerialConsole } from './types';

/** No serial line to the remote computer here: the tab says why. */
export class NoSerialConsole implements SerialConsole {
  constructor(readonly unavailable: string) {}
  async open(): Promise<string> {
    return this.unavailable;
  }
}

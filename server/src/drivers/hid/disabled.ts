import { paceKeyEvents } from './pace';
import type { HidDriver, HidDriverState, KeyEvent } from './types';

/** No HID at all: offline, every report is ignored. */
export class DisabledHid implements HidDriver {
  readonly name = 'disabled';
  getState(): HidDriverState {
    return {
      enabled: false,
      online: false,
      connected: false,
      keyboard: {
        online: false,
        leds: { caps: false, num: false, scroll: false },
        outputs: { available: [], active: '' },
      },
      mouse: { online: false, absolute: true, outputs: { available: [], active: '' } },
    };
  }
  onState(): () => void {
    return () => undefined;
  }
  sendKey(): void {}
  sendMouseButton(): void {}
  sendMouseMove(): void {}
  sendMouseRelative(): void {}
  sendMouseWheel(): void {}
  /** Takes the whole sequence (so a paste's counts are right) and sends nothing. */
  typeSequence(events: Iterable<KeyEvent>, delayMs: number, signal: AbortSignal): Promise<void> {
    return paceKeyEvents(events, delayMs, signal, () => undefined);
  }
  async setMouseOutput(): Promise<void> {}
  async setConnected(): Promise<void> {}
  async init(): Promise<void> {}
  async dispose(): Promise<void> {}
}

import type { HidDriver, HidDriverState } from './types';

/** No HID at all: offline, every report is ignored. */
export class DisabledHid implements HidDriver {
  readonly name = 'disabled';
  getState(): HidDriverState {
    return {
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
  async typeSequence(): Promise<void> {}
  async setMouseOutput(): Promise<void> {}
  async setConnected(): Promise<void> {}
  async init(): Promise<void> {}
  async dispose(): Promise<void> {}
}

import type { HidDriver, HidDriverState } from './types';

/** No HID at all: offline, every report is ignored. */
export class DisabledHid implements HidDriver {
  readonly name = 'disabled';
  getState(): HidDriverState {
    return {
      online: false,
      keyboard: { online: false, leds: { caps: false, num: false, scroll: false } },
      mouse: { online: false, absolute: true },
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
  async init(): Promise<void> {}
  async dispose(): Promise<void> {}
}

/**
 * Testbed HID: the in-process "remote computer" of the testbed target. Key presses type onto
 * the testbed picture (a US layout, enough to see typing in the browser), and every report is
 * also emitted with its arrival time so tests and the input bench can watch the driver calls.
 */
import { EventEmitter } from 'node:events';
import type { MouseButton } from '@kvm/protocol';
import { paceKeyEvents } from './pace';
import type { HidDriver, HidDriverState, KeyEvent } from './types';
import type { TestbedPicture } from '../../platform/testbed/screen';

export type TestbedReport =
  | { kind: 'key'; key: string; pressed: boolean }
  | { kind: 'button'; button: MouseButton; pressed: boolean }
  | { kind: 'move'; x: number; y: number }
  | { kind: 'relative'; dx: number; dy: number }
  | { kind: 'wheel'; dx: number; dy: number };

const US_SHIFTED: Readonly<Record<string, string>> = {
  Digit1: '!',
  Digit2: '@',
  Digit3: '#',
  Digit4: '$',
  Digit5: '%',
  Digit6: '^',
  Digit7: '&',
  Digit8: '*',
  Digit9: '(',
  Digit0: ')',
  Minus: '_',
  Equal: '+',
  Comma: '<',
  Period: '>',
  Slash: '?',
  Semicolon: ':',
  Quote: '"',
};
const US_PLAIN: Readonly<Record<string, string>> = {
  Space: ' ',
  Minus: '-',
  Equal: '=',
  Comma: ',',
  Period: '.',
  Slash: '/',
  Semicolon: ';',
  Quote: "'",
};

/** The character a US keyboard types for a key, or null. */
export function usCharOf(key: string, shift: boolean): string | null {
  if (/^Key[A-Z]$/.test(key)) return shift ? key.slice(3) : key.slice(3).toLowerCase();
  if (shift && US_SHIFTED[key]) return US_SHIFTED[key];
  if (/^Digit\d$/.test(key)) return key.slice(5);
  return US_PLAIN[key] ?? null;
}

export class TestbedHid
  extends EventEmitter<{ report: [TestbedReport, number] }>
  implements HidDriver
{
  readonly name = 'testbed';
  private absolute = true;
  private connected = true;
  private readonly pressed = new Set<string>();
  private readonly stateListeners = new Set<(state: HidDriverState) => void>();

  constructor(private readonly picture: TestbedPicture | null) {
    super();
  }

  getState(): HidDriverState {
    return {
      enabled: true,
      online: this.connected,
      connected: this.connected,
      keyboard: {
        online: this.connected,
        leds: { caps: false, num: false, scroll: false },
        outputs: { available: [], active: '' },
      },
      mouse: {
        online: this.connected,
        absolute: this.absolute,
        outputs: { available: ['usb', 'usb_rel'], active: this.absolute ? 'usb' : 'usb_rel' },
      },
    };
  }

  onState(listener: (state: HidDriverState) => void): () => void {
    this.stateListeners.add(listener);
    return () => this.stateListeners.delete(listener);
  }

  /** Keys the testbed computer sees held now. */
  get held(): string[] {
    return [...this.pressed];
  }

  sendKey(key: string, pressed: boolean): void {
    const now = performance.now();
    if (pressed) this.pressed.add(key);
    else this.pressed.delete(key);
    this.emit('report', { kind: 'key', key, pressed }, now);
    if (!pressed || !this.picture) return;
    const shift = this.pressed.has('ShiftLeft') || this.pressed.has('ShiftRight');
    const char = usCharOf(key, shift);
    if (char !== null) this.picture.typeText(char, now);
  }

  sendMouseButton(button: MouseButton, pressed: boolean): void {
    this.emit('report', { kind: 'button', button, pressed }, performance.now());
  }

  sendMouseMove(x: number, y: number): void {
    this.emit('report', { kind: 'move', x, y }, performance.now());
  }

  sendMouseRelative(dx: number, dy: number): void {
    this.emit('report', { kind: 'relative', dx, dy }, performance.now());
  }

  sendMouseWheel(dx: number, dy: number): void {
    this.emit('report', { kind: 'wheel', dx, dy }, performance.now());
  }

  typeSequence(events: Iterable<KeyEvent>, delayMs: number, signal: AbortSignal): Promise<void> {
    return paceKeyEvents(events, delayMs, signal, (key, pressed) => this.sendKey(key, pressed));
  }

  async setMouseOutput(output: string): Promise<void> {
    this.absolute = output !== 'usb_rel';
    this.notify();
  }

  async setConnected(connected: boolean): Promise<void> {
    this.connected = connected;
    if (!connected) this.pressed.clear();
    this.notify();
  }

  async init(): Promise<void> {}
  async dispose(): Promise<void> {}

  private notify(): void {
    const state = this.getState();
    for (const l of this.stateListeners) l(state);
  }
}

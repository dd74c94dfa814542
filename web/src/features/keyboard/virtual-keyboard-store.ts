/**
 * The virtual keyboard's state (SPEC 2 "Virtual keyboard has three display modes"): the display
 * mode the user chose, the mode actually shown, and the keys it sends.
 *
 * - `effectiveKeyboardMode`: the forced-floating rule.
 * - `useVirtualKeyboard`: the user's choice (kept in local storage) and whether a shortcut is
 *   being added.
 * - `VirtualKeyInput`: what a click on a key sends, with latching modifiers. A plain class over a
 *   KeySink, so the exact key sequence is tested with a recording fake.
 */
import { create } from 'zustand';
import {
  KEYBOARD_FORCE_FLOATING_MAX_HEIGHT,
  PRODUCT_STORAGE_PREFIX,
} from '@kvm/protocol/constants';
import { isModifierKey } from '@kvm/protocol/hid/keys';
import { readStorage, writeStorage } from '../../lib/storage';

export const KEYBOARD_MODES = ['floating', 'fixed', 'closed'] as const;
export type KeyboardMode = (typeof KEYBOARD_MODES)[number];
export type OpenKeyboardMode = Exclude<KeyboardMode, 'closed'>;

/** Local storage: the chosen mode, and the placement the toggle button reopens it in. */
export const KEYBOARD_MODE_STORAGE_KEY = `${PRODUCT_STORAGE_PREFIX}virtual_keyboard`;
export const KEYBOARD_OPEN_MODE_STORAGE_KEY = `${PRODUCT_STORAGE_PREFIX}virtual_keyboard_open`;

export interface KeyboardModeInputs {
  /** What the user chose. */
  chosen: KeyboardMode;
  fullscreen: boolean;
  /** window.innerHeight, as the debounced viewport store reports it (SPEC 9: 300 ms). */
  viewportHeight: number;
  /** A shortcut is being added: its keys are picked on the virtual keyboard. */
  adding: boolean;
}

/**
 * SPEC 2: forced to floating in fullscreen (a docked keyboard would take the screen's space), at
 * a window height of 600 or less (SPEC 9) and while a shortcut is being added. Closed stays
 * closed, except while adding: the keys are picked on it.
 */
export function effectiveKeyboardMode(inputs: KeyboardModeInputs): KeyboardMode {
  if (inputs.adding) return 'floating';
  if (inputs.chosen === 'closed') return 'closed';
  if (inputs.fullscreen || inputs.viewportHeight <= KEYBOARD_FORCE_FLOATING_MAX_HEIGHT) {
    return 'floating';
  }
  return inputs.chosen;
}

function isKeyboardMode(value: unknown): value is KeyboardMode {
  return typeof value === 'string' && (KEYBOARD_MODES as readonly string[]).includes(value);
}

export interface VirtualKeyboardState {
  chosen: KeyboardMode;
  /** Where the toggle button reopens it: the last open mode chosen. */
  openMode: OpenKeyboardMode;
  adding: boolean;
}

/** Closed until the user opens it: most visits never do (house style: lazy-loaded). */
export function readKeyboardPrefs(): Pick<VirtualKeyboardState, 'chosen' | 'openMode'> {
  const chosen = readStorage(KEYBOARD_MODE_STORAGE_KEY);
  const open = readStorage(KEYBOARD_OPEN_MODE_STORAGE_KEY);
  return {
    chosen: isKeyboardMode(chosen) ? chosen : 'closed',
    openMode: open === 'fixed' ? 'fixed' : 'floating',
  };
}

export const useVirtualKeyboard = create<VirtualKeyboardState>(() => ({
  ...readKeyboardPrefs(),
  adding: false,
}));

export function setKeyboardMode(mode: KeyboardMode): void {
  writeStorage(KEYBOARD_MODE_STORAGE_KEY, mode);
  if (mode !== 'closed') writeStorage(KEYBOARD_OPEN_MODE_STORAGE_KEY, mode);
  useVirtualKeyboard.setState((s) => ({
    chosen: mode,
    openMode: mode === 'closed' ? s.openMode : mode,
  }));
}

/** The toolbar button: closes an open keyboard, opens a closed one where it was last. */
export function toggleKeyboard(): void {
  const { chosen, openMode } = useVirtualKeyboard.getState();
  setKeyboardMode(chosen === 'closed' ? openMode : 'closed');
}

export function setAddingShortcut(adding: boolean): void {
  useVirtualKeyboard.setState({ adding });
}

/** For tests. */
export function resetVirtualKeyboardForTests(): void {
  useVirtualKeyboard.setState({ ...readKeyboardPrefs(), adding: false });
}

/** Where the virtual keyboard's keys go: the console's HidSender (features/input). */
export interface KeySink {
  key(code: string, pressed: boolean): unknown;
}

/** What the keyboard shows as held: latched modifiers, and the key under the pointer. */
export interface VirtualKeySnapshot {
  /** Latched modifiers, in the order they were latched. */
  latched: readonly string[];
  /** The non-modifier key pressed right now, if any. */
  down: string | null;
}

const IDLE: VirtualKeySnapshot = { latched: [], down: null };

/**
 * Clicks on the virtual keyboard's keys, as key events.
 *
 * | event                  | modifier key                          | other key                    |
 * |------------------------|---------------------------------------|------------------------------|
 * | press (pointer down)   | not latched: press it and latch it;   | press it                     |
 * |                        | latched: release it and unlatch it    |                              |
 * | release (pointer up)   | nothing                               | release it, then release     |
 * |                        |                                       | the latched, last one first  |
 *
 * So Ctrl, Alt, then Del on the keyboard send Ctrl+Alt+Del and leave nothing held. While a
 * capture is set (a shortcut is being added) keys go to it and nothing is sent.
 */
export class VirtualKeyInput {
  private readonly sink: KeySink;
  private snapshot: VirtualKeySnapshot = IDLE;
  private capture: ((code: string) => void) | null = null;
  private readonly listeners = new Set<() => void>();

  constructor(sink: KeySink) {
    this.sink = sink;
  }

  getSnapshot = (): VirtualKeySnapshot => this.snapshot;

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  get capturing(): boolean {
    return this.capture !== null;
  }

  /**
   * Routes key presses to `onKey` instead of the remote computer (null ends it). Latched
   * modifiers are released first: they would stay held on the remote meanwhile.
   */
  setCapture(onKey: ((code: string) => void) | null): void {
    if (onKey) this.releaseAll();
    this.capture = onKey;
  }

  press(code: string): void {
    if (this.capture) {
      this.capture(code);
      return;
    }
    const { latched, down } = this.snapshot;
    if (isModifierKey(code)) {
      if (latched.includes(code)) {
        this.sink.key(code, false);
        this.set({ latched: latched.filter((k) => k !== code), down });
      } else {
        this.sink.key(code, true);
        this.set({ latched: [...latched, code], down });
      }
      return;
    }
    // A second pointer on another key: the first one's click ends here, as on a real keyboard.
    if (down !== null && down !== code) this.sink.key(down, false);
    this.sink.key(code, true);
    this.set({ latched, down: code });
  }

  release(code: string): void {
    if (this.capture || isModifierKey(code) || this.snapshot.down !== code) return;
    this.sink.key(code, false);
    for (const modifier of [...this.snapshot.latched].reverse()) this.sink.key(modifier, false);
    this.set(IDLE);
  }

  /** Releases everything this keyboard holds (it closes, or capture starts). */
  releaseAll(): void {
    const { latched, down } = this.snapshot;
    if (down !== null) this.sink.key(down, false);
    for (const modifier of [...latched].reverse()) this.sink.key(modifier, false);
    if (this.snapshot !== IDLE) this.set(IDLE);
  }

  /**
   * Forgets keys the sender no longer holds: a release-all of the HidSender (the console lost
   * focus, the remote screen released everything) must not leave caps shown as latched.
   */
  syncHeld(held: ReadonlySet<string>): void {
    const { latched, down } = this.snapshot;
    const kept = latched.filter((k) => held.has(k));
    const keptDown = down !== null && held.has(down) ? down : null;
    if (kept.length !== latched.length || keptDown !== down) {
      this.set(kept.length === 0 && keptDown === null ? IDLE : { latched: kept, down: keptDown });
    }
  }

  private set(next: VirtualKeySnapshot): void {
    this.snapshot = next;
    for (const listener of [...this.listeners]) listener();
  }
}

/** The level of a keycap to show: Shift and AltGr (right Alt) pick it when latched. */
export type KeyLevel = 'base' | 'shift' | 'altgr' | 'shiftAltgr';

export function keyLevel(latched: readonly string[]): KeyLevel {
  const shift = latched.includes('ShiftLeft') || latched.includes('ShiftRight');
  const altgr = latched.includes('AltRight');
  if (shift && altgr) return 'shiftAltgr';
  if (shift) return 'shift';
  if (altgr) return 'altgr';
  return 'base';
}

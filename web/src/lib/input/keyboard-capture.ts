/**
 * Keyboard capture: DOM KeyboardEvents of the remote screen → key(code, pressed) on the HID
 * sender, by web name (`KeyboardEvent.code`, the wire's key identity, wire-protocol.md 2.8). A
 * plain class, no React. `handleKey` takes plain objects so every quirk is unit-tested; `attach`
 * wires it to the DOM.
 *
 * Every browser/OS quirk is its own block below, named by platform and bug.
 */
import { isModifierKey, keyByCode } from '@kvm/protocol/hid/keys';

export type Platform = 'mac' | 'windows' | 'other';

/** What the capture needs of the HID sender. */
export interface KeySink {
  key(code: string, pressed: boolean): unknown;
  releaseAll(): void;
  readonly pressedKeys: ReadonlySet<string>;
}

/** The fields of a KeyboardEvent used here. */
export interface KeyEventLike {
  readonly type: string;
  readonly code: string;
  readonly repeat: boolean;
  readonly timeStamp: number;
  preventDefault(): void;
}

export interface TimeoutTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export interface KeyboardCaptureOptions {
  sink: KeySink;
  platform: Platform;
  timers?: TimeoutTimers;
}

/** The DOM a capture attaches to (tests pass their own). */
export interface KeyboardEnvironment {
  window: Pick<Window, 'addEventListener' | 'removeEventListener'>;
  document: Pick<Document, 'addEventListener' | 'removeEventListener' | 'visibilityState'> & {
    readonly fullscreenElement: Element | null;
  };
  navigator: Navigator;
}

/** Keyboard Lock API (Chromium only; feature-detected). */
interface KeyboardLock {
  lock?: (codes?: string[]) => Promise<void>;
  unlock?: () => void;
}

/**
 * How long a ControlLeft press waits for the AltRight press that would make it a fake (AltGr on
 * Windows). Both come from one OS message, dispatched back to back; any other key flushes it
 * earlier, so the order of keys is kept.
 */
export const ALTGR_WINDOW_MS = 20;

const defaultTimers: TimeoutTimers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** The platform of this browser, for the quirks that depend on it. */
export function detectPlatform(nav: {
  platform?: string;
  userAgent?: string;
  userAgentData?: { platform?: string };
}): Platform {
  const name = `${nav.userAgentData?.platform ?? ''} ${nav.platform ?? ''} ${nav.userAgent ?? ''}`;
  // iPadOS reports "MacIntel"; its hardware keyboards have the same Meta behaviour.
  if (/mac|iphone|ipad|ipod/i.test(name)) return 'mac';
  if (/win/i.test(name)) return 'windows';
  return 'other';
}

function isMeta(code: string): boolean {
  return code === 'MetaLeft' || code === 'MetaRight';
}

export class KeyboardCapture {
  private readonly sink: KeySink;
  private readonly platform: Platform;
  private readonly timers: TimeoutTimers;
  private enabled = true;
  /** Windows AltGr: a ControlLeft press held back until we know it is not the fake one. */
  private pendingControl: { timeStamp: number; timer: unknown } | null = null;
  /** macOS: non-modifier keys pressed while Meta was held (their keyup never comes). */
  private readonly underMeta = new Set<string>();
  /** Re-applies the Keyboard Lock after an enabled change (set while attached). */
  private syncLock: () => void = () => undefined;

  constructor(options: KeyboardCaptureOptions) {
    this.sink = options.sink;
    this.platform = options.platform;
    this.timers = options.timers ?? defaultTimers;
  }

  get isEnabled(): boolean {
    return this.enabled;
  }

  /** keyboard_control=false: no key is captured (the browser keeps them) and nothing stays held. */
  setEnabled(enabled: boolean): void {
    if (this.enabled === enabled) return;
    this.enabled = enabled;
    if (!enabled) this.releaseAll();
    this.syncLock();
  }

  /** A keydown or keyup of the remote screen. */
  handleKey(event: KeyEventLike): void {
    if (!this.enabled) return;
    if (event.type !== 'keydown' && event.type !== 'keyup') return;
    const { code } = event;
    const pressed = event.type === 'keydown';

    // IME composition, some virtual and Android keyboards, dead keys on old engines: no
    // physical key is named. Nothing to send; the browser keeps the event.
    if (!code || code === 'Unidentified') return;
    // Keys the device cannot press (media keys, Fn, vendor keys): left to the browser.
    if (!keyByCode(code)) return;

    // A captured key is the remote computer's: the browser must not act on it (Tab moving the
    // focus, Backspace, F5, Ctrl+F...). Ctrl+W/T/N stay the browser's unless the page is in
    // fullscreen with the Keyboard Lock (below, attach).
    event.preventDefault();

    // All browsers: a held key repeats its keydown (`repeat` set). The remote OS repeats a held
    // key by itself, so repeats are not sent.
    if (pressed && event.repeat) return;

    // Chromium on Windows: AltGr arrives as a fake ControlLeft keydown right before the AltRight
    // keydown, with the same timeStamp (Windows synthesises the Ctrl, so other Windows browsers
    // may show it too). Sent on, the remote would see Ctrl+Alt and type nothing or the wrong
    // character: the fake is dropped.
    if (this.platform === 'windows') {
      const pending = this.takePendingControl();
      if (pending !== null) {
        const fake = pressed && code === 'AltRight' && event.timeStamp === pending;
        if (!fake) this.sink.key('ControlLeft', true);
      }
      if (pressed && code === 'ControlLeft') {
        const timer = this.timers.setTimeout(() => {
          if (this.takePendingControl() !== null) this.sink.key('ControlLeft', true);
        }, ALTGR_WINDOW_MS);
        this.pendingControl = { timeStamp: event.timeStamp, timer };
        return;
      }
    }

    // macOS (all browsers): CapsLock reports keydown when the lock turns on and keyup when it
    // turns off, one event per physical press. Each one is a full press and release.
    if (this.platform === 'mac' && code === 'CapsLock') {
      this.sink.key(code, true);
      this.sink.key(code, false);
      return;
    }

    // macOS (all browsers): while Meta (Cmd) is held, the keyup of other keys is not delivered.
    // Those keys are released with Meta; a second press of one (Cmd+Z, Z) is sent as a release
    // and a new press, or the remote would see it held once.
    if (this.platform === 'mac') {
      if (!pressed && isMeta(code)) {
        for (const held of this.underMeta) this.sink.key(held, false);
        this.underMeta.clear();
        this.sink.key(code, false);
        return;
      }
      if (pressed && !isModifierKey(code) && this.metaHeld()) {
        if (this.underMeta.has(code)) this.sink.key(code, false);
        this.underMeta.add(code);
      }
      if (!pressed) this.underMeta.delete(code);
    }

    this.sink.key(code, pressed);
  }

  /**
   * The window lost focus, the page was hidden or the screen lost the keyboard focus: the keyups
   * of keys held now go elsewhere, so everything is released (keys and buttons).
   */
  releaseAll(): void {
    this.takePendingControl();
    this.underMeta.clear();
    this.sink.releaseAll();
  }

  /**
   * Listens on `target` (the remote screen; it needs the keyboard focus) and on the window and
   * document for the release and Keyboard Lock rules. Returns the detach function.
   */
  attach(target: EventTarget, env: KeyboardEnvironment = defaultEnvironment()): () => void {
    const onKey = (event: Event) => this.handleKey(event as KeyboardEvent);
    const onBlur = () => this.releaseAll();
    const onVisibility = () => {
      if (env.document.visibilityState === 'hidden') this.releaseAll();
    };
    // Chromium (Keyboard Lock API): in fullscreen, with the keyboard locked, Esc, Meta and
    // Alt+Tab reach the page instead of the OS; holding Esc still leaves fullscreen. Other
    // browsers lack the API: the check below skips it.
    const keyboard = (env.navigator as Navigator & { keyboard?: KeyboardLock }).keyboard;
    let locked = false;
    const syncLock = () => {
      const want = this.enabled && env.document.fullscreenElement !== null;
      if (want && !locked && keyboard?.lock) {
        locked = true;
        keyboard.lock().catch(() => {
          locked = false;
        });
      } else if (!want && locked) {
        locked = false;
        keyboard?.unlock?.();
      }
    };
    target.addEventListener('keydown', onKey);
    target.addEventListener('keyup', onKey);
    target.addEventListener('blur', onBlur);
    env.window.addEventListener('blur', onBlur);
    env.document.addEventListener('visibilitychange', onVisibility);
    env.document.addEventListener('fullscreenchange', syncLock);
    syncLock();
    this.syncLock = syncLock;
    return () => {
      target.removeEventListener('keydown', onKey);
      target.removeEventListener('keyup', onKey);
      target.removeEventListener('blur', onBlur);
      env.window.removeEventListener('blur', onBlur);
      env.document.removeEventListener('visibilitychange', onVisibility);
      env.document.removeEventListener('fullscreenchange', syncLock);
      this.syncLock = () => undefined;
      if (locked) {
        locked = false;
        keyboard?.unlock?.();
      }
      this.releaseAll();
    };
  }

  private metaHeld(): boolean {
    const keys = this.sink.pressedKeys;
    return keys.has('MetaLeft') || keys.has('MetaRight');
  }

  /** Clears the held-back ControlLeft; its timeStamp, or null when there was none. */
  private takePendingControl(): number | null {
    const pending = this.pendingControl;
    if (!pending) return null;
    this.pendingControl = null;
    this.timers.clearTimeout(pending.timer);
    return pending.timeStamp;
  }
}

function defaultEnvironment(): KeyboardEnvironment {
  return { window, document, navigator };
}

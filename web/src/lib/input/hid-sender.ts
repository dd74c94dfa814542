/**
 * The one path of HID input from the console to the device (wire-protocol.md 2.8 binary ops 1-5,
 * plus this product's 0x06 release-all and 0x07 keepalive). A plain class, no React: the
 * keyboard and mouse captures, the virtual keyboard, shortcuts and paste all send through it,
 * so it alone knows what this console holds pressed.
 *
 * Route per frame: the WebRTC data channel when it is open, else the event socket /api/ws.
 * Nothing is queued: a frame that neither can carry is dropped (the device releases what a
 * disconnected client held, so no key stays down). A hold that began on the socket stays there
 * until nothing is held: the channel opening mid-hold must not split a press and its release
 * across two connections, which the device orders and tracks separately.
 *
 * Held state: keys and buttons pressed and not yet released. From the first press until nothing
 * is held a 0x07 keepalive goes out at once and then every HID_KEEPALIVE_INTERVAL_MS: the device
 * releases everything of a client that holds something and goes silent for
 * HID_KEEPALIVE_TIMEOUT_MS (a frozen tab, a lost network).
 */
import {
  encodeKey,
  encodeMouseButton,
  encodeMouseMove,
  encodeMouseRelative,
  encodeMouseWheel,
  type Delta,
} from '@kvm/protocol/hid/codec';
import type { MouseButton } from '@kvm/protocol/hid/keys';
import {
  HID_KEEPALIVE_INTERVAL_MS,
  HID_OP_KEEPALIVE,
  HID_OP_RELEASE_ALL,
} from '@kvm/protocol/hid/state';
import type { InputChannel } from '../input-channel';

/** setInterval/clearInterval; tests pass fakes or use vitest's fake timers. */
export interface IntervalTimers {
  setInterval(fn: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

export interface HidSenderOptions {
  /** The data channel of the current WebRTC session, or null without one. */
  channel: () => InputChannel | null;
  /** The event socket (binary frames on /api/ws); false when it is not open. */
  socket: { sendBinary(data: Uint8Array): boolean };
  timers?: IntervalTimers;
}

/** What is held, for UIs (a new object on every change: usable as a useSyncExternalStore snapshot). */
export interface HeldSnapshot {
  /** Web key names in the order they were pressed. */
  keys: ReadonlySet<string>;
  buttons: ReadonlySet<MouseButton>;
}

const EMPTY: HeldSnapshot = { keys: new Set(), buttons: new Set() };

const defaultTimers: IntervalTimers = {
  setInterval: (fn, ms) => setInterval(fn, ms),
  clearInterval: (handle) => clearInterval(handle as ReturnType<typeof setInterval>),
};

export class HidSender {
  private readonly options: HidSenderOptions;
  private readonly timers: IntervalTimers;
  private held: HeldSnapshot = EMPTY;
  private keepalive: unknown = null;
  private lastRoute: 'channel' | 'socket' | null = null;
  /** The current hold began on the socket (see the route rule above). */
  private socketHold = false;
  private readonly listeners = new Set<() => void>();

  constructor(options: HidSenderOptions) {
    this.options = options;
    this.timers = options.timers ?? defaultTimers;
  }

  /** Keys held, in press order. The same Set until something changes. */
  get pressedKeys(): ReadonlySet<string> {
    return this.held.keys;
  }

  get pressedButtons(): ReadonlySet<MouseButton> {
    return this.held.buttons;
  }

  getSnapshot = (): HeldSnapshot => this.held;

  /** Runs after every change of what is held; returns the unsubscribe function. */
  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  /**
   * Presses or releases a key (web name, `KeyboardEvent.code`). A press of a key already held is
   * not sent again: the remote OS repeats a held key by itself. A release is always sent (the
   * device ignores the release of a key it does not hold). Returns whether a frame went out.
   */
  key(code: string, pressed: boolean): boolean {
    const keys = this.held.keys;
    if (pressed && keys.has(code)) return false;
    const sent = this.send(encodeKey(code, pressed));
    if (pressed) this.setHeld({ ...this.held, keys: new Set([...keys, code]) });
    else if (keys.has(code)) this.setHeld({ ...this.held, keys: without(keys, code) });
    return sent;
  }

  /** Presses or releases a mouse button; the same rules as key(). */
  mouseButton(button: MouseButton, pressed: boolean): boolean {
    const buttons = this.held.buttons;
    if (pressed && buttons.has(button)) return false;
    const sent = this.send(encodeMouseButton(button, pressed));
    if (pressed) this.setHeld({ ...this.held, buttons: new Set([...buttons, button]) });
    else if (buttons.has(button)) this.setHeld({ ...this.held, buttons: without(buttons, button) });
    return sent;
  }

  /** Absolute position, -32768..32767 per axis (clamped by the codec). */
  move(x: number, y: number): boolean {
    return this.send(encodeMouseMove(x, y));
  }

  /** One relative movement, each axis clamped to ±127. */
  relative(dx: number, dy: number): boolean {
    return this.send(encodeMouseRelative([{ x: dx, y: dy }], false));
  }

  /**
   * Several relative movements in one frame (each pair clamped to ±127). With squash the device
   * sums consecutive pairs into as few reports as fit (wire-protocol.md 2.8).
   */
  relativeBatch(deltas: readonly Delta[], squash = true): boolean {
    if (deltas.length === 0) return false;
    return this.send(encodeMouseRelative(deltas, squash));
  }

  /** One wheel report; positive dy scrolls up, each axis clamped to ±127. */
  wheel(dx: number, dy: number): boolean {
    return this.send(encodeMouseWheel([{ x: dx, y: dy }], false));
  }

  /** A shortcut or a virtual key: presses in order, releases in reverse order. */
  tap(codes: readonly string[]): void {
    for (const code of codes) this.key(code, true);
    for (const code of [...codes].reverse()) this.key(code, false);
  }

  /**
   * Releases everything: a key-up for every key and button held here, then the 0x06 frame so the
   * device also drops whatever it holds for this client that this side no longer knows about.
   */
  releaseAll(): void {
    const { keys, buttons } = this.held;
    for (const code of [...keys].reverse()) this.send(encodeKey(code, false));
    for (const button of buttons) this.send(encodeMouseButton(button, false));
    this.send(Uint8Array.of(HID_OP_RELEASE_ALL));
    if (holds(this.held)) this.setHeld(EMPTY);
  }

  /** Stops the keepalive timer (tests, teardown). Held state stays as it is. */
  dispose(): void {
    this.stopKeepalive();
  }

  private send(frame: Uint8Array): boolean {
    const channel = this.options.channel();
    const stayOnSocket = this.socketHold && holds(this.held);
    // Closed between isOpen and send: the socket takes the frame instead.
    if (!stayOnSocket && channel?.isOpen && channel.send(frame)) {
      this.lastRoute = 'channel';
      return true;
    }
    const sent = this.options.socket.sendBinary(frame);
    this.lastRoute = sent ? 'socket' : null;
    return sent;
  }

  private setHeld(next: HeldSnapshot): void {
    const wasHolding = holds(this.held);
    this.held = next;
    const holding = holds(next);
    if (holding && !wasHolding) {
      // The press that began the hold was the last frame sent.
      this.socketHold = this.lastRoute === 'socket';
      this.startKeepalive();
    }
    if (!holding && wasHolding) {
      this.socketHold = false;
      this.stopKeepalive();
    }
    for (const listener of [...this.listeners]) listener();
  }

  private startKeepalive(): void {
    this.stopKeepalive();
    // One at once, right after the first press: from then on the device watches this client, so
    // a tab that freezes before the first tick does not leave the key down either.
    this.send(Uint8Array.of(HID_OP_KEEPALIVE));
    this.keepalive = this.timers.setInterval(() => {
      this.send(Uint8Array.of(HID_OP_KEEPALIVE));
    }, HID_KEEPALIVE_INTERVAL_MS);
  }

  private stopKeepalive(): void {
    if (this.keepalive === null) return;
    this.timers.clearInterval(this.keepalive);
    this.keepalive = null;
  }
}

function holds(held: HeldSnapshot): boolean {
  return held.keys.size > 0 || held.buttons.size > 0;
}

function without<T>(set: ReadonlySet<T>, item: T): Set<T> {
  const next = new Set(set);
  next.delete(item);
  return next;
}

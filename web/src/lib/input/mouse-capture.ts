/**
 * Mouse capture: DOM mouse and wheel events over the remote screen → HID sender (wire-protocol.md
 * 2.8 ops 2-5). A plain class, no React; the handle* methods take plain objects so the mapping,
 * coalescing and clamping are unit-tested, `attach` wires them to the DOM.
 *
 * - Absolute mode: pointer positions map to -32768..32767 through the caller's mapper (video
 *   geometry: letterbox and orientation). Moves are coalesced: the first goes at once, then at
 *   most one every `mouse_polling` ms (10..100) with the latest position.
 * - Relative mode: the Pointer Lock API (taken by a click on the screen); movementX/Y scaled by
 *   relative_sense / 10, each pair clamped to ±127, batched per poll interval and sent with
 *   squash (the device sums them into as few reports as fit).
 * - Wheel: one report per poll interval; see `wheelReport` for the directions.
 * - Buttons: DOM 0 left, 1 middle, 2 right, 3 back (`up`), 4 forward (`down`).
 */
import { clampDelta, type Delta } from '@kvm/protocol/hid/codec';
import type { MouseButton } from '@kvm/protocol/hid/keys';
import type { ScrollMode } from '@kvm/protocol/enums';
import type { TimeoutTimers } from './keyboard-capture';

/** What the capture needs of the HID sender. */
export interface MouseSink {
  mouseButton(button: MouseButton, pressed: boolean): unknown;
  move(x: number, y: number): unknown;
  relativeBatch(deltas: readonly Delta[], squash: boolean): unknown;
  wheel(dx: number, dy: number): unknown;
  readonly pressedButtons: ReadonlySet<MouseButton>;
}

export interface MouseSettings {
  /** The device's mouse is absolute (tablet) rather than relative. */
  absolute: boolean;
  /** `mouse_polling`: ms between reports, 10..100. */
  pollingMs: number;
  /** `relative_sense`: 1..100, 10 is ×1.0. */
  relativeSense: number;
  /** `scroll_rate`: wheel units per report, 1..127. */
  scrollRate: number;
  reverseScrolling: ScrollMode;
}

export const DEFAULT_MOUSE_SETTINGS: Readonly<MouseSettings> = {
  absolute: true,
  pollingMs: 10,
  relativeSense: 10,
  scrollRate: 5,
  reverseScrolling: 'STANDARD',
};

/** Client coordinates → the remote screen's absolute range; null while there is no picture. */
export type PointMapper = (point: { x: number; y: number }) => { x: number; y: number } | null;

export interface MouseCaptureOptions {
  sink: MouseSink;
  toAbsolute: PointMapper;
  settings?: Partial<MouseSettings>;
  timers?: TimeoutTimers;
}

/** The fields of the DOM events used here. */
export interface PointerEventLike {
  readonly clientX: number;
  readonly clientY: number;
  readonly movementX?: number;
  readonly movementY?: number;
}

export interface ButtonEventLike extends PointerEventLike {
  readonly type: string;
  readonly button: number;
  preventDefault(): void;
}

export interface WheelEventLike {
  readonly deltaX: number;
  readonly deltaY: number;
  preventDefault(): void;
}

/** What attach needs of the page (tests pass their own). */
export interface MouseEnvironment {
  document: Pick<Document, 'addEventListener' | 'removeEventListener'> & {
    readonly pointerLockElement: Element | null;
    exitPointerLock(): void;
  };
}

const DOM_BUTTONS: Readonly<Record<number, MouseButton>> = {
  0: 'left',
  1: 'middle',
  2: 'right',
  3: 'up',
  4: 'down',
};

export function domButton(button: number): MouseButton | null {
  return DOM_BUTTONS[button] ?? null;
}

/**
 * The wheel report for the deltas a browser reported. The wire's positive dy scrolls up, while a
 * browser's positive deltaY scrolls the page down: the report is `-sign(delta) * scroll_rate` per
 * axis (kvmd's web UI does the same for y; x follows the same rule).
 * - STANDARD: as the browser reports. If the local OS uses natural scrolling, the browser's
 *   deltas are already natural, so the remote scrolls as the local page would.
 * - VERTICAL: the vertical direction reversed.
 * - HORIZONTAL: the horizontal direction reversed.
 * - BOTH: both reversed.
 */
export function wheelReport(
  deltaX: number,
  deltaY: number,
  rate: number,
  mode: ScrollMode,
): { dx: number; dy: number } {
  const step = clampDelta(rate);
  let dx = -Math.sign(deltaX) * step;
  let dy = -Math.sign(deltaY) * step;
  if (mode === 'HORIZONTAL' || mode === 'BOTH') dx = -dx;
  if (mode === 'VERTICAL' || mode === 'BOTH') dy = -dy;
  // -0 and +0 are the same on the wire, but not to toEqual.
  return { dx: dx || 0, dy: dy || 0 };
}

const defaultTimers: TimeoutTimers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/**
 * Leading-edge throttle: the first request flushes at once, later ones within the interval are
 * merged by the caller and flushed when it ends; an interval with nothing to flush ends it.
 */
class PollGate {
  private timer: unknown = null;
  private dirty = false;

  constructor(
    private readonly timers: TimeoutTimers,
    private readonly interval: () => number,
    private readonly flush: () => void,
  ) {}

  request(): void {
    if (this.timer !== null) {
      this.dirty = true;
      return;
    }
    this.flush();
    this.arm();
  }

  /** Sends what is pending now (before a button, say) and keeps the interval running. */
  flushNow(): void {
    if (!this.dirty) return;
    this.dirty = false;
    this.flush();
  }

  cancel(): void {
    if (this.timer !== null) this.timers.clearTimeout(this.timer);
    this.timer = null;
    this.dirty = false;
  }

  private arm(): void {
    this.timer = this.timers.setTimeout(() => {
      this.timer = null;
      if (!this.dirty) return;
      this.dirty = false;
      this.flush();
      this.arm();
    }, this.interval());
  }
}

function clampPolling(ms: number): number {
  return Number.isFinite(ms) ? Math.min(100, Math.max(10, ms)) : DEFAULT_MOUSE_SETTINGS.pollingMs;
}

export class MouseCapture {
  private readonly sink: MouseSink;
  private readonly toAbsolute: PointMapper;
  private settings: MouseSettings;
  private enabled = true;
  private locked = false;
  /** Skip the next relative movement (see setPointerLocked). */
  private skipMove = false;

  private pendingPoint: { x: number; y: number } | null = null;
  private lastSent: { x: number; y: number } | null = null;
  private pendingDeltas: Delta[] = [];
  /** Fractions of a unit left over by the sensitivity scaling, carried to the next move. */
  private carry = { x: 0, y: 0 };
  private wheelSum = { x: 0, y: 0 };

  private readonly moveGate: PollGate;
  private readonly relativeGate: PollGate;
  private readonly wheelGate: PollGate;

  constructor(options: MouseCaptureOptions) {
    this.sink = options.sink;
    this.toAbsolute = options.toAbsolute;
    this.settings = { ...DEFAULT_MOUSE_SETTINGS, ...options.settings };
    const timers = options.timers ?? defaultTimers;
    const interval = () => clampPolling(this.settings.pollingMs);
    this.moveGate = new PollGate(timers, interval, () => this.flushMove());
    this.relativeGate = new PollGate(timers, interval, () => this.flushRelative());
    this.wheelGate = new PollGate(timers, interval, () => this.flushWheel());
  }

  get isEnabled(): boolean {
    return this.enabled;
  }

  get isAbsolute(): boolean {
    return this.settings.absolute;
  }

  get isLocked(): boolean {
    return this.locked;
  }

  /** mouse_control=false: nothing is captured and held buttons are released. */
  setEnabled(enabled: boolean): void {
    if (this.enabled === enabled) return;
    this.enabled = enabled;
    if (!enabled) this.reset();
    this.onChange();
  }

  setSettings(patch: Partial<MouseSettings>): void {
    const modeChanged = patch.absolute !== undefined && patch.absolute !== this.settings.absolute;
    this.settings = { ...this.settings, ...patch };
    if (modeChanged) {
      this.reset();
      this.onChange();
    }
  }

  /** The pointer lock was taken or lost (pointerlockchange). */
  setPointerLocked(locked: boolean): void {
    if (this.locked === locked) return;
    this.locked = locked;
    // Chromium (Windows, Linux): the first movement after the lock is taken can carry the jump
    // from the last absolute position, hundreds of pixels at once. It is dropped.
    this.skipMove = locked;
    // Buttons held when the lock goes (Esc) are released: their mouseup goes elsewhere.
    if (!locked) this.releaseButtons();
  }

  /** mousemove over the screen (or anywhere while the pointer is locked). */
  handleMove(event: PointerEventLike): void {
    if (!this.enabled) return;
    if (this.settings.absolute) {
      const point = this.toAbsolute({ x: event.clientX, y: event.clientY });
      if (!point) return;
      this.pendingPoint = point;
      this.moveGate.request();
      return;
    }
    if (!this.locked) return;
    if (this.skipMove) {
      this.skipMove = false;
      return;
    }
    const scale = this.settings.relativeSense / 10;
    const fx = this.carry.x + (event.movementX ?? 0) * scale;
    const fy = this.carry.y + (event.movementY ?? 0) * scale;
    const dx = Math.trunc(fx);
    const dy = Math.trunc(fy);
    this.carry = { x: fx - dx, y: fy - dy };
    if (dx === 0 && dy === 0) return;
    this.pendingDeltas.push({ x: clampDelta(dx), y: clampDelta(dy) });
    this.relativeGate.request();
  }

  /**
   * mousedown / mouseup. Returns true when the caller should request the pointer lock (a click
   * in relative mode without it: that click only takes the lock and is not sent).
   */
  handleButton(event: ButtonEventLike): boolean {
    if (!this.enabled) return false;
    const button = domButton(event.button);
    if (!button) return false;
    const pressed = event.type === 'mousedown';
    // The browser must not act on the click: selecting, dragging the video, the middle-button
    // autoscroll (Windows). Chromium and Firefox on Windows and Linux also go back/forward in
    // history on buttons 3 and 4 unless the mousedown and mouseup are both prevented.
    event.preventDefault();
    if (!this.settings.absolute && !this.locked) return pressed;
    if (this.settings.absolute) {
      // The click lands where the pointer is, not where the last coalesced move left it.
      const point = this.toAbsolute({ x: event.clientX, y: event.clientY });
      if (point) this.pendingPoint = point;
      this.flushMove();
    } else {
      this.relativeGate.flushNow();
    }
    this.sink.mouseButton(button, pressed);
    return false;
  }

  handleWheel(event: WheelEventLike): void {
    if (!this.enabled) return;
    // The page must not scroll (or zoom on Ctrl+wheel) under the remote screen.
    event.preventDefault();
    this.wheelSum = { x: this.wheelSum.x + event.deltaX, y: this.wheelSum.y + event.deltaY };
    this.wheelGate.request();
  }

  /** The pointer left the screen: buttons held now would be released elsewhere. */
  handleLeave(): void {
    if (!this.enabled || this.locked) return;
    this.moveGate.flushNow();
    this.releaseButtons();
  }

  /** The browser's menu would cover the remote computer's own right-click menu. */
  handleContextMenu(event: { preventDefault(): void }): void {
    if (this.enabled) event.preventDefault();
  }

  /** Stops timers and drops what is pending (teardown). */
  dispose(): void {
    this.reset();
  }

  /**
   * Listens on the screen element, and on the document for the pointer lock. Returns the detach
   * function.
   */
  attach(element: HTMLElement, env: MouseEnvironment = { document }): () => void {
    const doc = env.document;
    const onMove = (e: MouseEvent) => this.handleMove(e);
    const onButton = (e: MouseEvent) => {
      if (e.type === 'mousedown' && this.enabled) element.focus({ preventScroll: true });
      if (this.handleButton(e)) requestLock(element);
    };
    const onWheel = (e: WheelEvent) => this.handleWheel(e);
    const onLeave = () => this.handleLeave();
    const onMenu = (e: MouseEvent) => this.handleContextMenu(e);
    // Buttons 3/4: Chromium also fires auxclick, which some pages turn into navigation.
    const onAux = (e: MouseEvent) => {
      if (this.enabled && domButton(e.button)) e.preventDefault();
    };
    const onLockChange = () => this.setPointerLocked(doc.pointerLockElement === element);
    element.addEventListener('mousemove', onMove);
    element.addEventListener('mousedown', onButton);
    element.addEventListener('mouseup', onButton);
    element.addEventListener('auxclick', onAux);
    // Not passive: preventDefault must stop the page from scrolling.
    element.addEventListener('wheel', onWheel, { passive: false });
    element.addEventListener('mouseleave', onLeave);
    element.addEventListener('contextmenu', onMenu);
    doc.addEventListener('pointerlockchange', onLockChange);
    this.onChange = () => {
      // Absolute mode or capture off: the pointer is given back.
      if (doc.pointerLockElement === element && (!this.enabled || this.settings.absolute)) {
        doc.exitPointerLock();
      }
    };
    return () => {
      element.removeEventListener('mousemove', onMove);
      element.removeEventListener('mousedown', onButton);
      element.removeEventListener('mouseup', onButton);
      element.removeEventListener('auxclick', onAux);
      element.removeEventListener('wheel', onWheel);
      element.removeEventListener('mouseleave', onLeave);
      element.removeEventListener('contextmenu', onMenu);
      doc.removeEventListener('pointerlockchange', onLockChange);
      if (doc.pointerLockElement === element) doc.exitPointerLock();
      this.onChange = () => undefined;
      this.locked = false;
      this.reset();
    };
  }

  /** Set while attached: hands the pointer lock back when it is no longer wanted. */
  private onChange: () => void = () => undefined;

  private flushMove(): void {
    const point = this.pendingPoint;
    this.pendingPoint = null;
    if (!point) return;
    if (this.lastSent && this.lastSent.x === point.x && this.lastSent.y === point.y) return;
    this.lastSent = point;
    this.sink.move(point.x, point.y);
  }

  private flushRelative(): void {
    const deltas = this.pendingDeltas;
    this.pendingDeltas = [];
    if (deltas.length > 0) this.sink.relativeBatch(deltas, true);
  }

  private flushWheel(): void {
    const { x, y } = this.wheelSum;
    this.wheelSum = { x: 0, y: 0 };
    const { dx, dy } = wheelReport(x, y, this.settings.scrollRate, this.settings.reverseScrolling);
    if (dx !== 0 || dy !== 0) this.sink.wheel(dx, dy);
  }

  private releaseButtons(): void {
    for (const button of [...this.sink.pressedButtons]) this.sink.mouseButton(button, false);
  }

  private reset(): void {
    this.moveGate.cancel();
    this.relativeGate.cancel();
    this.wheelGate.cancel();
    this.pendingPoint = null;
    this.lastSent = null;
    this.pendingDeltas = [];
    this.carry = { x: 0, y: 0 };
    this.wheelSum = { x: 0, y: 0 };
    this.releaseButtons();
  }
}

/**
 * Pointer Lock API: a Promise in current Chromium and Firefox, undefined in older engines and
 * Safari; a refusal (no user gesture, too soon after leaving with Esc) is not an error here.
 */
function requestLock(element: HTMLElement): void {
  try {
    const result = element.requestPointerLock() as Promise<void> | undefined;
    result?.catch(() => undefined);
  } catch {
    // Not supported (some webviews).
  }
}

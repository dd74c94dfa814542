/**
 * The HID service: every input source (event socket clients, WebRTC data channels, the HTTP
 * event routes, paste) goes through here to the driver. It keeps what each client holds and
 * releases it when the client goes away, says it lost focus (op 0x06) or stops sending input
 * keepalives (op 0x07), so no key ever sticks on the remote computer. It also applies kvmd's
 * `finish` and squash rules, runs the jiggler and publishes the `hid` state.
 */
import { EventEmitter } from 'node:events';
import {
  HID_KEEPALIVE_TIMEOUT_MS,
  HID_OP_KEEPALIVE,
  HID_OP_RELEASE_ALL,
  MOUSE_OUTPUT_ABSOLUTE,
  decodeHidFrame,
  isModifierKey,
  squashDeltas,
  type Delta,
  type HidEvent,
  jigglerScheduleContains,
  type HidState,
  type JigglerPeriod,
  type MouseButton,
} from '@kvm/protocol';
import { IsBusyError, ValidatorError } from '../../errors';
import type { HidDriver, KeyEvent } from '../../drivers/hid/types';
import { ExclusiveRegion } from '../../sync/exclusive-region';
import type { JigglerSchedule } from './jiggler-schedule';
import { watchedStateProvider, type StateProvider } from '../../ws/state-registry';

/** Keys `finish` never releases (wire-protocol.md 1.4): modifiers and PrintScreen. */
function finishKeeps(key: string): boolean {
  return isModifierKey(key) || key === 'PrintScreen';
}

const WATCHDOG_TICK_MS = 50;
export const JIGGLER_INTERVAL_S = 60;

interface ClientInput {
  keys: Set<string>;
  buttons: Set<MouseButton>;
  /** Set once the client sent a keepalive: from then on silence releases what it holds. */
  watched: boolean;
  lastSeen: number;
}

export interface HidSettings {
  jiggler: boolean;
  mouseOutput: string;
}

export interface HidServiceOptions {
  driver: HidDriver;
  /** Persisted settings (jiggler, mouse output); called on every change. */
  saveSettings?: (settings: HidSettings) => Promise<void>;
  settings?: Partial<HidSettings>;
  jigglerIntervalS?: number;
  /** GL's jiggler schedule; none = the switch alone decides. */
  schedule?: JigglerSchedule;
  /** The minute of the device's local day (deviceMinuteOfDay), for the schedule. */
  localMinute?: () => Promise<number>;
  now?: () => number;
  log?: { warn(obj: object, msg?: string): void; debug(obj: object, msg?: string): void };
}

/** Why a paste stopped before its end. */
export type PasteStop = 'reset' | 'replaced' | 'session' | 'client' | 'disconnected' | 'closed';

export interface PasteOptions {
  /** At least this long between two key events. */
  delayMs: number;
  /** The session that starts it (its token hash): the paste stops when the session ends. */
  owner?: string | null;
  /** Fires when the caller is gone (the HTTP client disconnected): the paste stops. */
  signal?: AbortSignal;
}

export interface HidServiceEvents {
  state: [HidState];
  /** A client's held input was released, with why (tests and the bench watch this). */
  released: [client: string, reason: 'gone' | 'focus' | 'keepalive' | 'reset'];
}

/** 409: the mouse device is being re-created (absolute ↔ relative). */
export class HidBusyError extends IsBusyError {}

export class HidService extends EventEmitter<HidServiceEvents> {
  readonly driver: HidDriver;
  private readonly clients = new Map<string, ClientInput>();
  /** How many clients hold each key / button: the driver sees one press and one release. */
  private readonly keyHolders = new Map<string, number>();
  private readonly buttonHolders = new Map<MouseButton, number>();
  private readonly now: () => number;
  private readonly watchdog: NodeJS.Timeout;
  private readonly jigglerTimer: NodeJS.Timeout;
  private readonly scheduleTimer: NodeJS.Timeout;
  /** Now inside a period of the schedule (checked every second). */
  private inSchedule = false;
  private scheduleChecking = false;
  private scheduleSeq = 0;
  private readonly offDriver: () => void;
  private settings: HidSettings;
  /** Re-creating the mouse device (absolute ↔ relative): one at a time, reset waits for it. */
  private readonly region = new ExclusiveRegion(
    () => new HidBusyError('The mouse is being re-created'),
  );
  private readonly offRegion: () => void;
  private paste: {
    controller: AbortController;
    /** The session that started it (token hash), null for header credentials. */
    owner: string | null;
    /** Settles when it stopped and its keys are released. */
    done: Promise<void>;
  } | null = null;
  private lastActivity: number;
  private lastAbs: { x: number; y: number } = { x: 0, y: 0 };
  private lastStateJson = '';

  constructor(private readonly opts: HidServiceOptions) {
    super();
    this.driver = opts.driver;
    this.now = opts.now ?? (() => performance.now());
    this.lastActivity = this.now();
    this.settings = {
      jiggler: opts.settings?.jiggler ?? false,
      mouseOutput: opts.settings?.mouseOutput ?? MOUSE_OUTPUT_ABSOLUTE,
    };
    this.offDriver = this.driver.onState(() => this.publish());
    this.offRegion = this.region.onChange(() => this.publish());
    this.watchdog = setInterval(() => this.sweep(), WATCHDOG_TICK_MS);
    this.watchdog.unref();
    const jiggleMs = (opts.jigglerIntervalS ?? JIGGLER_INTERVAL_S) * 1000;
    this.jigglerTimer = setInterval(() => this.jiggle(jiggleMs), Math.min(jiggleMs, 1000));
    this.jigglerTimer.unref();
    this.scheduleTimer = setInterval(() => void this.checkSchedule(), 1000);
    this.scheduleTimer.unref();
  }

  /** Applies the persisted mouse output to the driver (after the driver's init). */
  async start(): Promise<void> {
    const active = this.driver.getState().mouse.outputs.active;
    if (active && active !== this.settings.mouseOutput) {
      try {
        await this.driver.setMouseOutput(this.settings.mouseOutput);
      } catch (err) {
        this.opts.log?.warn({ err }, 'hid: could not restore the mouse output');
      }
    }
    await this.checkSchedule();
    this.publish();
  }

  /**
   * kvmd/GL: `enabled` says the jiggler may be used (there is a HID); it runs when its switch
   * is on or, GL, the device's local time is inside a period of the schedule.
   */
  private jigglerActive(enabled: boolean): boolean {
    return enabled && (this.settings.jiggler || this.inSchedule);
  }

  /** GL `POST /api/hid/set_jiggler_schedule`: validated, stored, applied at once. */
  async setJigglerSchedule(periods: unknown): Promise<JigglerPeriod[]> {
    if (!this.opts.schedule) throw new ValidatorError('The jiggler schedule is not available');
    const stored = await this.opts.schedule.set(periods);
    await this.checkSchedule(true);
    this.publish();
    return stored;
  }

  /** kvmd `GET /api/hid/inactivity`: whole seconds since the last input (the jiggler's too). */
  inactivitySeconds(): number {
    return Math.max(0, Math.floor((this.now() - this.lastActivity) / 1000));
  }

  /**
   * Whether the local time is inside a period now. The 1 s tick skips while a check runs; a
   * forced check (a new schedule) always runs and the latest check wins.
   */
  private async checkSchedule(force = false): Promise<void> {
    if (this.scheduleChecking && !force) return;
    const seq = ++this.scheduleSeq;
    this.scheduleChecking = true;
    try {
      const schedule = this.opts.schedule;
      let inside = false;
      if (schedule && !schedule.empty && this.opts.localMinute) {
        inside = jigglerScheduleContains(schedule.get(), await this.opts.localMinute());
      }
      if (seq === this.scheduleSeq && inside !== this.inSchedule) {
        this.inSchedule = inside;
        this.publish();
      }
    } catch (err) {
      this.opts.log?.warn({ err }, 'hid: the jiggler schedule could not read the clock');
    } finally {
      if (seq === this.scheduleSeq) this.scheduleChecking = false;
    }
  }

  getState(): HidState {
    const d = this.driver.getState();
    return {
      enabled: d.enabled,
      online: d.online,
      busy: this.region.busy,
      connected: d.connected,
      keyboard: {
        online: d.keyboard.online,
        leds: { ...d.keyboard.leds },
        outputs: {
          available: [...d.keyboard.outputs.available],
          active: d.keyboard.outputs.active,
        },
      },
      mouse: {
        online: d.mouse.online,
        absolute: d.mouse.absolute,
        outputs: { available: [...d.mouse.outputs.available], active: d.mouse.outputs.active },
      },
      jiggler: {
        enabled: d.enabled,
        active: this.jigglerActive(d.enabled),
        interval: this.opts.jigglerIntervalS ?? JIGGLER_INTERVAL_S,
        schedule: this.opts.schedule?.get() ?? [],
      },
    };
  }

  // ---- client input ----

  /**
   * One binary frame from a client (op byte included): ops 1-5, plus release-all and
   * keepalive. Anything else is dropped silently, as kvmd does.
   */
  handleFrame(client: string, frame: Uint8Array): void {
    if (frame.length === 0) return;
    const input = this.touch(client);
    if (frame.length === 1 && frame[0] === HID_OP_KEEPALIVE) {
      input.watched = true;
      return;
    }
    if (frame.length === 1 && frame[0] === HID_OP_RELEASE_ALL) {
      this.releaseClient(client, 'focus');
      return;
    }
    const event = decodeHidFrame(frame);
    if (event) this.handleEvent(client, event);
  }

  /** One decoded event from a client. */
  handleEvent(client: string, event: HidEvent): void {
    const input = this.touch(client);
    this.lastActivity = this.now();
    switch (event.type) {
      case 'key':
        if (event.state) {
          this.press(input, event.key);
          if (event.finish && !finishKeeps(event.key)) this.release(input, event.key);
        } else {
          this.release(input, event.key);
        }
        return;
      case 'mouse_button':
        if (event.state) this.pressButton(input, event.button);
        else this.releaseButton(input, event.button);
        return;
      case 'mouse_move':
        this.lastAbs = { x: event.x, y: event.y };
        this.driver.sendMouseMove(event.x, event.y);
        return;
      case 'mouse_relative':
        for (const d of this.deltas(event.deltas, event.squash)) {
          this.driver.sendMouseRelative(d.x, d.y);
        }
        return;
      case 'mouse_wheel':
        for (const d of this.deltas(event.deltas, event.squash)) {
          this.driver.sendMouseWheel(d.x, d.y);
        }
        return;
    }
  }

  /** The client is gone (socket closed, data channel closed, viewer hung up). */
  clientGone(client: string): void {
    this.releaseClient(client, 'gone');
    this.clients.delete(client);
  }

  /** Keys and buttons the client holds now (tests). */
  held(client: string): { keys: string[]; buttons: MouseButton[] } {
    const input = this.clients.get(client);
    return { keys: [...(input?.keys ?? [])], buttons: [...(input?.buttons ?? [])] };
  }

  /** Releases everything every client holds (POST /api/hid/reset). */
  releaseAll(): void {
    for (const client of this.clients.keys()) this.releaseClient(client, 'reset');
  }

  // ---- HTTP event routes (not tracked: each call leaves nothing pressed unless asked) ----

  /** `send_key`: without a state, a press and a release. */
  sendKey(key: string, state: boolean | undefined, finish: boolean): void {
    this.lastActivity = this.now();
    const input = this.touch('http');
    if (state === undefined) {
      this.press(input, key);
      this.release(input, key);
      return;
    }
    this.handleEvent('http', { type: 'key', key, state, finish });
  }

  /** `send_shortcut`: presses in order, releases in reverse. */
  sendShortcut(keys: readonly string[]): void {
    const input = this.touch('http');
    for (const key of keys) this.press(input, key);
    for (const key of [...keys].reverse()) this.release(input, key);
    this.lastActivity = this.now();
  }

  sendMouseButton(button: MouseButton, state: boolean | undefined): void {
    const input = this.touch('http');
    if (state === undefined) {
      this.pressButton(input, button);
      this.releaseButton(input, button);
    } else if (state) this.pressButton(input, button);
    else this.releaseButton(input, button);
    this.lastActivity = this.now();
  }

  // ---- paste ----

  /** Whether a paste is being typed now. */
  get pasting(): boolean {
    return this.paste !== null;
  }

  /**
   * Types a key sequence (from the printer), one paste at a time device-wide: a new paste stops
   * the one typing (which releases its keys first), as do {@link reset}, the end of the session
   * that started it ({@link sessionEnded}) and `opts.signal` (its client left). The events are
   * taken lazily and the event loop keeps turning meanwhile.
   * @returns null when the whole sequence went out, else why it was stopped
   */
  async type(events: Iterable<KeyEvent>, opts: PasteOptions): Promise<PasteStop | null> {
    const controller = new AbortController();
    let finished!: () => void;
    const done = new Promise<void>((resolve) => (finished = resolve));
    const previous = this.paste;
    this.paste = { controller, owner: opts.owner ?? null, done };
    const clientLeft = (): void => controller.abort('client' satisfies PasteStop);
    if (opts.signal?.aborted) clientLeft();
    opts.signal?.addEventListener('abort', clientLeft, { once: true });
    try {
      if (previous) {
        previous.controller.abort('replaced' satisfies PasteStop);
        await previous.done;
      }
      if (!controller.signal.aborted) {
        this.lastActivity = this.now();
        await this.driver.typeSequence(events, opts.delayMs, controller.signal);
      }
      return controller.signal.aborted ? (controller.signal.reason as PasteStop) : null;
    } finally {
      opts.signal?.removeEventListener('abort', clientLeft);
      if (this.paste?.controller === controller) this.paste = null;
      this.lastActivity = this.now();
      finished();
    }
  }

  /** Stops the paste being typed, if any; resolves once its keys are released. */
  stopPaste(reason: PasteStop): Promise<void> {
    const paste = this.paste;
    if (!paste) return Promise.resolve();
    paste.controller.abort(reason);
    return paste.done;
  }

  /** A session ended (logout, expiry, password change): its paste stops. */
  sessionEnded(owner: string): void {
    if (this.paste && this.paste.owner === owner) void this.stopPaste('session');
  }

  /** POST /api/hid/reset: the paste stops and every client's keys and buttons are released. */
  async reset(): Promise<void> {
    const stopped = this.stopPaste('reset');
    this.releaseAll();
    await stopped;
    // A mouse being re-created may take presses meanwhile: release again once it is done,
    // before anyone else can enter.
    if (this.region.busy) await this.region.enterAfter(async () => this.releaseAll());
  }

  // ---- parameters ----

  async setParams(params: { mouseOutput?: string; jiggler?: boolean }): Promise<void> {
    if (params.jiggler !== undefined && params.jiggler !== this.settings.jiggler) {
      this.settings = { ...this.settings, jiggler: params.jiggler };
      await this.opts.saveSettings?.(this.settings);
      this.publish();
    }
    const output = params.mouseOutput;
    if (output === undefined) return;
    const available = this.driver.getState().mouse.outputs.available;
    if (!available.includes(output)) {
      throw new ValidatorError(
        `The argument 'mouse_output' (${JSON.stringify(output)}) is not a valid value of [${available.join(', ')}]`,
      );
    }
    if (output === this.driver.getState().mouse.outputs.active) return;
    await this.region.enter(async () => {
      // Buttons held on the old device would never be released on the new one.
      for (const [client, input] of this.clients) {
        if (input.buttons.size > 0) this.releaseClient(client, 'reset');
      }
      await this.driver.setMouseOutput(output);
      this.settings = { ...this.settings, mouseOutput: output };
      await this.opts.saveSettings?.(this.settings);
    });
  }

  async setConnected(connected: boolean): Promise<void> {
    if (!connected) {
      await this.stopPaste('disconnected');
      this.releaseAll();
    }
    await this.driver.setConnected(connected);
    this.publish();
  }

  /** The `hid` event of `/api/ws`. */
  provider(): StateProvider {
    return watchedStateProvider('hid', this);
  }

  dispose(): void {
    clearInterval(this.watchdog);
    clearInterval(this.jigglerTimer);
    clearInterval(this.scheduleTimer);
    this.offDriver();
    this.offRegion();
    void this.stopPaste('closed');
    this.releaseAll();
  }

  // ---- internals ----

  private touch(client: string): ClientInput {
    let input = this.clients.get(client);
    if (!input) {
      input = { keys: new Set(), buttons: new Set(), watched: false, lastSeen: this.now() };
      this.clients.set(client, input);
    }
    input.lastSeen = this.now();
    return input;
  }

  private press(input: ClientInput, key: string): void {
    // A repeated press (browser auto-repeat) is not resent: the remote OS repeats by itself.
    if (input.keys.has(key)) return;
    input.keys.add(key);
    const holders = this.keyHolders.get(key) ?? 0;
    this.keyHolders.set(key, holders + 1);
    if (holders === 0) this.driver.sendKey(key, true);
  }

  private release(input: ClientInput, key: string): void {
    if (!input.keys.delete(key)) {
      // Not held by this client: still released when nobody holds it (a release that
      // followed a reset must not be lost), never while another client holds it.
      if (!this.keyHolders.get(key)) this.driver.sendKey(key, false);
      return;
    }
    const holders = (this.keyHolders.get(key) ?? 1) - 1;
    if (holders > 0) this.keyHolders.set(key, holders);
    else {
      this.keyHolders.delete(key);
      this.driver.sendKey(key, false);
    }
  }

  private pressButton(input: ClientInput, button: MouseButton): void {
    if (input.buttons.has(button)) return;
    input.buttons.add(button);
    const holders = this.buttonHolders.get(button) ?? 0;
    this.buttonHolders.set(button, holders + 1);
    if (holders === 0) this.driver.sendMouseButton(button, true);
  }

  private releaseButton(input: ClientInput, button: MouseButton): void {
    if (!input.buttons.delete(button)) {
      if (!this.buttonHolders.get(button)) this.driver.sendMouseButton(button, false);
      return;
    }
    const holders = (this.buttonHolders.get(button) ?? 1) - 1;
    if (holders > 0) this.buttonHolders.set(button, holders);
    else {
      this.buttonHolders.delete(button);
      this.driver.sendMouseButton(button, false);
    }
  }

  private releaseClient(client: string, reason: 'gone' | 'focus' | 'keepalive' | 'reset'): void {
    const input = this.clients.get(client);
    if (!input || (input.keys.size === 0 && input.buttons.size === 0)) return;
    // Non-modifiers first, then modifiers: a release of Ctrl before C could type a 'c'.
    const keys = [...input.keys].sort((a, b) => Number(finishKeeps(a)) - Number(finishKeeps(b)));
    for (const key of keys) this.release(input, key);
    for (const button of [...input.buttons]) this.releaseButton(input, button);
    this.emit('released', client, reason);
  }

  private deltas(list: readonly Delta[], squash: boolean): readonly Delta[] {
    return squash ? squashDeltas(list) : list;
  }

  /** Releases what silent keepalive clients hold. */
  private sweep(): void {
    const now = this.now();
    for (const [client, input] of this.clients) {
      if (!input.watched || (input.keys.size === 0 && input.buttons.size === 0)) continue;
      if (now - input.lastSeen > HID_KEEPALIVE_TIMEOUT_MS) {
        this.opts.log?.debug({ client }, 'hid: input keepalive lost, releasing');
        this.releaseClient(client, 'keepalive');
      }
    }
  }

  /** The jiggler: after `intervalMs` without input, a tiny move there and back. */
  private jiggle(intervalMs: number): void {
    const state = this.driver.getState();
    if (!this.jigglerActive(state.enabled) || this.paste) return;
    if (!state.mouse.online) return;
    const now = this.now();
    if (now - this.lastActivity < intervalMs) return;
    this.lastActivity = now;
    if (state.mouse.absolute) {
      const { x, y } = this.lastAbs;
      this.driver.sendMouseMove(x < 32767 - 64 ? x + 64 : x - 64, y);
      this.driver.sendMouseMove(x, y);
    } else {
      this.driver.sendMouseRelative(1, 0);
      this.driver.sendMouseRelative(-1, 0);
    }
  }

  private publish(): void {
    const state = this.getState();
    const json = JSON.stringify(state);
    if (json === this.lastStateJson) return;
    this.lastStateJson = json;
    this.emit('state', state);
  }
}

/**
 * QEMU HID: QMP `input-send-event` to the USB keyboard and pointer bound to display `video0`
 * (architecture.md, QEMU). The absolute output is the usb-tablet (0..32767 on both axes), the
 * relative output a usb-mouse; switching re-creates the device the guest sees, like a gadget
 * that re-enumerates. Paste goes to the PS/2 keyboard (no `device`), which takes keys far faster
 * than usb-kbd's 16-report queue that the guest empties once per 10 ms poll.
 */
import { ABS_MAX, ABS_MIN, keyByCode, type MouseButton } from '@kvm/protocol';
import { paceKeyEvents } from './pace';
import type { HidDriver, HidDriverState, KeyEvent } from './types';
import type { QemuMachine } from '../../platform/qemu/machine';
import { QmpClosedError, type QmpInputEvent } from '../../platform/qemu/qmp';
import type { Logger } from '../../log';

const DISPLAY = 'video0';
/**
 * The bus of `-usb` (UHCI), where the command line puts the keyboard and tablet: without it,
 * device_add picks the USB 3 controller of the virtual media drives.
 */
const USB_BUS = 'usb-bus.0';
/** usb-kbd queues 16 reports and the guest polls every 10 ms: one key transition per slot. */
export const USB_KEY_GAP_MS = 10;
/**
 * PS/2 (i8042) paste pace when slow is off, start to start, one event per command. Measured on
 * the TCG guest: one event every 2.8 ms lost nothing in 800; bursts of 4 events in one command
 * lost 3-8 % even at 1.4 ms per event on average (docs/drivers.md).
 */
export const PS2_KEY_GAP_MS = 3;
const TABLET_MAX = 32767;
/**
 * The most reports waiting for QMP. Past it (a guest that stopped taking input, a client that
 * floods), pointer reports and key and button presses are dropped and counted; releases of
 * what is down are always queued, so the queue stays under this plus the keys and buttons
 * that exist, and nothing sticks.
 */
export const QEMU_INPUT_QUEUE_MAX = 256;

const BUTTONS: Readonly<Record<MouseButton, string>> = {
  left: 'left',
  right: 'right',
  middle: 'middle',
  up: 'side', // back
  down: 'extra', // forward
};

const OUTPUTS = { absolute: 'usb', relative: 'usb_rel' } as const;
const POINTER_IDS = { usb: 'tablet', usb_rel: 'mouse' } as const;
const POINTER_DRIVERS = { usb: 'usb-tablet', usb_rel: 'usb-mouse' } as const;

/** -32768..32767 onto the tablet's 0..32767. */
export function toTablet(v: number): number {
  const clamped = Math.min(ABS_MAX, Math.max(ABS_MIN, v));
  return Math.round(((clamped - ABS_MIN) * TABLET_MAX) / (ABS_MAX - ABS_MIN));
}

function keyEvent(qcode: string, down: boolean): QmpInputEvent {
  return { type: 'key', data: { down, key: { type: 'qcode', data: qcode } } };
}

interface Queued {
  kind: 'key' | 'button' | 'pointer';
  events: QmpInputEvent[];
  /** Wait this long after sending before the next queued item. */
  gapMs: number;
}

export class QemuHid implements HidDriver {
  readonly name = 'qemu';
  private output: 'usb' | 'usb_rel' = OUTPUTS.absolute;
  private connected = true;
  private queue: Queued[] = [];
  /** Keys and buttons pressed on the USB devices, sent or queued: a release goes only to these. */
  private readonly keysDown = new Set<string>();
  private readonly buttonsDown = new Set<MouseButton>();
  /** Reports dropped because the queue was full (tests and the input bench read it). */
  droppedReports = 0;
  private pumping = false;
  private readonly stateListeners = new Set<(state: HidDriverState) => void>();
  private horizontalWheel = true;
  private leds = { caps: false, num: false, scroll: false };
  private readonly offMachine: Array<() => void> = [];
  /** The USB serial of the keyboard and pointer (usb-identity.ts); '' = QEMU's none. */
  private usbSerial = '';

  constructor(
    private readonly machine: QemuMachine,
    private readonly log?: Logger,
    /** Called after each report the guest took (the video source wakes QEMU's VNC refresh). */
    private readonly onInput?: () => void,
  ) {}

  async init(): Promise<void> {
    const onPower = (): void => this.notify();
    const onReady = (): void => {
      // A fresh QEMU has the tablet again: re-apply the relative mouse or the unplugged state.
      this.clearQueue();
      void this.reapply();
      this.notify();
    };
    this.machine.on('power', onPower);
    this.machine.on('ready', onReady);
    this.offMachine.push(
      () => this.machine.off('power', onPower),
      () => this.machine.off('ready', onReady),
    );
  }

  async dispose(): Promise<void> {
    for (const off of this.offMachine.splice(0)) off();
    this.clearQueue();
  }

  getState(): HidDriverState {
    const online = this.machine.power === 'running' && this.connected;
    return {
      enabled: true,
      online,
      connected: this.connected,
      keyboard: {
        online,
        leds: { ...this.leds },
        outputs: { available: [], active: '' },
      },
      mouse: {
        online,
        absolute: this.output === OUTPUTS.absolute,
        outputs: { available: [OUTPUTS.absolute, OUTPUTS.relative], active: this.output },
      },
    };
  }

  onState(listener: (state: HidDriverState) => void): () => void {
    this.stateListeners.add(listener);
    return () => this.stateListeners.delete(listener);
  }

  /** The guest's LEDs, from the VNC connection of the video driver (QEMU reports them there). */
  setLeds(leds: { caps: boolean; num: boolean; scroll: boolean }): void {
    if (
      leds.caps === this.leds.caps &&
      leds.num === this.leds.num &&
      leds.scroll === this.leds.scroll
    )
      return;
    this.leds = { ...leds };
    this.notify();
  }

  /** Number of reports waiting for QMP. */
  get queued(): number {
    return this.queue.length;
  }

  sendKey(key: string, pressed: boolean): void {
    const info = keyByCode(key);
    if (!info || !this.canSend()) return;
    if (pressed) {
      if (this.keysDown.has(key) || this.full()) return;
      this.keysDown.add(key);
    } else if (!this.keysDown.delete(key)) {
      // Not down on this keyboard: a release would only lengthen the queue.
      return;
    }
    this.enqueue('key', [keyEvent(info.qcode, pressed)], USB_KEY_GAP_MS);
  }

  sendMouseButton(button: MouseButton, pressed: boolean): void {
    if (!this.canSend()) return;
    if (pressed) {
      if (this.buttonsDown.has(button) || this.full()) return;
      this.buttonsDown.add(button);
    } else if (!this.buttonsDown.delete(button)) {
      return;
    }
    this.enqueue('button', [{ type: 'btn', data: { down: pressed, button: BUTTONS[button] } }], 0);
  }

  sendMouseMove(x: number, y: number): void {
    if (this.output !== OUTPUTS.absolute || !this.canSend() || this.full()) return;
    this.enqueue(
      'pointer',
      [
        { type: 'abs', data: { axis: 'x', value: toTablet(x) } },
        { type: 'abs', data: { axis: 'y', value: toTablet(y) } },
      ],
      0,
    );
  }

  sendMouseRelative(dx: number, dy: number): void {
    if (this.output !== OUTPUTS.relative || !this.canSend() || this.full()) return;
    this.enqueue(
      'pointer',
      [
        { type: 'rel', data: { axis: 'x', value: dx } },
        { type: 'rel', data: { axis: 'y', value: dy } },
      ],
      0,
    );
  }

  sendMouseWheel(dx: number, dy: number): void {
    if (!this.canSend() || this.full()) return;
    // QEMU's wheel is buttons, one notch per press (architecture.md).
    const events: QmpInputEvent[] = [];
    const notch = (button: string, n: number): void => {
      for (let i = 0; i < Math.min(Math.abs(n), 127); i++) {
        events.push({ type: 'btn', data: { down: true, button } });
        events.push({ type: 'btn', data: { down: false, button } });
      }
    };
    notch(dy > 0 ? 'wheel-up' : 'wheel-down', dy);
    if (this.horizontalWheel) notch(dx > 0 ? 'wheel-right' : 'wheel-left', dx);
    if (events.length > 0) this.enqueue('pointer', events, 0);
  }

  async typeSequence(
    events: Iterable<KeyEvent>,
    delayMs: number,
    signal: AbortSignal,
  ): Promise<void> {
    // Keys typed just before the paste go first: the two keyboards are separate queues.
    await this.drained();
    // No device: the PS/2 keyboard of the pc machine takes it, releases included (a release
    // sent to usb-kbd would not lift a key held on the PS/2 keyboard).
    await paceKeyEvents(
      (function* () {
        for (const e of events) if (keyByCode(e.key)) yield e;
      })(),
      Math.max(delayMs, PS2_KEY_GAP_MS),
      signal,
      async (key, pressed) => {
        const qcode = keyByCode(key)!.qcode;
        await this.machine.command('input-send-event', { events: [keyEvent(qcode, pressed)] });
        this.onInput?.();
      },
    );
  }

  async setMouseOutput(output: string): Promise<void> {
    if (output !== OUTPUTS.absolute && output !== OUTPUTS.relative) {
      throw new Error(`unknown mouse output ${output}`);
    }
    if (output === this.output) return;
    const previous = this.output;
    this.output = output;
    // Pointer reports and buttons belong to the device being removed; queued key transitions
    // still go out (a dropped release would leave the key down).
    this.queue = this.queue.filter((item) => item.kind === 'key');
    this.buttonsDown.clear();
    try {
      if (this.connected) {
        await this.unplug(POINTER_IDS[previous]);
        await this.plug(output);
      }
    } catch (err) {
      this.output = previous;
      throw err;
    } finally {
      this.notify();
    }
  }

  async setConnected(connected: boolean): Promise<void> {
    if (connected === this.connected) return;
    this.connected = connected;
    // Unplugged or freshly plugged devices hold nothing.
    this.clearQueue();
    try {
      if (connected) {
        await this.plugKeyboard();
        await this.plug(this.output);
      } else {
        await this.unplug('kbd');
        await this.unplug(POINTER_IDS[this.output]);
      }
    } finally {
      this.notify();
    }
  }

  /**
   * USB identity (usb-identity.ts): QEMU's devices take only a serial, and only when added, so
   * the keyboard and pointer are re-plugged with it, like a gadget that re-enumerates. With
   * `replug: false` only later plugs carry it (the command line's devices already match).
   */
  async setUsbSerial(serial: string, replug = true): Promise<void> {
    this.usbSerial = serial;
    if (!replug || !this.connected) return;
    this.clearQueue();
    try {
      await this.unplug('kbd');
      await this.unplug(POINTER_IDS[this.output]);
      await this.plugKeyboard();
      await this.plug(this.output);
    } finally {
      this.notify();
    }
  }

  // ---- internals ----

  private serialProp(): { serial?: string } {
    return this.usbSerial ? { serial: this.usbSerial } : {};
  }

  private async plugKeyboard(): Promise<void> {
    await this.machine.command('device_add', {
      driver: 'usb-kbd',
      id: 'kbd',
      bus: USB_BUS,
      display: DISPLAY,
      ...this.serialProp(),
    });
  }

  private async plug(output: 'usb' | 'usb_rel'): Promise<void> {
    // usb-mouse has no `display` property: unbound, it takes the display's relative events
    // once the tablet (the bound absolute handler) is gone.
    await this.machine.command('device_add', {
      driver: POINTER_DRIVERS[output],
      id: POINTER_IDS[output],
      bus: USB_BUS,
      ...(output === OUTPUTS.absolute ? { display: DISPLAY } : {}),
      ...this.serialProp(),
    });
  }

  /** device_del, then wait for DEVICE_DELETED: the id stays taken until the guest lets go. */
  private async unplug(id: string): Promise<void> {
    const gone = new Promise<void>((resolve) => {
      const timer = setTimeout(done, 5000);
      const onEvent = (event: { event: string; data?: unknown }): void => {
        if (event.event === 'DEVICE_DELETED' && (event.data as { device?: string })?.device === id)
          done();
      };
      function done(): void {
        clearTimeout(timer);
        machineOff();
        resolve();
      }
      const machineOff = (): void => {
        this.machine.off('qmpEvent', onEvent);
      };
      this.machine.on('qmpEvent', onEvent);
    });
    try {
      await this.machine.command('device_del', { id });
    } catch (err) {
      if ((err as { qmpClass?: string }).qmpClass === 'DeviceNotFound') return;
      throw err;
    }
    await gone;
  }

  /** After a QEMU restart: the command line has the keyboard and the tablet, without a serial. */
  private async reapply(): Promise<void> {
    try {
      if (!this.connected) {
        await this.unplug('kbd');
        await this.unplug('tablet');
      } else if (this.usbSerial) {
        await this.unplug('kbd');
        await this.unplug('tablet');
        await this.plugKeyboard();
        await this.plug(this.output);
      } else if (this.output === OUTPUTS.relative) {
        await this.unplug('tablet');
        await this.plug(OUTPUTS.relative);
      }
    } catch (err) {
      this.log?.warn({ err: (err as Error).message }, 'qemu hid: could not restore the devices');
    }
  }

  /** Resolves when the interactive queue is empty and its last gap has passed. */
  private async drained(): Promise<void> {
    while (this.pumping || this.queue.length > 0) await sleep(USB_KEY_GAP_MS);
  }

  private canSend(): boolean {
    return this.connected && this.machine.qmp !== null;
  }

  /** True (and counted) when a new press or pointer report must be dropped. */
  private full(): boolean {
    if (this.queue.length < QEMU_INPUT_QUEUE_MAX) return false;
    if (this.droppedReports++ % 1000 === 0) {
      this.log?.debug({ dropped: this.droppedReports }, 'qemu hid: input queue full, dropping');
    }
    return true;
  }

  private clearQueue(): void {
    this.queue = [];
    this.keysDown.clear();
    this.buttonsDown.clear();
  }

  private enqueue(kind: Queued['kind'], events: QmpInputEvent[], gapMs: number): void {
    this.queue.push({ kind, events, gapMs });
    if (!this.pumping) void this.pump();
  }

  /**
   * Sends queued reports in order. Key transitions keep USB_KEY_GAP_MS apart; pointer reports
   * go as soon as the one before them was accepted.
   */
  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      while (this.queue.length > 0) {
        const item = this.queue.shift()!;
        const qmp = this.machine.qmp;
        if (!qmp) {
          this.clearQueue();
          break;
        }
        try {
          await qmp.execute('input-send-event', { device: DISPLAY, events: item.events });
          this.onInput?.();
        } catch (err) {
          this.onSendError(err, item);
        }
        if (item.gapMs > 0) await sleep(item.gapMs);
      }
    } finally {
      this.pumping = false;
    }
  }

  private onSendError(err: unknown, item: Queued): void {
    if (err instanceof QmpClosedError) return;
    const text = (err as Error).message;
    // QEMU before 8.1 has no horizontal wheel buttons: stop sending them.
    if (/wheel-(left|right)/.test(text) || item.events.some((e) => isHorizontalWheel(e))) {
      if (this.horizontalWheel && /wheel/.test(text)) {
        this.horizontalWheel = false;
        this.log?.debug({}, 'qemu hid: no horizontal wheel on this QEMU');
        return;
      }
    }
    this.log?.warn({ err: text }, 'qemu hid: input-send-event failed');
  }

  private notify(): void {
    const state = this.getState();
    for (const l of this.stateListeners) l(state);
  }
}

function isHorizontalWheel(e: QmpInputEvent): boolean {
  return e.type === 'btn' && (e.data.button === 'wheel-left' || e.data.button === 'wheel-right');
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

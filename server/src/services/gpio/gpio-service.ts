/**
 * kvmd's user GPIO as a facade (wire-protocol.md 1.8): the device has no free GPIO pins of its
 * own, so the ATX LEDs and buttons, each Wake-on-LAN device and the fingerbot are offered as
 * channels with kvmd's `scheme`, `view` and state. PiKVM's GPIO menu, its System > Wake-on-LAN
 * item (the `__wol__` channel) and kvmd's Prometheus names then work unchanged.
 *
 * Every channel is a pulse output or an input; none can be switched (a switch would have to
 * hold a button down). A pulse's length is the button's own hold time, so `delay` is accepted
 * and clamped to [min_delay, max_delay] as kvmd does.
 */
import type {
  GpioIoState,
  GpioOutputScheme,
  GpioScheme,
  GpioState,
  GpioStateDiff,
  GpioView,
  GpioViewItem,
  WolDevice,
} from '@kvm/protocol';
import { ATX_HOLD_MS, FINGERBOT_PRESS_MS } from '@kvm/protocol';
import { BadRequestError, IsBusyError } from '../../errors';
import type { Logger } from '../../log';
import type { StateEvent, StateProvider } from '../../ws/state-registry';
import type { AtxService } from '../atx/atx-service';
import type { FingerbotService } from '../fingerbot/fingerbot-service';
import type { WolService } from '../wol/wol-service';

export class GpioChannelNotFoundError extends BadRequestError {
  static override readonly defaultMessage = 'GPIO channel is not found';
}

export class GpioSwitchNotSupported extends BadRequestError {
  static override readonly defaultMessage = 'This GPIO channel does not support switching';
}

export class GpioPulseNotSupported extends BadRequestError {
  static override readonly defaultMessage = 'This GPIO channel does not support pulsing';
}

export class GpioChannelIsBusyError extends IsBusyError {
  static override readonly defaultMessage =
    'Performing another GPIO operation on this channel, please try again later';
}

/** How often the Wake-on-LAN list is compared for a new model (the list has no events). */
const MODEL_CHECK_MS = 2000;
/** The fingerbot's default press when a client sends no delay, seconds. */
const FINGERBOT_PULSE_S = 1;
/** A magic packet is one datagram: the channel's nominal pulse, seconds. */
const WOL_PULSE_S = 0.1;

interface OutputChannel {
  scheme: GpioOutputScheme;
  online(): boolean;
  busy(): boolean;
  /** Runs the press; `delayS` is already clamped. */
  pulse(delayS: number): Promise<void>;
}

interface InputChannel {
  hw: { driver: string; pin: string };
  online(): boolean;
  state(): boolean;
}

interface Model {
  inputs: Map<string, InputChannel>;
  outputs: Map<string, OutputChannel>;
  view: GpioView;
  /** Compared to notice a changed Wake-on-LAN list. */
  key: string;
}

function pulseScheme(driver: string, pin: string, delay: number, min = delay, max = delay) {
  return { switch: false, pulse: { delay, min_delay: min, max_delay: max }, hw: { driver, pin } };
}

/** PiKVM's UI renders label text as HTML: our labels hold device names, so they are escaped. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const label = (text: string): GpioViewItem => ({ type: 'label', text: escapeHtml(text) });

/** The channel name of a Wake-on-LAN device: `wol_` and its MAC's twelve hex digits. */
export function wolChannel(mac: string): string {
  return `wol_${mac.replace(/:/g, '').toLowerCase()}`;
}

export class GpioService {
  private model: Model;
  private prev: GpioIoState;
  private readonly listeners = new Set<(event: StateEvent) => void>();
  /** Channels of our own with a press running (the ATX ones use the ATX region). */
  private readonly running = new Set<string>();
  private readonly offAtx: () => void;
  private readonly offFingerbot: () => void;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly deps: {
      atx: AtxService;
      wol: WolService;
      fingerbot: FingerbotService;
      log?: Logger;
    },
  ) {
    this.model = this.buildModel();
    this.prev = this.ioState();
    const changed = (): void => this.changed();
    deps.atx.on('state', changed);
    deps.fingerbot.on('state', changed);
    this.offAtx = () => deps.atx.off('state', changed);
    this.offFingerbot = () => deps.fingerbot.off('state', changed);
    this.timer = setInterval(changed, MODEL_CHECK_MS);
    this.timer.unref();
  }

  getState(): GpioState {
    this.ensureModel();
    return this.fullState();
  }

  private fullState(): GpioState {
    return {
      model: { scheme: this.scheme(), view: structuredClone(this.model.view) },
      state: this.ioState(),
    };
  }

  /** kvmd's `/gpio/switch`: no channel of ours holds a level. */
  switch(channel: string, _state: boolean, _wait: boolean): Promise<void> {
    this.ensureModel();
    if (!this.model.outputs.has(channel)) return Promise.reject(new GpioChannelNotFoundError());
    return Promise.reject(new GpioSwitchNotSupported());
  }

  /**
   * kvmd's `/gpio/pulse`. Without `wait` it answers once the press has started and a failure
   * is only logged; a busy channel is refused at once (409) either way.
   */
  async pulse(channel: string, delayS: number, wait: boolean): Promise<void> {
    this.ensureModel();
    const out = this.model.outputs.get(channel);
    if (!out) throw new GpioChannelNotFoundError();
    const { delay, min_delay: min, max_delay: max } = out.scheme.pulse;
    if (!delay) throw new GpioPulseNotSupported();
    if (out.busy()) throw new GpioChannelIsBusyError();
    const clamped = Math.min(Math.max(delayS || delay, min), max);
    const done = out.pulse(clamped);
    if (wait) return done;
    done.catch((err: unknown) => this.deps.log?.warn({ err, channel }, 'gpio: pulse failed'));
  }

  /** The `gpio` event: the full state first, then `{state: {inputs?, outputs?}}` diffs. */
  provider(): StateProvider {
    return {
      name: 'gpio',
      snapshot: () => [{ event_type: 'gpio', event: this.getState() }],
      subscribe: (emit) => {
        this.listeners.add(emit);
        return () => this.listeners.delete(emit);
      },
    };
  }

  dispose(): void {
    clearInterval(this.timer);
    this.offAtx();
    this.offFingerbot();
    this.listeners.clear();
  }

  /** Re-reads the channels; sends the whole state when the model changed, else a diff. */
  private changed(): void {
    if (this.refreshModel()) {
      this.emit(this.fullState());
      return;
    }
    const next = this.ioState();
    const diff: Partial<GpioIoState> = {};
    for (const sub of ['inputs', 'outputs'] as const) {
      for (const [ch, st] of Object.entries(next[sub])) {
        if (JSON.stringify(st) !== JSON.stringify(this.prev[sub][ch])) {
          ((diff[sub] ??= {}) as Record<string, unknown>)[ch] = st;
        }
      }
    }
    this.prev = next;
    if (Object.keys(diff).length > 0) this.emit({ state: diff } satisfies GpioStateDiff);
  }

  private emit(event: GpioState | GpioStateDiff): void {
    if ('model' in event) this.prev = structuredClone(event.state);
    for (const l of this.listeners) l({ event_type: 'gpio', event });
  }

  /** A model that changed since the last event reaches the sockets before anything else. */
  private ensureModel(): void {
    if (this.refreshModel()) this.emit(this.fullState());
  }

  /** Rebuilds the model when the Wake-on-LAN list changed; true if it did. */
  private refreshModel(): boolean {
    const next = this.buildModel();
    if (next.key === this.model.key) return false;
    this.model = next;
    return true;
  }

  private scheme(): GpioScheme {
    const scheme: GpioScheme = { inputs: {}, outputs: {} };
    for (const [ch, i] of this.model.inputs) scheme.inputs[ch] = { hw: { ...i.hw } };
    for (const [ch, o] of this.model.outputs) scheme.outputs[ch] = structuredClone(o.scheme);
    return scheme;
  }

  private ioState(): GpioIoState {
    const state: GpioIoState = { inputs: {}, outputs: {} };
    for (const [ch, i] of this.model.inputs) {
      const online = i.online();
      state.inputs[ch] = { online, state: online && i.state() };
    }
    for (const [ch, o] of this.model.outputs) {
      // A pulse output reads low outside a press; during one it is busy (kvmd reads nothing).
      state.outputs[ch] = { online: o.online(), state: false, busy: o.busy() };
    }
    return state;
  }

  private buildModel(): Model {
    const { atx, wol, fingerbot } = this.deps;
    const inputs = new Map<string, InputChannel>();
    const outputs = new Map<string, OutputChannel>();
    const title: GpioViewItem[] = [label('GPIO')];
    const table: Array<GpioViewItem[] | null> = [];
    const section = (rows: GpioViewItem[][]): void => {
      if (table.length > 0) table.push(null);
      table.push(...rows);
    };

    if (atx.driver.getState().enabled) {
      const atxOnline = (): boolean => atx.getState().enabled;
      inputs.set('atx_power_led', {
        hw: { driver: 'atx', pin: 'power_led' },
        online: atxOnline,
        state: () => atx.getState().leds.power,
      });
      inputs.set('atx_hdd_led', {
        hw: { driver: 'atx', pin: 'hdd_led' },
        online: atxOnline,
        state: () => atx.getState().leds.hdd,
      });
      for (const button of ['power', 'power_long', 'reset'] as const) {
        outputs.set(`atx_${button}`, {
          scheme: pulseScheme('atx', button, ATX_HOLD_MS[button] / 1000),
          online: atxOnline,
          busy: () => atx.getState().busy,
          pulse: () => atx.click(button, true),
        });
      }
      title.push({ type: 'input', channel: 'atx_power_led', color: 'green' });
      section([
        [label('Power LED'), { type: 'input', channel: 'atx_power_led', color: 'green' }],
        [label('HDD LED'), { type: 'input', channel: 'atx_hdd_led', color: 'red' }],
        [label('Power'), this.button('atx_power', 'Press', true)],
        [label('Power (long)'), this.button('atx_power_long', 'Hold', true)],
        [label('Reset'), this.button('atx_reset', 'Reset', true)],
      ]);
    }

    if (fingerbot.driver.name !== 'disabled') {
      outputs.set('fingerbot', {
        scheme: pulseScheme(
          'fingerbot',
          'press',
          FINGERBOT_PULSE_S,
          FINGERBOT_PRESS_MS.min / 1000,
          FINGERBOT_PRESS_MS.max / 1000,
        ),
        online: () => fingerbot.getState().exist,
        busy: () => this.running.has('fingerbot'),
        pulse: (s) => this.own('fingerbot', () => fingerbot.click(Math.round(s * 1000), 1)),
      });
      section([[label('Fingerbot'), this.button('fingerbot', 'Press', true)]]);
    }

    const devices = wol.list();
    const wolRows: GpioViewItem[][] = [];
    const addWol = (ch: string, d: WolDevice): void => {
      outputs.set(ch, {
        scheme: pulseScheme('wol', d.mac, WOL_PULSE_S),
        online: () => true,
        busy: () => this.running.has(ch),
        pulse: () => this.own(ch, () => wol.wake(d.mac).then(() => undefined)),
      });
    };
    for (const d of devices) {
      const ch = wolChannel(d.mac);
      addWol(ch, d);
      wolRows.push([label(`Wake-on-LAN: ${d.name}`), this.button(ch, 'Wake', false)]);
    }
    // kvmd's one configured Wake-on-LAN target; PiKVM's System menu shows "Wake-on-LAN" for it.
    if (devices[0]) addWol('__wol__', devices[0]);
    if (wolRows.length > 0) section(wolRows);

    return {
      inputs,
      outputs,
      view: { header: { title }, table },
      key: JSON.stringify([[...inputs.keys()], [...outputs.keys()], devices]),
    };
  }

  private button(channel: string, text: string, confirm: boolean): GpioViewItem {
    return { type: 'output', channel, confirm, hide: false, text };
  }

  /** A press of a channel of our own: one at a time per channel, busy meanwhile. */
  private async own(ch: string, fn: () => Promise<void>): Promise<void> {
    if (this.running.has(ch)) throw new GpioChannelIsBusyError();
    this.running.add(ch);
    this.changed();
    try {
      await fn();
    } finally {
      this.running.delete(ch);
      this.changed();
    }
  }
}

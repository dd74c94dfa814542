/**
 * kvmd's user GPIO (`GET /api/gpio`, the `gpio` event; wire-protocol.md 1.8, 2.3). Our ATX,
 * Wake-on-LAN and fingerbot are offered as GPIO channels so PiKVM's GPIO menu drives them.
 */

/** kvmd's channel name rule (validators/ugpio.py), at most 255 characters. */
export const GPIO_CHANNEL_RE = /^[a-zA-Z_][a-zA-Z0-9_.-]*$/;
export const GPIO_CHANNEL_MAX = 255;

export interface GpioInputScheme {
  hw: { driver: string; pin: string };
}

export interface GpioOutputScheme {
  switch: boolean;
  /** Seconds; `delay` 0 means the channel cannot pulse. */
  pulse: { delay: number; min_delay: number; max_delay: number };
  hw: { driver: string; pin: string };
}

export interface GpioScheme {
  inputs: Record<string, GpioInputScheme>;
  outputs: Record<string, GpioOutputScheme>;
}

export type GpioViewItem =
  /** `text` is HTML in PiKVM's UI (it does not escape labels): always escaped here. */
  | { type: 'label'; text: string }
  | { type: 'input'; channel: string; color: string }
  | { type: 'output'; channel: string; confirm: boolean; hide: boolean; text: string };

export interface GpioView {
  header: { title: GpioViewItem[] };
  /** Rows of items; null is a separator line. */
  table: Array<GpioViewItem[] | null>;
}

export interface GpioInputState {
  online: boolean;
  state: boolean;
}

export interface GpioOutputState {
  online: boolean;
  state: boolean;
  busy: boolean;
}

export interface GpioIoState {
  inputs: Record<string, GpioInputState>;
  outputs: Record<string, GpioOutputState>;
}

/** `GET /api/gpio` and the first `gpio` event. */
export interface GpioState {
  model: { scheme: GpioScheme; view: GpioView };
  state: GpioIoState;
}

/** A later `gpio` event: only the channels that changed. */
export interface GpioStateDiff {
  state: Partial<GpioIoState>;
}

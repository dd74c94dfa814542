/** ATX power control (wire-protocol.md 1.5; SPEC 3 "ATX buttons", SPEC 9 "ATX power hold"). */

export const ATX_BUTTONS = ['power', 'power_long', 'reset'] as const;
export type AtxButtonName = (typeof ATX_BUTTONS)[number];

/** How long each button is held: 0.5 s short, 6.5 s long; reset is a short press too. */
export const ATX_HOLD_MS: Readonly<Record<AtxButtonName, number>> = {
  power: 500,
  power_long: 6500,
  reset: 500,
};

/** kvmd's `/atx/power` actions. */
export const ATX_POWER_ACTIONS = ['on', 'off', 'off_hard', 'reset_hard'] as const;
export type AtxPowerAction = (typeof ATX_POWER_ACTIONS)[number];

/** The `atx` event and `GET /api/atx` (PiKVM shape plus GL's `power`). */
export interface AtxState {
  enabled: boolean;
  busy: boolean;
  /** kvmd 4.197+: which button is being pressed now (power covers the long press too). */
  acts: { power: boolean; reset: boolean };
  leds: { power: boolean; hdd: boolean };
  /** GL: the power state in words. */
  power: 'on' | 'off';
  /**
   * Ours (`atx.type: gpio`): why the buttons cannot act now (a GPIO line another process holds,
   * the chip missing), null when they can; absent on drivers that cannot fail that way.
   */
  problem?: string | null;
}

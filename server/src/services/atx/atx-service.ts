/**
 * ATX: one physical press at a time (kvmd's region: a second one is AtxIsBusyError 409 and the
 * state shows `busy`), the `atx` state and event.
 */
import { EventEmitter } from 'node:events';
import type { AtxButtonName, AtxPowerAction, AtxState } from '@kvm/protocol';
import { AtxDisabledError } from '../../drivers/atx/types';
import { IsBusyError } from '../../errors';
import type { AtxDriver } from '../../drivers/atx/types';
import { ExclusiveRegion } from '../../sync/exclusive-region';
import { watchedStateProvider, type StateProvider } from '../../ws/state-registry';
import type { Logger } from '../../log';

export class AtxIsBusyError extends IsBusyError {
  static override readonly defaultMessage =
    'Performing another ATX operation, please try again later';
}

export class AtxService extends EventEmitter<{ state: [AtxState] }> {
  /** One press at a time: a second one is refused at once, never queued behind the first. */
  private readonly region = new ExclusiveRegion(() => new AtxIsBusyError());
  private readonly offDriver: () => void;
  private readonly offRegion: () => void;
  /** The button being pressed now: kvmd 4.197's `acts` (power covers the long press). */
  private pressing: AtxButtonName | null = null;

  constructor(
    readonly driver: AtxDriver,
    private readonly log?: Logger,
  ) {
    super();
    this.offDriver = driver.onState(() => this.publish());
    this.offRegion = this.region.onChange(() => this.publish());
  }

  getState(): AtxState {
    const d = this.driver.getState();
    return {
      enabled: d.enabled,
      busy: this.region.busy,
      acts: {
        power: this.pressing === 'power' || this.pressing === 'power_long',
        reset: this.pressing === 'reset',
      },
      leds: { ...d.leds },
      power: d.leds.power ? 'on' : 'off',
      ...(d.problem !== undefined ? { problem: d.problem } : {}),
    };
  }

  /**
   * Presses a button for its hold time. With `wait` the promise settles when the button is
   * released; without, it settles as soon as the press has started (kvmd's default) and a
   * failure is only logged.
   */
  async click(button: AtxButtonName, wait: boolean): Promise<void> {
    if (!this.driver.getState().enabled) {
      throw new AtxDisabledError();
    }
    // A press refused as busy rejects at once: the caller hears about it even without `wait`.
    const refused = this.region.busy;
    // Set before enter(): the region's busy flip publishes the state, which then shows the act.
    if (!refused) this.pressing = button;
    const done = this.region.enter(async () => {
      try {
        await this.driver.click(button);
      } finally {
        // Cleared before the region's release publishes `busy:false`.
        this.pressing = null;
      }
    });
    if (wait || refused) return done;
    done.catch((err: unknown) => this.log?.warn({ err, button }, 'atx: press failed'));
  }

  /** kvmd's `/atx/power`: acts only when the power LED says it is needed. */
  async power(action: AtxPowerAction, wait: boolean): Promise<void> {
    const on = this.driver.getState().leds.power;
    if (action === 'on' && !on) return this.click('power', wait);
    if (action === 'off' && on) return this.click('power', wait);
    if (action === 'off_hard' && on) return this.click('power_long', wait);
    if (action === 'reset_hard') return this.click('reset', wait);
    if (!this.driver.getState().enabled) {
      throw new AtxDisabledError();
    }
  }

  /** The `atx` event of `/api/ws`. */
  provider(): StateProvider {
    return watchedStateProvider('atx', this);
  }

  dispose(): void {
    this.offDriver();
    this.offRegion();
  }

  private publish(): void {
    this.emit('state', this.getState());
  }
}

/**
 * QEMU ATX: the power and reset buttons of the VM, with the power LED following QEMU's run
 * state (kept current from QMP events by QemuMachine).
 */
import { ATX_HOLD_MS } from '@kvm/protocol';
import type { AtxButton, AtxDriver, AtxDriverState } from './types';
import type { QemuMachine } from '../../platform/qemu/machine';
import { QemuPowerButton } from '../../platform/qemu/power';

export class QemuAtx implements AtxDriver {
  readonly name = 'qemu';
  private readonly button: QemuPowerButton;
  private readonly listeners = new Set<(state: AtxDriverState) => void>();
  private readonly onPower = (): void => {
    const state = this.getState();
    for (const l of this.listeners) l(state);
  };

  constructor(private readonly machine: QemuMachine) {
    this.button = new QemuPowerButton(machine);
  }

  getState(): AtxDriverState {
    return {
      enabled: true,
      leds: { power: this.machine.power === 'running', hdd: false },
    };
  }

  onState(listener: (state: AtxDriverState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async click(button: AtxButton): Promise<void> {
    if (button === 'reset') await this.button.reset(ATX_HOLD_MS.reset);
    else await this.button.press(ATX_HOLD_MS[button]);
  }

  async init(): Promise<void> {
    this.machine.on('power', this.onPower);
  }

  async dispose(): Promise<void> {
    this.machine.off('power', this.onPower);
  }
}

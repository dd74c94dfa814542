/**
 * The VM's power and reset buttons, shared by the QEMU ATX driver and the QEMU fingerbot (which
 * presses the same power button). With `-no-shutdown` a powered-off guest leaves QEMU in the
 * `shutdown` run state, so "off" is any state but running (architecture.md, QEMU power):
 *   power on        system_reset + cont
 *   ACPI button     system_powerdown (the guest decides; ours powers off at once)
 *   hard off        stop + system_reset (the CPU halts where it is, like pulling the plug)
 *   reset           system_reset
 * With a new monitor mode waiting (EDID, drivers/qemu/display.ts) power on and reset restart
 * QEMU itself instead: the guest then boots with the new monitor, as a PC reads EDID at boot.
 */
import type { QemuMachine } from './machine';

/** A PC cuts the power when the button is held this long (ATX convention). */
export const HARD_OFF_HOLD_MS = 4000;

export class QemuPowerButton {
  constructor(private readonly machine: QemuMachine) {}

  get isOn(): boolean {
    return this.machine.power === 'running';
  }

  /**
   * The power button held for `holdMs`: starts an off machine; on a running one it is the ACPI
   * press, and held for HARD_OFF_HOLD_MS or more it also cuts the power. Resolves on release.
   */
  async press(holdMs: number): Promise<void> {
    const started = performance.now();
    if (!this.isOn) {
      await this.powerOn();
    } else if (holdMs >= HARD_OFF_HOLD_MS) {
      await this.machine.command('system_powerdown');
      await sleepUntil(started + HARD_OFF_HOLD_MS);
      if (this.isOn) await this.hardOff();
    } else {
      await this.machine.command('system_powerdown');
    }
    await sleepUntil(started + holdMs);
  }

  /**
   * The reset button: restarts a running machine; on an off machine it does nothing. With a new
   * monitor (EDID) waiting, QEMU itself restarts: its VGA's EDID is fixed while it runs.
   */
  async reset(holdMs: number): Promise<void> {
    const started = performance.now();
    if (this.isOn) {
      if (this.machine.displayPending) await this.machine.powerCycle();
      else await this.machine.command('system_reset');
    }
    await sleepUntil(started + holdMs);
  }

  async powerOn(): Promise<void> {
    if (this.machine.displayPending) {
      // a fresh QEMU runs at once (no -S): the guest boots with the new monitor
      await this.machine.powerCycle();
    } else {
      await this.machine.command('system_reset');
      await this.machine.command('cont');
    }
    await this.machine.refreshPower();
  }

  async hardOff(): Promise<void> {
    await this.machine.command('stop');
    await this.machine.command('system_reset');
    await this.machine.refreshPower();
  }
}

function sleepUntil(at: number): Promise<void> {
  const ms = at - performance.now();
  return ms > 0 ? new Promise((r) => setTimeout(r, ms)) : Promise.resolve();
}

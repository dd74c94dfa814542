/**
 * The QEMU target's fingerbot: a robot finger on the VM's power button. A press is the power
 * button held for the press time (so 4 s or more cuts the power, as on a PC). It has no battery
 * to run down; its firmware version is whatever was last flashed, kept in the data folder.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { atomicWriteFile } from '../../storage/atomic';
import type { FingerbotDriver, FingerbotDriverState } from './types';
import type { QemuMachine } from '../../platform/qemu/machine';
import { QemuPowerButton } from '../../platform/qemu/power';

const FACTORY_VERSION = '1.0.0';
/** How long flashing takes: long enough for the console to show its progress. */
const FLASH_MS = 2000;

export class QemuFingerbot implements FingerbotDriver {
  readonly name = 'qemu';
  private readonly button: QemuPowerButton;
  private readonly versionFile: string;

  constructor(machine: QemuMachine, dataDir: string) {
    this.button = new QemuPowerButton(machine);
    this.versionFile = join(dataDir, 'fingerbot-version');
  }

  getState(): FingerbotDriverState {
    return { exist: true };
  }

  onState(): () => void {
    return () => undefined;
  }

  async press(pressMs: number): Promise<void> {
    await this.button.press(pressMs);
  }

  async battery(): Promise<number> {
    return 100;
  }

  async version(): Promise<string> {
    try {
      return (await readFile(this.versionFile, 'utf8')).trim() || FACTORY_VERSION;
    } catch {
      return FACTORY_VERSION;
    }
  }

  async upgrade(firmware: { image: Buffer; version: string }): Promise<string> {
    await new Promise((r) => setTimeout(r, FLASH_MS));
    await atomicWriteFile(this.versionFile, `${firmware.version}\n`);
    return firmware.version;
  }

  async init(): Promise<void> {}
  async dispose(): Promise<void> {}
}

/**
 * What the QEMU drivers share: one VM owned by the server (QemuMachine), its sound server
 * (QemuPulse) and the two links between drivers that the VM implies. Made once, by the first
 * driver that needs it (drivers/factory.ts); the drivers import this, never the other way.
 *
 * - A key or a click usually changes the screen: the HID driver calls `wakeVideo()`, and the
 *   video driver (if it is QEMU's) asks QEMU's VNC server to look at once instead of after its
 *   idle back-off (up to 3 s).
 * - The keyboard LEDs arrive on the VNC connection: the video driver calls `leds()`, and the
 *   HID driver (if it is QEMU's) shows them.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../log';
import { guestImagePaths } from './guest';
import { QemuMachine } from './machine';
import { QemuPulse } from './pulse';

export interface QemuPlatformOptions {
  dataDir: string;
  log: Logger;
  /** Whether the VM gets a sound card (and its PulseAudio): `audio.type: qemu`. */
  sound: boolean;
}

export class QemuPlatform {
  readonly machine: QemuMachine;
  readonly pulse: QemuPulse | null;
  readonly runDir: string;
  private wake: () => void = () => undefined;
  private ledListener: (leds: { caps: boolean; num: boolean; scroll: boolean }) => void = () =>
    undefined;

  constructor(opts: QemuPlatformOptions) {
    // The guest boots from its own disk through the BIOS, like a PC: a CD-ROM mounted by virtual
    // media (boot priority 1) then boots instead after a reset. A direct kernel boot would be 3 s
    // faster but QEMU's kernel loader always wins over every boot device.
    this.runDir = join(opts.dataDir, 'run');
    const pulse = opts.sound ? new QemuPulse({ runDir: this.runDir, log: opts.log }) : null;
    this.pulse = pulse;
    this.machine = new QemuMachine({
      runDir: this.runDir,
      log: opts.log,
      boot: 'iso',
      audio: () => pulse?.backend() ?? null,
    });
  }

  /** The video driver's way to look at the screen at once. */
  onWake(fn: () => void): void {
    this.wake = fn;
  }

  wakeVideo(): void {
    this.wake();
  }

  /** The HID driver's way to hear the keyboard LEDs. */
  onLeds(fn: (leds: { caps: boolean; num: boolean; scroll: boolean }) => void): void {
    this.ledListener = fn;
  }

  leds(leds: { caps: boolean; num: boolean; scroll: boolean }): void {
    this.ledListener(leds);
  }

  /** The guest image's manifest (what it was built from), or null when it cannot be read. */
  async guestManifest(): Promise<unknown> {
    return readFile(guestImagePaths().manifest, 'utf8')
      .then((t) => JSON.parse(t) as unknown)
      .catch(() => null);
  }

  /** After the drivers' init (they subscribe to the machine): the sound server, then the VM. */
  async init(): Promise<void> {
    await this.pulse?.start();
    try {
      // The video source connects when the VNC socket appears; init resolves once QMP answers.
      await this.machine.init();
    } catch (err) {
      await this.pulse?.stop();
      throw err;
    }
  }

  /** After the drivers' dispose: the VM, then its sound server. */
  async dispose(): Promise<void> {
    await this.machine.dispose();
    await this.pulse?.stop();
  }
}

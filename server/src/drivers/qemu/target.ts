/**
 * The QEMU target's drivers: one VM owned by the server (QemuMachine) and its screen over VNC
 * (QemuVideo), its keyboard and mouse over QMP (QemuHid). ATX and virtual media on QEMU arrive
 * with issue 5 through the same machine's QMP; its sound card plays into a PulseAudio of our
 * own (QemuAudio, issue 14).
 */
import { join } from 'node:path';
import type { AppConfig } from '../../config';
import type { VideoSource } from '../video/types';
import { QemuMachine } from './machine';
import type { AtxDriver } from '../atx/types';
import type { FingerbotDriver } from '../fingerbot/types';
import type { HidDriver } from '../hid/types';
import type { MsdDriver } from '../msd/types';
import { QemuAtx } from './atx';
import { QemuAudio } from './audio';
import { QemuFingerbot } from './fingerbot';
import { QemuMsd } from './msd';
import { QemuHid } from './hid';
import { QemuVideo } from './video';
import type { Logger } from '../../log';

export interface QemuDrivers {
  machine: QemuMachine;
  video: VideoSource;
  hid: HidDriver;
  atx: AtxDriver;
  fingerbot: FingerbotDriver;
  msd: MsdDriver;
  /** The VM's sound: its PulseAudio starts before the VM and stops after it. */
  audio: QemuAudio;
  init: () => Promise<void>;
  dispose: () => Promise<void>;
}

export async function createQemuDrivers(config: AppConfig, log: Logger): Promise<QemuDrivers> {
  // The guest boots from its own disk through the BIOS, like a PC: a CD-ROM mounted by virtual
  // media (boot priority 1) then boots instead after a reset. A direct kernel boot would be 3 s
  // faster but QEMU's kernel loader always wins over every boot device.
  const runDir = join(config.data_dir, 'run');
  const audio = new QemuAudio({ runDir, log });
  const machine = new QemuMachine({ runDir, log, boot: 'iso', audio: () => audio.backend() });
  // A key or a click usually changes the screen: the video source then asks QEMU's VNC server
  // to look at once instead of after its idle back-off (up to 3 s).
  const hid = new QemuHid(machine, log, () => video.wakeRefresh());
  const video = new QemuVideo(machine, { log, onLeds: (leds) => hid.setLeds(leds) });
  return {
    machine,
    video,
    hid,
    atx: new QemuAtx(machine),
    fingerbot: new QemuFingerbot(machine, config.data_dir),
    msd: new QemuMsd(machine, log, { usbBus: 'xhci.0' }),
    audio,
    // The video source connects when the VM's VNC socket appears; init resolves once QMP answers.
    init: async () => {
      await audio.start();
      try {
        await machine.init();
      } catch (err) {
        await audio.stop();
        throw err;
      }
    },
    // the video driver itself is disposed with the other drivers, before this
    dispose: async () => {
      await machine.dispose();
      await audio.stop();
    },
  };
}

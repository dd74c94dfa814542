/**
 * Target profiles: which driver runs each subsystem (architecture.md, Targets). Routes never
 * ask which target runs; they talk to these interfaces.
 */
import type { AppConfig } from './config';
import { DisabledAtx } from './drivers/atx/disabled';
import type { AtxDriver } from './drivers/atx/types';
import type { AudioDriver } from './drivers/audio/types';
import { DisabledFingerbot } from './drivers/fingerbot/disabled';
import type { FingerbotDriver } from './drivers/fingerbot/types';
import { DisabledHid } from './drivers/hid/disabled';
import type { HidDriver } from './drivers/hid/types';
import { DisabledMsd } from './drivers/msd/disabled';
import type { MsdDriver } from './drivers/msd/types';
import { TestbedAudio } from './drivers/testbed/audio';
import { TestbedHid } from './drivers/testbed/hid';
import { TestbedVideo } from './drivers/testbed/video';
import { DisabledVideo } from './drivers/video/disabled';
import type { VideoSource } from './drivers/video/types';
import type { Logger } from './log';
import { NoDisplay, NoUsbIdentity, NoWifi } from './drivers/system/none';
import { networkDriver } from './drivers/system/select';
import { TestRadioWifi } from './drivers/testbed/wifi';
import type { DisplayDriver, SystemDrivers } from './drivers/system/types';
import { TestbedDisplay } from './drivers/testbed/display';
import { LocalClock } from './drivers/clock/local-clock';
import { join } from 'node:path';
import { qemuUsbIdentity } from './drivers/qemu/usb-identity';

export interface Drivers {
  target: string;
  video: VideoSource;
  hid: HidDriver;
  atx: AtxDriver;
  msd: MsdDriver;
  fingerbot: FingerbotDriver;
  /** The remote computer's sound and the browser's microphone (issue 14). */
  audio: AudioDriver;
  /** The device's own administration: network, Wi-Fi, clock, EDID, USB identity (issue 11). */
  system: SystemDrivers;
  /** Target-specific handles other subsystems and tests may need (the testbed picture, the VM). */
  testbed?: TestbedVideo;
  testbedHid?: TestbedHid;
  /** The testbed's generated sound: `tone`, `heard` (drivers/testbed/audio.ts). */
  testbedAudio?: TestbedAudio;
  init(): Promise<void>;
  dispose(): Promise<void>;
}

type Parts = Omit<Drivers, 'init' | 'dispose' | 'target'>;

/**
 * `video.type` / `hid.type: disabled` (kvmd's model): the disabled driver runs instead of the
 * target's, which is then never started, and the target's handle to it is gone.
 */
function withDisabled(config: AppConfig, parts: Parts): Parts {
  const out = { ...parts };
  if (config.video.type === 'disabled') {
    out.video = new DisabledVideo();
    delete out.testbed;
  }
  if (config.hid.type === 'disabled') {
    out.hid = new DisabledHid();
    delete out.testbedHid;
  }
  return out;
}

function bundle(
  target: string,
  parts: Parts,
  extra: { init?: () => Promise<void>; dispose?: () => Promise<void> } = {},
): Drivers {
  const s = parts.system;
  const all = [
    parts.video,
    parts.hid,
    parts.atx,
    parts.msd,
    parts.fingerbot,
    parts.audio,
    s.network,
    s.wifi,
    s.clock,
    s.display,
    s.usb,
  ];
  return {
    target,
    ...parts,
    // drivers first (they subscribe to the machine), then the machine they talk to
    async init() {
      for (const d of all) await d.init();
      await extra.init?.();
    },
    async dispose() {
      // every driver gets its dispose even if one fails
      await Promise.allSettled(all.map((d) => d.dispose()));
      await extra.dispose?.();
    },
  };
}

/**
 * The developer targets' administration drivers. Each line is one subsystem; the issue-11 work
 * replaces them one by one (network: netns, Wi-Fi: test radio on the testbed, display: the
 * target's screen, USB identity: the VM's devices).
 */
function devSystemDrivers(config: AppConfig, log: Logger, display?: DisplayDriver): SystemDrivers {
  return {
    // qemu starts its namespaces at once; the testbed's many short-lived apps at first use
    network: networkDriver(config, log, { eager: config.target === 'qemu' }),
    wifi: config.target === 'testbed' ? new TestRadioWifi(config.data_dir) : new NoWifi(),
    clock: new LocalClock({ root: join(config.data_dir, 'system-root'), kind: 'offset' }),
    // no video (`video.type: disabled`): no monitor to identify
    display: config.video.type === 'disabled' || !display ? new NoDisplay() : display,
    usb: new NoUsbIdentity(),
  };
}

export async function createDrivers(config: AppConfig, log: Logger): Promise<Drivers> {
  switch (config.target) {
    case 'testbed': {
      const video = new TestbedVideo({
        width: config.testbed.width,
        height: config.testbed.height,
      });
      const hid = new TestbedHid(video.picture);
      const audio = new TestbedAudio();
      return bundle(
        'testbed',
        withDisabled(config, {
          video,
          hid,
          testbedHid: hid,
          atx: new DisabledAtx(),
          msd: new DisabledMsd(),
          fingerbot: new DisabledFingerbot(),
          audio,
          testbedAudio: audio,
          system: devSystemDrivers(config, log, new TestbedDisplay(video, log)),
          testbed: video,
        }),
      );
    }
    case 'qemu': {
      const { createQemuDrivers } = await import('./drivers/qemu/target');
      const q = await createQemuDrivers(config, log);
      const { QemuDisplay } = await import('./drivers/qemu/display');
      return bundle(
        'qemu',
        withDisabled(config, {
          video: q.video,
          hid: q.hid,
          atx: q.atx,
          msd: q.msd,
          fingerbot: q.fingerbot,
          // the VM's sound: its PulseAudio runs with the machine (q.init / q.dispose)
          audio: q.audio,
          system: {
            ...devSystemDrivers(config, log, new QemuDisplay(q.machine, config.data_dir, log)),
            usb: qemuUsbIdentity(q.hid),
          },
        }),
        { init: q.init, dispose: q.dispose },
      );
    }
  }
}

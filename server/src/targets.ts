/**
 * Target profiles: which driver runs each subsystem (architecture.md, Targets). Routes never
 * ask which target runs; they talk to these interfaces.
 */
import type { AppConfig } from './config';
import { DisabledAtx } from './drivers/atx/disabled';
import type { AtxDriver } from './drivers/atx/types';
import { DisabledFingerbot } from './drivers/fingerbot/disabled';
import type { FingerbotDriver } from './drivers/fingerbot/types';
import { DisabledHid } from './drivers/hid/disabled';
import type { HidDriver } from './drivers/hid/types';
import { DisabledMsd } from './drivers/msd/disabled';
import type { MsdDriver } from './drivers/msd/types';
import { TestbedHid } from './drivers/testbed/hid';
import { TestbedVideo } from './drivers/testbed/video';
import { DisabledVideo } from './drivers/video/disabled';
import type { VideoSource } from './drivers/video/types';
import type { Logger } from './log';

export interface Drivers {
  target: string;
  video: VideoSource;
  hid: HidDriver;
  atx: AtxDriver;
  msd: MsdDriver;
  fingerbot: FingerbotDriver;
  /** Target-specific handles other subsystems and tests may need (the testbed picture, the VM). */
  testbed?: TestbedVideo;
  testbedHid?: TestbedHid;
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
  const all = [parts.video, parts.hid, parts.atx, parts.msd, parts.fingerbot];
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

export async function createDrivers(config: AppConfig, log: Logger): Promise<Drivers> {
  switch (config.target) {
    case 'testbed': {
      const video = new TestbedVideo({
        width: config.testbed.width,
        height: config.testbed.height,
      });
      const hid = new TestbedHid(video.picture);
      return bundle(
        'testbed',
        withDisabled(config, {
          video,
          hid,
          testbedHid: hid,
          atx: new DisabledAtx(),
          msd: new DisabledMsd(),
          fingerbot: new DisabledFingerbot(),
          testbed: video,
        }),
      );
    }
    case 'qemu': {
      const { createQemuDrivers } = await import('./drivers/qemu/target');
      const q = await createQemuDrivers(config, log);
      return bundle(
        'qemu',
        withDisabled(config, {
          video: q.video,
          hid: q.hid,
          atx: q.atx,
          msd: q.msd,
          fingerbot: q.fingerbot,
        }),
        { init: q.init, dispose: q.dispose },
      );
    }
  }
}

/**
 * The one factory table (kvmd's model): each subsystem's `type` (drivers/choices.ts, resolved
 * from the target preset and the config) maps to its driver class here, and nowhere else. What
 * several drivers of one kind share (the QEMU VM, the testbed picture) is made once, by the
 * first driver that needs it. Services and routes only see the interfaces in `<subsystem>/types`.
 */
import { join } from 'node:path';
import { AUDIO_FORMAT } from '@kvm/protocol';
import type { AppConfig } from '../config';
import type { Logger } from '../log';
import { QemuPlatform } from '../platform/qemu/platform';
import { GadgetPlatform } from '../platform/gadget/platform';
import { DEFAULT_UVC_SPEC } from '../platform/gadget/uvc';
import {
  ABSOLUTE_MOUSE_FUNCTION,
  KEYBOARD_FUNCTION,
  RELATIVE_MOUSE_FUNCTION,
} from '../platform/gadget/reports';
import { runCommand } from '../process/run';
import { resolveTypes, TARGET_PRESETS, type DriverTypes, type Subsystem } from './choices';
import type { Lifecycle } from './types';
import type { VideoSource } from './video/types';
import { DisabledVideo } from './video/disabled';
import { FileVideo } from './video/file';
import { QemuVideo } from './video/qemu';
import { TestbedVideo } from './video/testbed';
import { V4l2Video } from './video/v4l2';
import { V4l2Ctl } from '../platform/v4l2/ctl';
import type { HidDriver } from './hid/types';
import { DisabledHid } from './hid/disabled';
import { QemuHid } from './hid/qemu';
import { TestbedHid } from './hid/testbed';
import { GadgetHid } from './hid/gadget';
import type { AtxDriver } from './atx/types';
import { DisabledAtx } from './atx/disabled';
import { QemuAtx } from './atx/qemu';
import { GpioAtx } from './atx/gpio';
import { GpiodTools } from '../platform/gpio/tools';
import type { MsdDriver } from './msd/types';
import { DisabledMsd } from './msd/disabled';
import { QemuMsd } from './msd/qemu';
import { GadgetMsd } from './msd/gadget';
import type { FingerbotDriver } from './fingerbot/types';
import { DisabledFingerbot } from './fingerbot/disabled';
import { QemuFingerbot } from './fingerbot/qemu';
import type { AudioDriver } from './audio/types';
import { DisabledAudio } from './audio/disabled';
import { QemuAudio } from './audio/qemu';
import { AlsaAudio, type AlsaGadgetSound } from './audio/alsa';
import { TestbedAudio } from './audio/testbed';
import type { NetworkDriver } from './network/types';
import { DisabledNetwork } from './network/disabled';
import { NetnsNetwork } from './network/netns';
import { NmcliNetwork } from './network/nmcli';
import type { WifiDriver } from './wifi/types';
import { DisabledWifi } from './wifi/disabled';
import { NmcliWifi } from './wifi/nmcli';
import { TestRadioWifi } from './wifi/test-radio';
import type { ClockDriver } from './clock/types';
import { DisabledClock } from './clock/disabled';
import { LocalClock } from './clock/local';
import { systemClock } from './clock/timedatectl';
import type { DisplayDriver } from './display/types';
import { DisabledDisplay } from './display/disabled';
import { QemuDisplay } from './display/qemu';
import { TestbedDisplay } from './display/testbed';
import { V4l2Display } from './display/v4l2';
import type { GadgetStart, UsbIdentityDriver } from './usb/types';
import { qemuUsbIdentity } from './usb/qemu';
import { GadgetUsbIdentity, settingsOf } from './usb/gadget';
import { DisabledUsbIdentity } from './usb/disabled';
import type { SerialConsole } from './serial/types';
import { NoSerialConsole } from './serial/disabled';
import { UnixSocketSerial } from './serial/qemu';
import { wolSender } from './wol/select';
import type { WolSender } from './wol/types';

export const NETWORK_DISABLED = 'Network management is disabled in the configuration';

/** The device's own administration drivers (issue 11). */
export interface SystemDrivers {
  network: NetworkDriver;
  wifi: WifiDriver;
  clock: ClockDriver;
  /** Follows the video driver: the screen whose monitor identity (EDID) it is. */
  display: DisplayDriver;
  /** Follows the HID driver: the USB devices whose identity it is. */
  usb: UsbIdentityDriver;
}

export interface Drivers {
  /** The types in force, after the preset and the config. */
  types: DriverTypes;
  /** The target preset's description (`/api/info` platform.base). */
  description: string;
  video: VideoSource;
  hid: HidDriver;
  atx: AtxDriver;
  msd: MsdDriver;
  fingerbot: FingerbotDriver;
  audio: AudioDriver;
  system: SystemDrivers;
  /** The remote computer's serial line (`terminal.serial`). */
  serial: SerialConsole;
  /** Where Wake-on-LAN packets leave (follows the network driver and `wol.network`). */
  wol: WolSender;
  /** The testbed's handles for tests and benches: set when that driver is the testbed's. */
  testbed?: TestbedVideo;
  testbedHid?: TestbedHid;
  testbedAudio?: TestbedAudio;
  /** The gadget target's USB side (problems, UDC) for /api/info; null on the other targets. */
  gadget: GadgetPlatform | null;
  /** What the log bundle says of the remote computer (the QEMU guest's manifest). */
  describe(): Promise<Record<string, unknown>>;
  init(): Promise<void>;
  dispose(): Promise<void>;
}

/** Everything a driver constructor may need; the shared parts are made at first use. */
class Shared {
  private qemuPlatform: QemuPlatform | null = null;
  private gadgetPlatform: GadgetPlatform | null = null;

  constructor(
    readonly config: AppConfig,
    readonly types: DriverTypes,
    readonly log: Logger,
    private readonly opts: DriverOptions,
  ) {}

  /** The composite USB gadget of the gadget target (made by the first driver that needs it). */
  get gadget(): GadgetPlatform {
    const g = this.config.gadget;
    const atStart = this.opts.gadgetStart;
    this.gadgetPlatform ??= new GadgetPlatform({
      configfs: g.configfs,
      sys: g.sys,
      dev: g.dev,
      name: g.name,
      udc: g.udc,
      udcPollMs: g.udc_poll_ms,
      hid: {
        keyboard: KEYBOARD_FUNCTION,
        absolute: ABSOLUTE_MOUSE_FUNCTION,
        relative: RELATIVE_MOUSE_FUNCTION,
      },
      // the remote computer's USB sound card, for the ALSA sound driver
      uac2:
        this.types.audio === 'alsa' && g.uac2
          ? { channels: AUDIO_FORMAT.channels, rate: AUDIO_FORMAT.sampleRate, sampleBytes: 2 }
          : null,
      // the remote computer's webcam, fed from the browser's camera (services/camera)
      uvc: g.uvc ? DEFAULT_UVC_SPEC : null,
      ...(atStart
        ? {
            initial: async () => {
              const start = await atStart();
              return {
                ...(start.identity ? settingsOf(start.identity) : {}),
                mouseMode: start.mouse,
              };
            },
          }
        : {}),
      setup: { run: runCommand, root: process.getuid?.() === 0 },
      log: this.log,
    });
    return this.gadgetPlatform;
  }

  get madeGadget(): GadgetPlatform | null {
    return this.gadgetPlatform;
  }

  get qemu(): QemuPlatform {
    this.qemuPlatform ??= new QemuPlatform({
      dataDir: this.config.data_dir,
      log: this.log,
      sound: this.types.audio === 'qemu',
    });
    return this.qemuPlatform;
  }

  /** The platforms that were made, to start after the drivers and stop after them. */
  platforms(): Lifecycle[] {
    return [this.qemuPlatform, this.gadgetPlatform].filter((p): p is NonNullable<typeof p> => !!p);
  }

  /** What the log bundle says of the remote computer. */
  async describe(): Promise<Record<string, unknown>> {
    const g = this.gadgetPlatform;
    return {
      guest: this.qemuPlatform ? await this.qemuPlatform.guestManifest() : null,
      // the gadget target: what the board's USB side is and lacks
      ...(g
        ? {
            gadget: {
              problems: g.problems(),
              udc: g.udc(),
              settings: g.settingsNow(),
              luns: g.luns(),
              rebuild_ms: g.rebuildMs(),
            },
          }
        : {}),
    };
  }

  /** `<data>/system-root` on the developer targets, `/` on a device (config `system.root`). */
  systemRoot(fallback: string): string {
    return this.config.system.root ?? fallback;
  }
}

type Made<S extends Subsystem> = {
  video: VideoSource;
  hid: HidDriver;
  atx: AtxDriver;
  msd: MsdDriver;
  fingerbot: FingerbotDriver;
  audio: AudioDriver;
  network: NetworkDriver;
  wifi: WifiDriver;
  clock: ClockDriver;
  serial: SerialConsole;
}[S];

type Table = {
  [S in Subsystem]: Record<DriverTypes[S], (s: Shared, made: Partial<Built>) => Made<S>>;
};

type Built = { [S in Subsystem]: Made<S> };

/**
 * (subsystem, type) → driver. Built in the order of this table: video before HID (the testbed
 * HID draws on the video's picture; QEMU's wakes the video), network before Wi-Fi.
 */
const TABLE: Table = {
  video: {
    qemu: (s) => {
      const p = s.qemu;
      const video = new QemuVideo(p.machine, { log: s.log, onLeds: (leds) => p.leds(leds) });
      p.onWake(() => video.wakeRefresh());
      return video;
    },
    testbed: (s) =>
      new TestbedVideo({ width: s.config.testbed.width, height: s.config.testbed.height }),
    file: (s) =>
      new FileVideo({ path: s.config.video.file, ffmpeg: s.config.video.ffmpeg, log: s.log }),
    v4l2: (s) => {
      const c = s.config.video.v4l2;
      return new V4l2Video({
        ctl: new V4l2Ctl({ device: c.device, input: c.input, binary: c.ctl }),
        formats: c.formats,
        fps: c.fps,
        maxWidth: c.max_width,
        maxHeight: c.max_height,
        log: s.log,
      });
    },
    disabled: () => new DisabledVideo(),
  },
  hid: {
    qemu: (s) => {
      const p = s.qemu;
      const hid = new QemuHid(p.machine, s.log, () => p.wakeVideo());
      p.onLeds((leds) => hid.setLeds(leds));
      return hid;
    },
    testbed: (_s, made) =>
      new TestbedHid(made.video instanceof TestbedVideo ? made.video.picture : null),
    gadget: (s) =>
      new GadgetHid(s.gadget, { log: s.log, writeTimeoutMs: s.config.gadget.hid_write_timeout_ms }),
    disabled: () => new DisabledHid(),
  },
  atx: {
    qemu: (s) => new QemuAtx(s.qemu.machine),
    gpio: (s) => {
      const g = s.config.atx.gpio;
      return new GpioAtx({
        chip: g.chip,
        power_button: g.power_button,
        reset_button: g.reset_button,
        power_led: g.power_led,
        hdd_led: g.hdd_led,
        tools: new GpiodTools(g.tools_dir),
        log: s.log,
      });
    },
    disabled: () => new DisabledAtx(),
  },
  msd: {
    qemu: (s) => new QemuMsd(s.qemu.machine, s.log, { usbBus: 'xhci.0' }),
    gadget: (s) =>
      new GadgetMsd(s.gadget, { partitionDevice: s.config.gadget.msd_partition_device }),
    disabled: () => new DisabledMsd(),
  },
  fingerbot: {
    qemu: (s) => new QemuFingerbot(s.qemu.machine, s.config.data_dir),
    disabled: () => new DisabledFingerbot(),
  },
  audio: {
    // the VM's sound server runs with the machine (QemuPlatform)
    qemu: (s) => new QemuAudio(s.qemu.pulse!),
    testbed: () => new TestbedAudio(),
    alsa: (s) => {
      const a = s.config.audio.alsa;
      // the gadget's own card when the gadget target makes one; else a card of the board's own
      const gadget =
        s.types.hid === 'gadget' || s.types.msd === 'gadget' ? gadgetSound(s.gadget) : null;
      return new AlsaAudio({ card: a.card, device: a.device, proc: a.proc, gadget });
    },
    disabled: () => new DisabledAudio(),
  },
  network: {
    netns: (s) =>
      new NetnsNetwork({
        dataDir: s.config.data_dir,
        root: s.systemRoot(join(s.config.data_dir, 'system-root')),
        log: s.log,
        eager: TARGET_PRESETS[s.config.target].networkAtStart,
      }),
    nmcli: (s) => new NmcliNetwork({ log: s.log }),
    disabled: () => new DisabledNetwork(NETWORK_DISABLED),
  },
  wifi: {
    nmcli: (s) => new NmcliWifi({ log: s.log }),
    'test-radio': (s) => new TestRadioWifi(s.config.data_dir),
    disabled: () => new DisabledWifi(),
  },
  clock: {
    offset: (s) => new LocalClock({ root: join(s.config.data_dir, 'system-root'), kind: 'offset' }),
    system: (s) => systemClock(s.systemRoot('/')),
    disabled: () => new DisabledClock(),
  },
  serial: {
    qemu: (s) => new UnixSocketSerial(s.qemu.machine.paths.serialSock),
    disabled: () =>
      new NoSerialConsole(
        'This device has no serial line to the remote computer (terminal.serial: disabled).',
      ),
  },
};

/** The gadget's sound side as the ALSA driver sees it (its card comes and goes with the bind). */
function gadgetSound(p: GadgetPlatform): AlsaGadgetSound {
  return {
    soundOnline: () => p.soundOnline(),
    soundProblem: () => p.soundProblem(),
    onChange: (listener) => {
      const offChange = p.onChange(listener);
      const offRebuilt = p.onRebuilt(listener);
      return () => {
        offChange();
        offRebuilt();
      };
    },
  };
}

/** Display identity follows the video driver: the monitor of that screen. */
function displayFor(video: VideoSource, s: Shared): DisplayDriver {
  if (video instanceof QemuVideo) return new QemuDisplay(s.qemu.machine, s.config.data_dir, s.log);
  if (video instanceof TestbedVideo) return new TestbedDisplay(video, s.log);
  if (video instanceof V4l2Video) return new V4l2Display(video.ctl, video, s.log);
  return new DisabledDisplay();
}

/** USB identity follows the HID driver: the devices the remote computer enumerates. */
function usbFor(hid: HidDriver, s: Shared): UsbIdentityDriver {
  if (s.types.hid === 'gadget' || s.types.msd === 'gadget') return new GadgetUsbIdentity(s.gadget);
  return hid instanceof QemuHid ? qemuUsbIdentity(hid) : new DisabledUsbIdentity();
}

export interface DriverOptions {
  /** The gadget target's stored settings, to build the gadget right at start. */
  gadgetStart?: () => Promise<GadgetStart>;
}

export async function createDrivers(
  config: AppConfig,
  log: Logger,
  opts: DriverOptions = {},
): Promise<Drivers> {
  const types = resolveTypes(config.target, {
    video: config.video.type,
    hid: config.hid.type,
    atx: config.atx.type,
    msd: config.msd.type,
    fingerbot: config.fingerbot.type,
    audio: config.audio.type,
    network: config.system.network,
    wifi: config.system.wifi,
    clock: config.system.clock,
    serial: config.terminal.serial,
  });
  const shared = new Shared(config, types, log, opts);
  const made: Partial<Built> = {};
  for (const subsystem of Object.keys(TABLE) as Subsystem[]) {
    const make = (TABLE[subsystem] as Record<string, (s: Shared, m: Partial<Built>) => unknown>)[
      types[subsystem]
    ]!;
    (made as Record<string, unknown>)[subsystem] = make(shared, made);
  }
  const b = made as Built;
  const system: SystemDrivers = {
    network: b.network,
    wifi: b.wifi,
    clock: b.clock,
    // no video: no monitor to identify
    display: displayFor(b.video, shared),
    usb: usbFor(b.hid, shared),
  };
  const all: Lifecycle[] = [
    b.video,
    b.hid,
    b.atx,
    b.msd,
    b.fingerbot,
    b.audio,
    system.network,
    system.wifi,
    system.clock,
    system.display,
    system.usb,
  ];
  const platforms = shared.platforms();
  return {
    types,
    description: TARGET_PRESETS[config.target].description,
    video: b.video,
    hid: b.hid,
    atx: b.atx,
    msd: b.msd,
    fingerbot: b.fingerbot,
    audio: b.audio,
    system,
    serial: b.serial,
    wol: wolSender(config.wol, system.network),
    ...(b.video instanceof TestbedVideo ? { testbed: b.video } : {}),
    ...(b.hid instanceof TestbedHid ? { testbedHid: b.hid } : {}),
    ...(b.audio instanceof TestbedAudio ? { testbedAudio: b.audio } : {}),
    gadget: shared.madeGadget,
    describe: () => shared.describe(),
    // drivers first (they subscribe to the machine), then the machine they talk to
    async init() {
      for (const d of all) await d.init();
      for (const p of platforms) await p.init();
    },
    async dispose() {
      // every driver gets its dispose even if one fails
      await Promise.allSettled(all.map((d) => d.dispose()));
      for (const p of platforms) await p.dispose();
    },
  };
}

/**
 * Every subsystem's driver types (kvmd's `type:` keys) and the targets as presets of them. Names
 * only, so the config schema can list them without loading a driver; drivers/factory.ts maps
 * each (subsystem, type) to its class.
 *
 * `target` (every key's default) means "the preset's choice"; `disabled` is a driver that
 * reports itself offline or unavailable and changes nothing.
 */
export const DRIVER_CHOICES = {
  video: ['qemu', 'testbed', 'file', 'v4l2', 'disabled'],
  hid: ['qemu', 'testbed', 'gadget', 'disabled'],
  atx: ['qemu', 'gpio', 'disabled'],
  msd: ['qemu', 'gadget', 'disabled'],
  fingerbot: ['qemu', 'disabled'],
  audio: ['qemu', 'testbed', 'alsa', 'disabled'],
  /** `system.network` */
  network: ['netns', 'nmcli', 'disabled'],
  /** `system.wifi` */
  wifi: ['nmcli', 'test-radio', 'disabled'],
  /** `system.clock`: `offset` keeps the device clock as an offset in the data folder; `system` is
   *  this computer's clock through timedatectl. */
  clock: ['offset', 'system', 'disabled'],
  /** `terminal.serial` */
  serial: ['qemu', 'disabled'],
} as const;

export type Subsystem = keyof typeof DRIVER_CHOICES;
export type DriverChoice<S extends Subsystem> = (typeof DRIVER_CHOICES)[S][number];
export type DriverTypes = { [S in Subsystem]: DriverChoice<S> };

/** The config key of each subsystem's type, for messages and docs. */
export const TYPE_KEYS: Record<Subsystem, string> = {
  video: 'video.type',
  hid: 'hid.type',
  atx: 'atx.type',
  msd: 'msd.type',
  fingerbot: 'fingerbot.type',
  audio: 'audio.type',
  network: 'system.network',
  wifi: 'system.wifi',
  clock: 'system.clock',
  serial: 'terminal.serial',
};

export interface TargetPreset {
  /** For /api/info's `platform.base` and the log. */
  description: string;
  types: DriverTypes;
  /** The device network's namespaces start with the server (not at first use). */
  networkAtStart: boolean;
}

/** A target is a named preset of types (`target:` / `--target`) and nothing else. */
export const TARGET_PRESETS = {
  qemu: {
    description: 'QEMU virtual machine',
    types: {
      video: 'qemu',
      hid: 'qemu',
      atx: 'qemu',
      msd: 'qemu',
      fingerbot: 'qemu',
      audio: 'qemu',
      network: 'netns',
      // this machine has no radio (architecture.md)
      wifi: 'disabled',
      clock: 'offset',
      serial: 'qemu',
    },
    networkAtStart: true,
  },
  testbed: {
    description: 'Test bed',
    types: {
      video: 'testbed',
      hid: 'testbed',
      atx: 'disabled',
      msd: 'disabled',
      fingerbot: 'disabled',
      audio: 'testbed',
      network: 'netns',
      wifi: 'test-radio',
      clock: 'offset',
      serial: 'disabled',
    },
    // the tests' many short-lived servers start it at first use
    networkAtStart: false,
  },
  gadget: {
    description: 'USB gadget (a real board)',
    types: {
      // the board's HDMI receiver (or a USB dongle), config video.v4l2
      video: 'v4l2',
      hid: 'gadget',
      // libgpiod's tools on the board's GPIO lines (docs/drivers.md "ATX over GPIO")
      atx: 'gpio',
      msd: 'gadget',
      fingerbot: 'disabled',
      // the gadget's UAC2 sound card (gadget.uac2)
      audio: 'alsa',
      network: 'nmcli',
      wifi: 'nmcli',
      clock: 'system',
      serial: 'disabled',
    },
    // NetworkManager owns the board's network; nothing to start
    networkAtStart: false,
  },
} as const satisfies Record<string, TargetPreset>;

export type TargetName = keyof typeof TARGET_PRESETS;
export const TARGETS = Object.keys(TARGET_PRESETS) as TargetName[];

/** A config's types: the preset's, with each key that is not `target` in its place. */
export function resolveTypes(
  target: TargetName,
  chosen: { [S in Subsystem]: DriverChoice<S> | 'target' },
): DriverTypes {
  const preset: DriverTypes = TARGET_PRESETS[target].types;
  const out = { ...preset };
  for (const key of Object.keys(chosen) as Subsystem[]) {
    const value = chosen[key];
    if (value !== 'target') (out as Record<Subsystem, string>)[key] = value;
  }
  return out;
}

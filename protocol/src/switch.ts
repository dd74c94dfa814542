/**
 * PiKVM Switch (kvmd 4.2xx `GET /api/switch`, `apps/kvmd/switch/state.py`): the state a device
 * with no Switch attached answers. This product never has one, so the chain is empty: no units,
 * no ports, the default EDID and colors, no links, beacons or ATX LEDs. The PiKVM web UI hides
 * its Switch menu when `model.ports` is empty.
 */

export interface SwitchColor {
  red: number;
  green: number;
  blue: number;
  brightness: number;
  blink_ms: number;
}

export interface SwitchState {
  model: {
    firmware: { version: number };
    units: unknown[];
    ports: unknown[];
    limits: {
      atx: {
        click_delays: Record<
          'power' | 'power_long' | 'reset',
          { default: number; min: number; max: number }
        >;
      };
    };
  };
  summary: { active_port: number; active_id: string; synced: boolean };
  edids: {
    all: Record<string, { name: string; data: string; parsed: unknown }>;
    used: string[];
  };
  colors: Record<'inactive' | 'active' | 'flashing' | 'beacon' | 'bootloader', SwitchColor>;
  video: { links: boolean[] };
  usb: { links: boolean[] };
  beacons: { uplinks: boolean[]; downlinks: boolean[]; ports: boolean[] };
  atx: { busy: boolean[]; leds: { power: boolean[]; hdd: boolean[] } };
}

const color = (red: number, green: number, blue: number, brightness: number, blink_ms: number) => ({
  red,
  green,
  blue,
  brightness,
  blink_ms,
});

/** kvmd's state of an empty chain (firmware protocol 9, its default delays and colors). */
export function noSwitchState(): SwitchState {
  return {
    model: {
      firmware: { version: 9 },
      units: [],
      ports: [],
      limits: {
        atx: {
          click_delays: {
            power: { default: 0.5, min: 0, max: 10 },
            power_long: { default: 5.5, min: 0, max: 10 },
            reset: { default: 0.5, min: 0, max: 10 },
          },
        },
      },
    },
    summary: { active_port: -1, active_id: '', synced: true },
    edids: {
      // kvmd's empty default EDID: 256 zero bytes, nothing to parse.
      all: { default: { name: 'Default', data: '00'.repeat(256), parsed: null } },
      used: [],
    },
    colors: {
      inactive: color(255, 0, 0, 64, 0),
      active: color(0, 255, 0, 128, 0),
      flashing: color(0, 170, 255, 128, 0),
      beacon: color(228, 44, 156, 255, 250),
      bootloader: color(255, 170, 0, 128, 0),
    },
    video: { links: [] },
    usb: { links: [] },
    beacons: { uplinks: [], downlinks: [], ports: [] },
    atx: { busy: [], leds: { power: [], hdd: [] } },
  };
}

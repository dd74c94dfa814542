/** `/api/info` and its `info` event (wire-protocol.md 1.3, 2.3). */
import { readFileSync } from 'node:fs';
import { freemem, machine, release, totalmem, type, uptime, version } from 'node:os';
import { INFO_FIELDS, type InfoResult } from '@kvm/protocol';
import type { AppConfig } from '../config';
import { CpuMeter } from './cpu-meter';
import type { StateProvider } from '../ws/state-registry';

export interface InfoDeps {
  config: AppConfig;
  /** The product's firmware version (root package.json). */
  version: string;
  /** Host name reported in meta and node. */
  host: string;
  /** The device's stable id (services/device-id.ts): product.device_id, the About dialog's. */
  deviceId: string;
  /** The target preset's description and the video driver's name (null: none). */
  platform: { base: string; video: string | null };
  /** The gadget target's USB side: its problems and UDC (null on the other targets). */
  gadget?: InfoPlatformStatus | null;
  /** CPU temperature in °C, null when the machine has no sensor (tests replace it). */
  cpuTemp?: () => number | null;
}

/** What a platform tells /api/info of its hardware (GadgetPlatform). */
export interface InfoPlatformStatus {
  problems(): string[];
  udc(): { name: string; state: string } | null;
  /** Called when problems() or udc() may have changed; returns the unsubscribe. */
  onChange(listener: () => void): () => void;
}

function thermalZoneTemp(): number | null {
  try {
    const milli = Number.parseInt(
      readFileSync('/sys/class/thermal/thermal_zone0/temp', 'utf8'),
      10,
    );
    return Number.isFinite(milli) ? milli / 1000 : null;
  } catch {
    return null;
  }
}

export class InfoService {
  /** CPU time since the previous health reading: its load is the one since then. */
  private readonly cpu = new CpuMeter();

  constructor(private readonly deps: InfoDeps) {}

  build(): InfoResult {
    const { config } = this.deps;
    return {
      system: {
        kvmd: { version: '4.82' },
        product: {
          name: 'KVM console',
          version: this.deps.version,
          model: config.device.model,
          target: config.target,
          device_id: this.deps.deviceId,
        },
        kernel: { system: type(), release: release(), version: version(), machine: machine() },
        platform: {
          type: config.target,
          base: this.deps.platform.base,
          model: config.device.model,
          serial: '',
          // kvmd: "hdmi", "hdmiusb", ... from its platform file; ours is the target's source.
          video: this.deps.platform.video,
          // kvmd: "rpi4", ...; no board here.
          board: null,
          problems: this.deps.gadget?.problems() ?? [],
          udc: this.deps.gadget?.udc() ?? null,
        },
        streamer: { app: 'kvm-server', version: this.deps.version, features: {} },
      },
      auth: { enabled: true },
      meta: { kvm: {}, server: { host: this.deps.host } },
      extras: {},
      node: { host: this.deps.host },
      uptime: this.uptime(),
      health: this.health(),
      fan: { monitored: false, state: null },
    };
  }

  private uptime(): InfoResult['uptime'] {
    const total = Math.floor(uptime());
    return {
      total,
      parts: {
        days: Math.floor(total / 86_400),
        hours: Math.floor((total % 86_400) / 3600),
        minutes: Math.floor((total % 3600) / 60),
        seconds: total % 60,
      },
    };
  }

  private health(): InfoResult['health'] {
    const spent = this.cpu.since();
    const percent = spent.total > 0 ? Math.round((spent.busy / spent.total) * 100) : null;
    const memTotal = totalmem();
    const available = freemem();
    return {
      temp: { cpu: (this.deps.cpuTemp ?? thermalZoneTemp)() },
      cpu: { percent },
      mem: {
        percent: Math.round(((memTotal - available) / memTotal) * 1000) / 10,
        total: memTotal,
        available,
      },
      // kvmd reads it from the Raspberry Pi firmware only.
      throttling: null,
    };
  }

  /**
   * kvmd sends `info` one field per frame. `system` is sent again when the platform's problems
   * or UDC change (the gadget's UDC state, a UDC that appeared).
   */
  provider(): StateProvider {
    return {
      name: 'info',
      snapshot: () => {
        const info = this.build();
        return INFO_FIELDS.map((f) => ({ event_type: 'info', event: { [f]: info[f] } }));
      },
      subscribe: (emit) => {
        const gadget = this.deps.gadget;
        if (!gadget) return () => undefined;
        const key = (): string => JSON.stringify([gadget.problems(), gadget.udc()]);
        let last = key();
        return gadget.onChange(() => {
          const now = key();
          if (now === last) return;
          last = now;
          emit({ event_type: 'info', event: { system: this.build().system } });
        });
      },
    };
  }
}

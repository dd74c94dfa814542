/**
 * The device clock and time zone (GL §5.5, 5.13; SPEC 3 "System time info"). The clock driver
 * keeps the zone and the time (`LocalClock`: on the developer targets an offset clock that never
 * touches the host). Offsets come from Intl at the device clock's own time.
 *
 * GL's two sign rules for `time_zone`: an `Etc/GMT±h` zone is answered with JS
 * `getTimezoneOffset`'s sign (positive = west: Etc/GMT-8, UTC+8, is -480), a city zone with
 * local − UTC (Asia/Kolkata is +330). POST `time_zone` takes the former and sets
 * `Etc/GMT±(minutes // 60)` (floor: half-hour offsets lose their half hour, as on GL).
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { SystemTimeResult, TimezoneListResult } from '@kvm/protocol';
import { BadRequestError } from '../../errors';
import type { ClockDriver } from '../../drivers/clock/types';
import { ZONEINFO_DIR } from '../../drivers/clock/types';
import type { Logger } from '../../log';
import { SerialQueue } from '../../sync/serial-queue';
import { ZONE_NAME_MAX, type TimeChange } from './time-input';

const ETC_ZONE = /^Etc\/GMT[+-]\d{1,2}$/;
const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+){1,2}$/;

/** local − UTC in minutes of `zone` at `atMs`, or null when Intl does not know the zone. */
export function utcOffsetMinutes(zone: string, atMs: number): number | null {
  let name: string | undefined;
  try {
    name = new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' })
      .formatToParts(new Date(atMs))
      .find((p) => p.type === 'timeZoneName')?.value;
  } catch {
    return null;
  }
  if (!name) return null;
  if (name === 'GMT') return 0;
  const m = /^GMT([+-])(\d{2}):(\d{2})$/.exec(name);
  if (!m) return null;
  const minutes = Number(m[2]) * 60 + Number(m[3]);
  return m[1] === '-' ? -minutes : minutes;
}

/** GL's `time_zone` for `zone`: JS getTimezoneOffset's sign for Etc/GMT±h, else local − UTC. */
export function glTimeZoneMinutes(zone: string, utcOffset: number): number {
  const value = ETC_ZONE.test(zone) ? -utcOffset : utcOffset;
  return value === 0 ? 0 : value; // never -0 on the wire
}

export interface TimeServiceOptions {
  clock: ClockDriver;
  zoneinfoDir?: string;
  log?: Logger;
}

export class TimeService {
  private readonly zoneinfo: string;
  private cities: string[] | null = null;
  /** Changes run one at a time: a zone and a time from two requests never interleave. */
  private readonly changes = new SerialQueue();

  constructor(private readonly opts: TimeServiceOptions) {
    this.zoneinfo = opts.zoneinfoDir ?? ZONEINFO_DIR;
  }

  /** `GET /api/system/time`. */
  async get(): Promise<SystemTimeResult> {
    const clock = this.opts.clock;
    const now = clock.now();
    const zone = await clock.zone();
    const offset = utcOffsetMinutes(zone, now) ?? 0;
    return {
      success: true,
      time: Math.floor(now / 1000),
      time_zone: glTimeZoneMinutes(zone, offset),
      timezone_name: zone,
      utc_offset_minutes: offset,
      clock: clock.kind,
    };
  }

  /**
   * `POST /api/system/time` with the change the route parsed (time-input.ts `parseTimeQuery`):
   * the zone, then the time; both or neither.
   */
  async set({ zone, timeMs }: TimeChange): Promise<Record<string, never>> {
    await this.changes.run(async () => {
      const clock = this.opts.clock;
      const previousZone = zone !== null ? await clock.zone() : null;
      if (zone !== null) await clock.setZone(zone);
      if (timeMs !== null) {
        try {
          await clock.setTime(timeMs);
        } catch (err) {
          // both or neither: the zone goes back when the clock refuses the time
          if (previousZone !== null && this.hasZone(previousZone)) {
            await clock.setZone(previousZone).catch(() => undefined);
          }
          throw err;
        }
      }
      this.opts.log?.info({ zone, time: timeMs }, 'device time set');
    });
    return {};
  }

  /** City zones: Intl's list of IANA zones that exist in the zoneinfo database here. */
  listZones(region?: string): TimezoneListResult {
    let zones = this.cityZones();
    if (region !== undefined) {
      const prefix = `${region}/`;
      zones = zones.filter((z) => z.toLowerCase().startsWith(prefix.toLowerCase()));
    }
    return { success: true, timezones: zones, count: zones.length };
  }

  /** `POST /api/system/timezone?timezone=Europe/Berlin` (time-input.ts `parseZoneName`). */
  async setCityZone(name: string): Promise<{ success: true; timezone_name: string }> {
    if (!this.isCityZone(name)) {
      throw new BadRequestError(
        `timezone parameter is not a known time zone: ${JSON.stringify(name.slice(0, ZONE_NAME_MAX))}`,
      );
    }
    await this.changes.run(() => this.opts.clock.setZone(name));
    this.opts.log?.info({ zone: name }, 'device time zone set');
    return { success: true, timezone_name: name };
  }

  // ---- internals ----

  /**
   * The city zones under their current names: tzdata's own `zone.tab` (Asia/Kolkata,
   * Europe/Kyiv), not Intl's list, which still says Asia/Calcutta and Europe/Kiev. Intl's list
   * is the fallback where the table is missing.
   */
  private cityZones(): string[] {
    if (!this.cities) {
      let names: string[];
      try {
        names = readFileSync(join(this.zoneinfo, 'zone.tab'), 'utf8')
          .split('\n')
          .filter((line) => line !== '' && !line.startsWith('#'))
          .map((line) => line.split('\t')[2] ?? '');
      } catch {
        names = Intl.supportedValuesOf('timeZone');
      }
      this.cities = [...new Set(names)]
        .filter(
          (z) =>
            ZONE_NAME.test(z) &&
            !z.startsWith('Etc/') &&
            utcOffsetMinutes(z, Date.now()) !== null &&
            this.hasZone(z),
        )
        .sort();
    }
    return this.cities;
  }

  /** In the list, or another name of one (Asia/Kolkata for Intl's Asia/Calcutta). */
  private isCityZone(name: string): boolean {
    if (name.length === 0 || name.length > ZONE_NAME_MAX) return false;
    if (this.cityZones().includes(name)) return true;
    return (
      ZONE_NAME.test(name) &&
      !name.startsWith('Etc/') &&
      utcOffsetMinutes(name, Date.now()) !== null &&
      this.hasZone(name)
    );
  }

  /** Whether the zoneinfo database here has `zone` (parseTimeQuery's `zoneExists`). */
  hasZone(zone: string): boolean {
    const file = join(this.zoneinfo, zone);
    try {
      return existsSync(file) && statSync(file).isFile();
    } catch {
      return false;
    }
  }
}

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
import {
  TIME_ZONE_MAX_MINUTES,
  TIME_ZONE_MIN_MINUTES,
  type SystemTimeResult,
  type TimezoneListResult,
} from '@kvm/protocol';
import { BadRequestError } from '../../errors';
import type { ClockDriver } from '../../drivers/system/types';
import { ZONEINFO_DIR } from '../../drivers/clock/local-clock';
import type { Logger } from '../../log';

/** GL's `time` bound: a signed 32-bit unix time. */
export const TIME_MAX_S = 2 ** 31 - 1;
/** Longest region or zone name we look at (the longest IANA name is 30 characters). */
export const ZONE_NAME_MAX = 64;

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

/** The Etc zone GL sets for `minutes` (JS sign): floor division, as Python's `//`. */
export function etcZoneFor(minutes: number): string {
  const hours = Math.floor(minutes / 60);
  return hours >= 0 ? `Etc/GMT+${hours}` : `Etc/GMT${hours}`;
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
  private chain: Promise<unknown> = Promise.resolve();

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

  /** `POST /api/system/time?time=&time_zone=`: validated whole, then the zone, then the time. */
  async set(query: Record<string, unknown>): Promise<Record<string, never>> {
    const rawTime = query['time'];
    const rawZone = query['time_zone'];
    if (rawTime === undefined && rawZone === undefined) {
      throw new BadRequestError('At least one parameter (time or time_zone) is required');
    }
    let zone: string | null = null;
    if (rawZone !== undefined) {
      const text = typeof rawZone === 'string' ? rawZone.trim() : '';
      if (!/^[+-]?\d{1,9}$/.test(text)) {
        throw new BadRequestError(
          'time_zone parameter must be a valid integer (minutes offset from UTC)',
        );
      }
      const minutes = Number(text);
      if (minutes < TIME_ZONE_MIN_MINUTES || minutes > TIME_ZONE_MAX_MINUTES) {
        throw new BadRequestError('time_zone parameter out of valid range (-840 to 840 minutes)');
      }
      zone = etcZoneFor(minutes);
      if (!this.zoneFileExists(zone)) {
        throw new BadRequestError(
          `time_zone parameter has no zone: ${zone} does not exist (UTC-12:00 to UTC+14:00)`,
        );
      }
    }
    let timeMs: number | null = null;
    if (rawTime !== undefined) {
      const text = typeof rawTime === 'string' ? rawTime.trim() : '';
      const seconds = /^\d{1,10}$/.test(text) ? Number(text) : Number.NaN;
      if (!(seconds >= 0 && seconds <= TIME_MAX_S)) {
        throw new BadRequestError(`time parameter must be unix seconds from 0 to ${TIME_MAX_S}`);
      }
      timeMs = seconds * 1000;
    }
    await this.serial(async () => {
      const clock = this.opts.clock;
      const previousZone = zone !== null ? await clock.zone() : null;
      if (zone !== null) await clock.setZone(zone);
      if (timeMs !== null) {
        try {
          await clock.setTime(timeMs);
        } catch (err) {
          // both or neither: the zone goes back when the clock refuses the time
          if (previousZone !== null && this.zoneFileExists(previousZone)) {
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
  listZones(region?: unknown): TimezoneListResult {
    let zones = this.cityZones();
    if (region !== undefined) {
      if (typeof region !== 'string' || region.length > ZONE_NAME_MAX) {
        throw new BadRequestError('region parameter must be a region name such as Europe');
      }
      const prefix = `${region.trim()}/`;
      zones = zones.filter((z) => z.toLowerCase().startsWith(prefix.toLowerCase()));
    }
    return { success: true, timezones: zones, count: zones.length };
  }

  /** `POST /api/system/timezone?timezone=Europe/Berlin`. */
  async setCityZone(raw: unknown): Promise<{ success: true; timezone_name: string }> {
    const name = typeof raw === 'string' ? raw.trim() : '';
    if (!this.isCityZone(name)) {
      throw new BadRequestError(
        `timezone parameter is not a known time zone: ${JSON.stringify(name.slice(0, ZONE_NAME_MAX))}`,
      );
    }
    await this.serial(() => this.opts.clock.setZone(name));
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
            this.zoneFileExists(z),
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
      this.zoneFileExists(name)
    );
  }

  private zoneFileExists(zone: string): boolean {
    const file = join(this.zoneinfo, zone);
    try {
      return existsSync(file) && statSync(file).isFile();
    } catch {
      return false;
    }
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn);
    this.chain = run.catch(() => undefined);
    return run;
  }
}

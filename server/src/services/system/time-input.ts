/**
 * The time routes' arguments (GL §5.5, 5.13): the route parses and validates the raw query here
 * and hands TimeService a typed change. Messages are GL's, unchanged on the wire. Sign rules:
 * time-service.ts.
 */
import { TIME_ZONE_MAX_MINUTES, TIME_ZONE_MIN_MINUTES } from '@kvm/protocol';
import { BadRequestError } from '../../errors';

/** GL's `time` bound: a signed 32-bit unix time. */
export const TIME_MAX_S = 2 ** 31 - 1;
/** Longest region or zone name we look at (the longest IANA name is 30 characters). */
export const ZONE_NAME_MAX = 64;

/** What `POST /api/system/time` asks: a zone, a time, or both (never neither). */
export interface TimeChange {
  /** The Etc zone to set, or null to keep the zone. */
  zone: string | null;
  /** Unix milliseconds to set, or null to keep the clock. */
  timeMs: number | null;
}

/** The Etc zone GL sets for `minutes` (JS sign): floor division, as Python's `//`. */
export function etcZoneFor(minutes: number): string {
  const hours = Math.floor(minutes / 60);
  return hours >= 0 ? `Etc/GMT+${hours}` : `Etc/GMT${hours}`;
}

/**
 * `POST /api/system/time?time=&time_zone=`, validated whole. `zoneExists` is the device's
 * zoneinfo (TimeService.hasZone): GL refuses a zone it has no file for (Etc/GMT+13) before it
 * looks at the time.
 */
export function parseTimeQuery(
  query: Record<string, unknown>,
  zoneExists: (zone: string) => boolean,
): TimeChange {
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
    if (!zoneExists(zone)) {
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
  return { zone, timeMs };
}

/** `timezone/list`'s `region` (Europe, America/Argentina), or undefined for every zone. */
export function parseRegion(raw: unknown): string | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || raw.length > ZONE_NAME_MAX) {
    throw new BadRequestError('region parameter must be a region name such as Europe');
  }
  return raw.trim();
}

/**
 * `POST /api/system/timezone`'s `timezone`, trimmed ('' when absent or repeated): whether it is
 * a city zone of this device is TimeService's to say (same message for both).
 */
export function parseZoneName(raw: unknown): string {
  return typeof raw === 'string' ? raw.trim() : '';
}

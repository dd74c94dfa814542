/**
 * Time zone helpers (SPEC 3 "System time info"; wire-protocol.md §5.5, 5.13). The device's
 * `time_zone` has the inverted sign of the UTC label: UTC+08:00 is sent as -480.
 */
import { UTC_OFFSET_MAX_HOURS, UTC_OFFSET_MIN_HOURS } from '@kvm/protocol/system';

/** Whole-hour offsets east of UTC, UTC-12:00 .. UTC+14:00. */
export const UTC_OFFSET_HOURS: readonly number[] = Array.from(
  { length: UTC_OFFSET_MAX_HOURS - UTC_OFFSET_MIN_HOURS + 1 },
  (_, i) => UTC_OFFSET_MIN_HOURS + i,
);

/** `UTC+08:00` for 480 minutes east, `UTC-03:30` for -210. */
export function utcOffsetLabel(minutesEast: number): string {
  const sign = minutesEast < 0 ? '-' : '+';
  const abs = Math.abs(Math.trunc(minutesEast));
  const hh = String(Math.floor(abs / 60)).padStart(2, '0');
  const mm = String(abs % 60).padStart(2, '0');
  return `UTC${sign}${hh}:${mm}`;
}

/** SPEC 3's inverted sign: the `time_zone` minutes for an offset of `hoursEast`. */
export function timeZoneMinutesFor(hoursEast: number): number {
  return hoursEast === 0 ? 0 : -hoursEast * 60;
}

/** The offset select's value for the zone in force: whole hours in range, else undefined. */
export function offsetHoursOf(minutesEast: number): number | undefined {
  if (minutesEast % 60 !== 0) return undefined;
  const hours = minutesEast / 60;
  return hours >= UTC_OFFSET_MIN_HOURS && hours <= UTC_OFFSET_MAX_HOURS ? hours : undefined;
}

/** `YYYY-MM-DD HH:mm:ss` of a moment in a zone `minutesEast` of UTC (the device's, not ours). */
export function formatDeviceTime(unixMs: number, minutesEast: number): string {
  const d = new Date(unixMs + minutesEast * 60_000);
  const p = (n: number) => String(n).padStart(2, '0');
  return (
    `${d.getUTCFullYear()}-${p(d.getUTCMonth() + 1)}-${p(d.getUTCDate())} ` +
    `${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())}`
  );
}

/** The device's clock now: its last reading plus the time elapsed here since. */
export function deviceNowMs(deviceTimeS: number, receivedAt: number, now: number): number {
  return deviceTimeS * 1000 + Math.max(0, now - receivedAt);
}

/**
 * GL's jiggler schedule (GL 1.9 `POST /api/hid/set_jiggler_schedule`): periods of the device's
 * local day in which the jiggler runs even with its switch off (GL ORs the two). Kept in
 * `<data_dir>/jiggler_schedule.json` as GL's `{"periods":[...]}`, written atomically; a file
 * that cannot be read as a schedule counts as none, as GL ignores it.
 */
import { join } from 'node:path';
import { JIGGLER_PERIODS_MAX, normalizeJigglerTime, type JigglerPeriod } from '@kvm/protocol';
import { ValidatorError } from '../../errors';
import { JsonFile } from '../../storage/json-store';
import type { ClockDriver } from '../../drivers/clock/types';
import { utcOffsetMinutes } from '../system/time-service';

/** A schedule file larger than this is not read (JIGGLER_PERIODS_MAX periods fit in 4 KiB). */
const FILE_MAX_BYTES = 64 * 1024;
/** How long the device's zone is taken as known: the schedule looks at the clock every second. */
const ZONE_TTL_MS = 60_000;

/** The value in GL's message (Python shows a missing one as `None`), clipped. */
function shown(value: unknown): string {
  const text =
    value === undefined || value === null
      ? 'None'
      : typeof value === 'string'
        ? value
        : (JSON.stringify(value) ?? String(value));
  return text.length > 64 ? `${text.slice(0, 64)}...` : text;
}

/** GL's validator: a list of `{start, end}` objects with `H:M` times; ours bounds the count. */
export function parseJigglerSchedule(raw: unknown): JigglerPeriod[] {
  if (!Array.isArray(raw)) {
    throw new ValidatorError(
      `The argument '${shown(raw)}' is not a valid jiggler schedule (list of periods)`,
    );
  }
  if (raw.length > JIGGLER_PERIODS_MAX) {
    throw new ValidatorError(
      `The argument 'periods' holds ${raw.length} periods, at most ${JIGGLER_PERIODS_MAX} are allowed`,
    );
  }
  return raw.map((item: unknown) => {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      throw new ValidatorError(
        `The argument '${shown(item)}' is not a valid jiggler period (object with start/end)`,
      );
    }
    const period = item as Record<string, unknown>;
    const time = (key: 'start' | 'end'): string => {
      const t = normalizeJigglerTime(period[key]);
      if (t === null) {
        throw new ValidatorError(
          `The argument '${shown(period[key])}' is not a valid jiggler time (HH:MM)`,
        );
      }
      return t;
    };
    return { start: time('start'), end: time('end') };
  });
}

export class JigglerSchedule {
  private periods: JigglerPeriod[] = [];

  private constructor(private readonly file: JsonFile<{ periods: JigglerPeriod[] }>) {}

  static async open(dataDir: string): Promise<JigglerSchedule> {
    const file = new JsonFile(
      join(dataDir, 'jiggler_schedule.json'),
      (raw) => ({
        periods: parseJigglerSchedule((raw as { periods?: unknown } | undefined)?.periods ?? []),
      }),
      { maxBytes: FILE_MAX_BYTES },
    );
    const schedule = new JigglerSchedule(file);
    try {
      schedule.periods = (await file.load()).periods;
    } catch {
      // GL: a schedule that cannot be read is no schedule.
      schedule.periods = [];
    }
    return schedule;
  }

  get(): JigglerPeriod[] {
    return this.periods.map((p) => ({ ...p }));
  }

  get empty(): boolean {
    return this.periods.length === 0;
  }

  /** Validates the whole list first, then stores it; nothing changes when it is refused. */
  async set(raw: unknown): Promise<JigglerPeriod[]> {
    const periods = parseJigglerSchedule(raw);
    await this.file.save({ periods });
    this.periods = periods;
    return this.get();
  }
}

/**
 * The minute of the device's local day (0-1439) by the device clock and zone (issue 11's clock
 * driver). The zone is read at most once a minute: on a systemd device it costs a command.
 */
export function deviceMinuteOfDay(clock: ClockDriver): () => Promise<number> {
  let zone: { name: string; at: number } | null = null;
  return async () => {
    const now = clock.now();
    if (!zone || Math.abs(now - zone.at) > ZONE_TTL_MS) {
      zone = { name: await clock.zone().catch(() => 'UTC'), at: now };
    }
    const offset = utcOffsetMinutes(zone.name, now) ?? 0;
    const minute = Math.floor(now / 60_000) + offset;
    return ((minute % 1440) + 1440) % 1440;
  };
}

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalClock } from '../../drivers/clock/local';
import { etcZoneFor, parseRegion, parseTimeQuery, parseZoneName } from './time-input';
import { glTimeZoneMinutes, TimeService, utcOffsetMinutes } from './time-service';

/** A change as the route makes it: the query parsed, then handed to the service. */
async function setParsed(time: TimeService, query: Record<string, unknown>) {
  return time.set(parseTimeQuery(query, (zone) => time.hasZone(zone)));
}

describe('time zone sign rules (GL §5.13)', () => {
  const jan = Date.UTC(2026, 0, 15);
  it('answers Etc zones with getTimezoneOffset sign, city zones with local - UTC', () => {
    const gl = (zone: string) => glTimeZoneMinutes(zone, utcOffsetMinutes(zone, jan)!);
    expect(gl('Etc/GMT-8')).toBe(-480);
    expect(gl('Etc/GMT+5')).toBe(300);
    expect(gl('Asia/Kolkata')).toBe(330);
    expect(gl('America/New_York')).toBe(-300);
    expect(Object.is(gl('UTC'), 0)).toBe(true);
    expect(Object.is(gl('Etc/GMT+0'), 0)).toBe(true);
    expect(utcOffsetMinutes('Asia/Kolkata', jan)).toBe(330);
    expect(utcOffsetMinutes('Etc/GMT-8', jan)).toBe(480);
    expect(utcOffsetMinutes('Europe/Berlin', Date.UTC(2026, 6, 1))).toBe(120);
    expect(utcOffsetMinutes('No/Such_Zone', jan)).toBeNull();
  });

  it('maps POST minutes to Etc zones with floor division', () => {
    expect(etcZoneFor(-480)).toBe('Etc/GMT-8');
    expect(etcZoneFor(300)).toBe('Etc/GMT+5');
    expect(etcZoneFor(0)).toBe('Etc/GMT+0');
    // half-hour zones are truncated as Python's // does
    expect(etcZoneFor(-330)).toBe('Etc/GMT-6');
    expect(etcZoneFor(330)).toBe('Etc/GMT+5');
    expect(etcZoneFor(-840)).toBe('Etc/GMT-14');
  });
});

describe('TimeService on the offset clock', () => {
  let root: string | undefined;
  afterEach(async () => {
    if (root) await rm(root, { recursive: true, force: true });
    root = undefined;
  });

  async function service(): Promise<{ time: TimeService; clock: LocalClock }> {
    root = await mkdtemp(join(tmpdir(), 'kvm-time-'));
    const clock = new LocalClock({ root, kind: 'offset' });
    await clock.init();
    return { time: new TimeService({ clock }), clock };
  }

  it('sets zone and time; GET reflects both; the host clock is untouched', async () => {
    const { time } = await service();
    const before = await time.get();
    expect(before).toMatchObject({
      success: true,
      timezone_name: 'UTC',
      time_zone: 0,
      clock: 'offset',
    });
    expect(await setParsed(time, { time_zone: '-480', time: '1000000000' })).toEqual({});
    const after = await time.get();
    expect(after.timezone_name).toBe('Etc/GMT-8');
    expect(after.time_zone).toBe(-480);
    expect(after.utc_offset_minutes).toBe(480);
    expect(after.time).toBeGreaterThanOrEqual(1_000_000_000);
    expect(after.time).toBeLessThan(1_000_000_000 + 60);
    expect(Math.abs(Date.now() / 1000 - before.time)).toBeLessThan(60);

    await time.setCityZone('Asia/Kolkata');
    expect(await time.get()).toMatchObject({
      timezone_name: 'Asia/Kolkata',
      time_zone: 330,
      utc_offset_minutes: 330,
    });
  });

  it('refuses bad input with GL messages and applies nothing', async () => {
    const { time, clock } = await service();
    await setParsed(time, { time_zone: '60' });
    const zone = await clock.zone();
    const now = clock.now();
    const refused: [Record<string, unknown>, RegExp][] = [
      [{}, /^At least one parameter \(time or time_zone\) is required$/],
      [{ time_zone: 'abc' }, /^time_zone parameter must be a valid integer/],
      [{ time_zone: '1.5', time: '5' }, /^time_zone parameter must be a valid integer/],
      [{ time_zone: '841' }, /^time_zone parameter out of valid range \(-840 to 840 minutes\)$/],
      [{ time_zone: '-841' }, /out of valid range/],
      // Etc/GMT+13 does not exist
      [{ time_zone: '780' }, /^time_zone parameter has no zone/],
      // a good zone with a bad time: neither is applied
      [{ time_zone: '-120', time: '-1' }, /^time parameter/],
      [{ time: '2147483648' }, /^time parameter/],
      [{ time: ['1', '2'] }, /^time parameter/],
    ];
    for (const [query, message] of refused) {
      await expect(setParsed(time, query), JSON.stringify(query)).rejects.toMatchObject({
        status: 400,
        message: expect.stringMatching(message),
      });
    }
    await expect(time.setCityZone('Etc/GMT-3')).rejects.toThrow(/^timezone parameter/);
    await expect(time.setCityZone('../../etc/passwd')).rejects.toThrow(/^timezone parameter/);
    await expect(time.setCityZone('Mars/Olympus')).rejects.toThrow(/^timezone parameter/);
    await expect(time.setCityZone(parseZoneName(undefined))).rejects.toThrow(/^timezone parameter/);
    expect(await clock.zone()).toBe(zone);
    expect(Math.abs(clock.now() - now)).toBeLessThan(5000);
  });

  it('lists city zones that exist here, by region', async () => {
    const { time } = await service();
    const all = time.listZones();
    expect(all.count).toBe(all.timezones.length);
    expect(all.count).toBeGreaterThan(300);
    expect(all.timezones).toContain('Europe/Berlin');
    // tzdata's current names, not Intl's old ones
    expect(all.timezones).toEqual(expect.arrayContaining(['Asia/Kolkata', 'Europe/Kyiv']));
    expect(all.timezones).not.toContain('Asia/Calcutta');
    expect(all.timezones.some((z) => z.startsWith('Etc/'))).toBe(false);
    const europe = time.listZones('Europe');
    expect(europe.timezones.length).toBeGreaterThan(30);
    expect(europe.timezones.every((z) => z.startsWith('Europe/'))).toBe(true);
    expect(time.listZones('Nowhere')).toEqual({ success: true, timezones: [], count: 0 });
    expect(() => time.listZones(parseRegion('x'.repeat(65)))).toThrow(/^region parameter/);
  });
});

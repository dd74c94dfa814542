/**
 * GL's jiggler schedule: validation, the overnight rule, the device's local minute, and the
 * jiggler running inside a period with its switch off (GL ORs the two).
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { jigglerScheduleContains, normalizeJigglerTime } from '@kvm/protocol';
import { TestbedHid } from '../../drivers/hid/testbed';
import type { TestbedReport } from '../../drivers/hid/testbed';
import type { ClockDriver } from '../../drivers/clock/types';
import { HidService } from './hid-service';
import { JigglerSchedule, deviceMinuteOfDay, parseJigglerSchedule } from './jiggler-schedule';

const dirs: string[] = [];
const services: HidService[] = [];
afterEach(async () => {
  services.splice(0).forEach((s) => s.dispose());
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

async function dir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'kvm-jiggler-'));
  dirs.push(d);
  return d;
}

describe('jiggler schedule rules', () => {
  it("normalises GL's H:M times and refuses the rest", () => {
    expect(normalizeJigglerTime('9:5')).toBe('09:05');
    expect(normalizeJigglerTime(' 23:59 ')).toBe('23:59');
    for (const bad of ['24:00', '12:60', '12', '12:00:00', 'a:b', '', null, 5, '-1:00']) {
      expect(normalizeJigglerTime(bad), String(bad)).toBeNull();
    }
  });

  it('counts the start in, the end out, and runs over midnight when the end is earlier', () => {
    const day = [{ start: '09:00', end: '18:00' }];
    expect(jigglerScheduleContains(day, 9 * 60)).toBe(true);
    expect(jigglerScheduleContains(day, 18 * 60)).toBe(false);
    const night = [{ start: '22:00', end: '06:00' }];
    expect(jigglerScheduleContains(night, 23 * 60)).toBe(true);
    expect(jigglerScheduleContains(night, 5 * 60 + 59)).toBe(true);
    expect(jigglerScheduleContains(night, 12 * 60)).toBe(false);
    expect(jigglerScheduleContains([{ start: '10:00', end: '10:00' }], 10 * 60)).toBe(false);
  });

  it('refuses a non-list, a non-object period and more than the bound', () => {
    expect(() => parseJigglerSchedule('x')).toThrow(/jiggler schedule/);
    expect(() => parseJigglerSchedule([null])).toThrow(/jiggler period/);
    expect(() => parseJigglerSchedule([{ start: '1:00', end: 'x' }])).toThrow(/HH:MM/);
    expect(() => parseJigglerSchedule(Array(49).fill({ start: '1:00', end: '2:00' }))).toThrow(
      /at most 48/,
    );
  });

  it('stores atomically in the data folder and reads a damaged file as no schedule', async () => {
    const d = await dir();
    const s = await JigglerSchedule.open(d);
    expect(s.get()).toEqual([]);
    await s.set([{ start: '1:00', end: '2:30' }]);
    expect(JSON.parse(await readFile(join(d, 'jiggler_schedule.json'), 'utf8'))).toEqual({
      periods: [{ start: '01:00', end: '02:30' }],
    });
    await expect(s.set([{ start: 'x', end: '1:00' }])).rejects.toThrow(/HH:MM/);
    expect(s.get()).toEqual([{ start: '01:00', end: '02:30' }]);
    expect((await JigglerSchedule.open(d)).get()).toEqual([{ start: '01:00', end: '02:30' }]);
    await writeFile(join(d, 'jiggler_schedule.json'), '{"periods":[{"start":"99:00"}]}');
    expect((await JigglerSchedule.open(d)).get()).toEqual([]);
  });

  it("reads the minute of the device's local day from its clock and zone", async () => {
    let zone = 'Asia/Kolkata';
    let zoneReads = 0;
    const clock = {
      now: () => Date.UTC(2026, 0, 1, 20, 0),
      zone: async () => {
        zoneReads += 1;
        return zone;
      },
    } as unknown as ClockDriver;
    const minute = deviceMinuteOfDay(clock);
    // 20:00 UTC is 01:30 the next day in India (+5:30)
    expect(await minute()).toBe(90);
    zone = 'America/New_York';
    // the zone is kept for a minute: a systemd device pays a command per read
    expect(await minute()).toBe(90);
    expect(zoneReads).toBe(1);
  });
});

describe('the jiggler with a schedule', () => {
  it('runs inside a period with its switch off, and stops outside it', async () => {
    const d = await dir();
    const schedule = await JigglerSchedule.open(d);
    let minute = 8 * 60;
    let now = 0;
    const driver = new TestbedHid(null);
    const reports: TestbedReport[] = [];
    driver.on('report', (r) => reports.push(r));
    const hid = new HidService({
      driver,
      schedule,
      localMinute: async () => minute,
      jigglerIntervalS: 5,
      now: () => now,
    });
    services.push(hid);
    await hid.start();
    expect(hid.getState().jiggler).toEqual({
      enabled: true,
      active: false,
      interval: 5,
      schedule: [],
    });
    const states: boolean[] = [];
    hid.on('state', (s) => states.push(s.jiggler.active));
    await hid.setJigglerSchedule([{ start: '07:00', end: '09:00' }]);
    expect(hid.getState().jiggler).toMatchObject({
      active: true,
      schedule: [{ start: '07:00', end: '09:00' }],
    });
    expect(states.at(-1)).toBe(true);
    now = 6000;
    await expect
      .poll(() => reports.filter((r) => r.kind === 'move').length, { timeout: 3000 })
      .toBeGreaterThan(0);
    // the clock leaves the period: the next check (every second) stops it
    minute = 9 * 60;
    await expect.poll(() => hid.getState().jiggler.active, { timeout: 3000 }).toBe(false);
    expect(states.at(-1)).toBe(false);
    // the switch alone still runs it (GL ORs them)
    await hid.setParams({ jiggler: true });
    expect(hid.getState().jiggler.active).toBe(true);
  });
});

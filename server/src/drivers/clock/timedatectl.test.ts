import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fail, fakeRunner } from '../../platform/nmcli/test-support';
import { LocalClock } from './local';
import {
  ClockCommandError,
  systemClock,
  systemdUtcTimestamp,
  TimedatectlClock,
} from './timedatectl';

const NTP_ON = 'Failed to set time: Automatic time synchronization is enabled';

describe('TimedatectlClock', () => {
  it('reads and sets the zone', async () => {
    const fake = fakeRunner((argv) =>
      argv[1] === 'show' ? 'Europe/Berlin\n' : argv[1] === 'set-timezone' ? '' : undefined,
    );
    const c = new TimedatectlClock({ runner: fake.run });
    expect(c.kind).toBe('system');
    expect(await c.zone()).toBe('Europe/Berlin');
    await c.setZone('Etc/GMT-8');
    expect(fake.lines()).toEqual([
      'timedatectl show -p Timezone --value',
      'timedatectl set-timezone Etc/GMT-8',
    ]);
  });

  it('sets the time as a UTC timestamp in systemd syntax', async () => {
    const fake = fakeRunner(() => '');
    await new TimedatectlClock({ runner: fake.run }).setTime(Date.UTC(2024, 0, 2, 3, 4, 5, 678));
    expect(fake.calls).toEqual([['timedatectl', 'set-time', '2024-01-02 03:04:05 UTC']]);
    expect(systemdUtcTimestamp(0)).toBe('1970-01-01 00:00:00 UTC');
  });

  it('turns network time off when it refuses, and retries while timedated still refuses', async () => {
    let refusals = 2; // the first try, then once more right after set-ntp false
    const fake = fakeRunner((argv) => {
      if (argv[1] === 'set-ntp') return '';
      if (argv[1] === 'set-time') return refusals-- > 0 ? fail(NTP_ON, 1) : '';
      return undefined;
    });
    await new TimedatectlClock({ runner: fake.run, retryDelayMs: 0 }).setTime(Date.UTC(2030, 5, 1));
    expect(fake.calls.map((c) => c[1])).toEqual(['set-time', 'set-ntp', 'set-time', 'set-time']);
    expect(fake.calls[1]).toEqual(['timedatectl', 'set-ntp', 'false']);
  });

  it('gives up after its retries and says what timedatectl said', async () => {
    const fake = fakeRunner((argv) => (argv[1] === 'set-ntp' ? '' : fail(NTP_ON, 1)));
    const c = new TimedatectlClock({ runner: fake.run, retryDelayMs: 0, retries: 3 });
    const err = await c.setTime(0).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ClockCommandError);
    expect((err as Error).message).toBe(`timedatectl set-time failed: ${NTP_ON}`);
    expect(fake.calls.filter((x) => x[1] === 'set-time')).toHaveLength(4);
  });

  it('other failures are not retried', async () => {
    const fake = fakeRunner(() =>
      fail('Failed to set time zone: Invalid or not installed time zone', 1),
    );
    const c = new TimedatectlClock({ runner: fake.run });
    await expect(c.setZone('Mars/Base')).rejects.toThrow(
      'timedatectl set-timezone failed: Failed to set time zone: Invalid or not installed time zone',
    );
    await expect(c.setTime(0)).rejects.toThrow(/set-time failed/);
    expect(fake.calls).toHaveLength(2);
  });
});

describe('systemClock', () => {
  const dir = mkdtempSync(join(tmpdir(), 'systemclock-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('uses timedatectl when systemd runs, else /etc/localtime under the root', () => {
    expect(systemClock(dir, { systemdMarker: dir })).toBeInstanceOf(TimedatectlClock);
    const local = systemClock(dir, { systemdMarker: join(dir, 'no-such') });
    expect(local).toBeInstanceOf(LocalClock);
    // built, never used: a system-kind clock would set this machine's clock
    expect(local.kind).toBe('system');
  });
});

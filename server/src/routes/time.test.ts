import { afterEach, describe, expect, it } from 'vitest';
import { AppPerTest, caller } from '../test-helpers';

const apps = new AppPerTest();
afterEach(() => apps.stop());

async function start() {
  const { app, token } = await apps.start();
  return caller(app, token, '/api/system/');
}

describe('/api/system/time and timezone', () => {
  it('reads and sets the device time and zone on the offset clock', async () => {
    const call = await start();
    let res = await call('GET', 'time');
    expect(res.statusCode).toBe(200);
    expect(res.json().result).toMatchObject({
      success: true,
      time_zone: 0,
      timezone_name: 'UTC',
      utc_offset_minutes: 0,
      clock: 'offset',
    });

    res = await call('POST', 'time?time=1700000000&time_zone=-480');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ ok: true, result: {} });
    const now = (await call('GET', 'time')).json().result;
    expect(now).toMatchObject({
      timezone_name: 'Etc/GMT-8',
      time_zone: -480,
      utc_offset_minutes: 480,
    });
    expect(now.time - 1_700_000_000).toBeGreaterThanOrEqual(0);
    expect(now.time - 1_700_000_000).toBeLessThan(60);

    res = await call('POST', 'time?time_zone=300');
    expect((await call('GET', 'time')).json().result).toMatchObject({
      timezone_name: 'Etc/GMT+5',
      time_zone: 300,
    });

    res = await call('POST', 'timezone?timezone=Asia/Kolkata');
    expect(res.json().result).toEqual({ success: true, timezone_name: 'Asia/Kolkata' });
    expect((await call('GET', 'time')).json().result).toMatchObject({
      timezone_name: 'Asia/Kolkata',
      time_zone: 330,
    });
  });

  it('answers GL errors verbatim and changes nothing', async () => {
    const call = await start();
    await call('POST', 'timezone?timezone=Europe/Berlin');
    const errors: [string, string][] = [
      ['time', 'At least one parameter (time or time_zone) is required'],
      [
        'time?time_zone=east',
        'time_zone parameter must be a valid integer (minutes offset from UTC)',
      ],
      ['time?time_zone=900', 'time_zone parameter out of valid range (-840 to 840 minutes)'],
      [
        'time?time_zone=-900&time=1',
        'time_zone parameter out of valid range (-840 to 840 minutes)',
      ],
    ];
    for (const [url, message] of errors) {
      const res = await call('POST', url);
      expect(res.statusCode, url).toBe(400);
      expect(res.json().result, url).toEqual({ error: 'BadRequestError', error_msg: message });
    }
    for (const [url, name] of [
      ['time?time=-5', 'time'],
      ['time?time=soon', 'time'],
      ['time?time_zone=780', 'time_zone'],
      ['time?time_zone=-60&time=99999999999', 'time'],
      ['timezone?timezone=Nowhere/City', 'timezone'],
      ['timezone', 'timezone'],
    ]) {
      const res = await call('POST', url!);
      expect(res.statusCode, url).toBe(400);
      expect(res.json().result.error_msg, url).toMatch(new RegExp(`^${name} parameter`));
    }
    const t = (await call('GET', 'time')).json().result;
    expect(t.timezone_name).toBe('Europe/Berlin');
    expect(Math.abs(t.time - Date.now() / 1000)).toBeLessThan(60);
  });

  it('lists city zones, by region', async () => {
    const call = await start();
    const all = (await call('GET', 'timezone/list')).json().result;
    expect(all.success).toBe(true);
    expect(all.count).toBe(all.timezones.length);
    expect(all.timezones).toContain('Asia/Tokyo');
    const europe = (await call('GET', 'timezone/list?region=Europe')).json().result;
    expect(europe.timezones).toContain('Europe/Berlin');
    expect(europe.timezones.every((z: string) => z.startsWith('Europe/'))).toBe(true);
  });
});

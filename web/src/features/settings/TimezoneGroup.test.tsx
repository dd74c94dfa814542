import { afterEach, describe, expect, it, vi } from 'vitest';
import { act } from 'react';
import { envelope, stubFetch } from '../../test/fetch-stub';
import { flush, type Rendered, renderPanel } from '../../test/render';
import { chooseOption } from '../system/test-utils';
import TimezoneGroup from './TimezoneGroup';

const TIME = {
  success: true,
  time: 1_700_000_000, // 2023-11-14 22:13:20 UTC
  time_zone: 0,
  timezone_name: 'Etc/UTC',
  utc_offset_minutes: 0,
  clock: 'offset',
};

describe('TimezoneGroup', () => {
  let view: Rendered | undefined;
  afterEach(() => {
    view?.unmount();
    view = undefined;
    vi.unstubAllGlobals();
    vi.useRealTimers();
  });

  it('shows the device time ticking and sends UTC+08:00 as time_zone=-480', async () => {
    let time = { ...TIME };
    const { requests } = stubFetch({
      '/api/system/time': (req) => {
        if (req.method === 'POST') {
          time = {
            ...time,
            time_zone: -480,
            timezone_name: 'Etc/GMT-8',
            utc_offset_minutes: 480,
          };
          return envelope(200, {});
        }
        return envelope(200, time);
      },
      '/api/system/timezone/list': () =>
        envelope(200, { success: true, timezones: ['Asia/Kolkata', 'Europe/Berlin'], count: 2 }),
    });
    view = await renderPanel(<TimezoneGroup />);
    const current = () => view?.byTestId('timezone-current')?.textContent ?? '';
    expect(current()).toContain('2023-11-14 22:13:2');
    expect(current()).toContain('Etc/UTC (UTC+00:00)');

    await chooseOption(view, 'timezone-offset', 'UTC+08:00');
    act(() => view?.byTestId('timezone-offset-apply')?.click());
    await flush();
    const post = requests.find((r) => r.method === 'POST');
    expect(post?.path).toBe('/api/system/time');
    expect(post?.query.get('time_zone')).toBe('-480');
    await vi.waitFor(() => expect(current()).toContain('Etc/GMT-8 (UTC+08:00)'));
    // the device's wall time: UTC + 8 h
    expect(current()).toContain('2023-11-15 06:13:');
  });

  it('applies a city zone with POST timezone', async () => {
    const { requests } = stubFetch({
      '/api/system/time': () => envelope(200, TIME),
      '/api/system/timezone': () => envelope(200, { success: true }),
      '/api/system/timezone/list': () =>
        envelope(200, { success: true, timezones: ['Asia/Kolkata', 'Europe/Berlin'], count: 2 }),
    });
    view = await renderPanel(<TimezoneGroup />);
    await chooseOption(view, 'timezone-city', 'Asia/Kolkata');
    act(() => view?.byTestId('timezone-city-apply')?.click());
    await flush();
    const post = requests.find((r) => r.method === 'POST');
    expect(post?.path).toBe('/api/system/timezone');
    expect(post?.query.get('timezone')).toBe('Asia/Kolkata');
  });

  it('ticks the device clock every second from its last reading', async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true });
    stubFetch({
      '/api/system/time': () => envelope(200, TIME),
      '/api/system/timezone/list': () => envelope(200, { success: true, timezones: [], count: 0 }),
    });
    view = await renderPanel(<TimezoneGroup />);
    const clock = () => view?.byTestId('timezone-current')?.textContent ?? '';
    expect(clock()).toMatch(/22:13:2[01]/);
    await act(async () => {
      await vi.advanceTimersByTimeAsync(3000);
    });
    expect(clock()).toMatch(/22:13:2[34]/);
  });
});

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { envelope, stubFetch } from '../../test/fetch-stub';
import { applyAtx, clickAtx, loadAtx, resetAtxForTests, useAtx } from './atx-store';

const OFF = {
  enabled: true,
  busy: false,
  leds: { power: false, hdd: false },
  power: 'off',
} as const;

beforeEach(() => resetAtxForTests());
afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

describe('atx store', () => {
  it('takes the event and keeps the LEDs a partial event leaves out', () => {
    applyAtx(OFF);
    applyAtx({ busy: true });
    expect(useAtx.getState().state).toEqual({ ...OFF, busy: true });
    applyAtx({ leds: { power: true } as never });
    expect(useAtx.getState().state?.leds).toEqual({ power: true, hdd: false });
    applyAtx(null);
    expect(useAtx.getState().state?.busy).toBe(true);
  });

  it('loads GET /api/atx', async () => {
    stubFetch({ '/api/atx': () => envelope(200, { ...OFF, enabled: false }) });
    await loadAtx();
    expect(useAtx.getState().state?.enabled).toBe(false);
  });

  it('clicks with the button and marks the press while it runs', async () => {
    let release: (() => void) | undefined;
    const { requests } = stubFetch({
      '/api/atx/click': () =>
        new Promise<Response>((resolve) => {
          release = () => resolve(envelope(200, {}));
        }),
    });
    const press = clickAtx('power_long');
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(useAtx.getState().pressing).toBe('power_long');
    expect(requests[0]?.method).toBe('POST');
    expect(requests[0]?.query.toString()).toBe('button=power_long');
    release?.();
    await press;
    expect(useAtx.getState().pressing).toBeNull();
  });

  it('rejects with the server error (busy) and clears the press', async () => {
    stubFetch({
      '/api/atx/click': () =>
        envelope(409, { error: 'AtxIsBusyError', error_msg: 'Performing another ATX operation' }),
    });
    await expect(clickAtx('reset')).rejects.toMatchObject({ status: 409, error: 'AtxIsBusyError' });
    expect(useAtx.getState().pressing).toBeNull();
  });
});

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { envelope, stubFetch, type RecordedRequest } from '../../test/fetch-stub';
import { resetConfigForTests, useConfig } from '../config/config-store';
import {
  QUALITY_POLL_COUNT,
  QUALITY_POLL_MS,
  changeStreamQuality,
  followEdidGop,
  parseNonNegativeNumber,
  qualityParams,
  resetEdid4kForTests,
  setStreamerParams,
  waitForStreamOnline,
} from './quality';
import { applyStreamer, resetStreamerForTests } from './streamer-store';

function streamerState(online: boolean) {
  return {
    params: {
      h264_bitrate: 2000,
      h264_gop: 30,
      desired_fps: 30,
      video_processing: 'quality_first',
    },
    streamer: {
      source: { online, resolution: { width: 1280, height: 720 } },
      h264: { online, bitrate: 0, gop: 30, fps: 30, profile_level_id: '42c01f' },
      hdmi: { signal: true },
    },
  };
}

/** A device whose stream comes back online at the given poll (0 = never). */
function device(
  onlineFromPoll: number,
  edidPreferred: { width: number; height: number } | null = null,
) {
  let polls = 0;
  let config: Record<string, unknown> = {};
  const stub = stubFetch({
    '/api/streamer': () => {
      polls += 1;
      return envelope(200, streamerState(onlineFromPoll > 0 && polls >= onlineFromPoll));
    },
    '/api/streamer/set_params': () => envelope(200, {}),
    '/api/upgrade/get_edid': () =>
      envelope(200, {
        edid: '',
        preset: null,
        preferred: edidPreferred && { ...edidPreferred, hz: 30 },
        applies: 'now',
        pending: false,
      }),
    '/api/system/get_config': () => envelope(200, { success: true, config }),
    '/api/system/set_config': (req: RecordedRequest) => {
      config = JSON.parse(req.body ?? '{}') as Record<string, unknown>;
      return envelope(200, { success: true, config });
    },
  });
  return { ...stub, polls: () => polls, config: () => config };
}

describe('quality presets', () => {
  it('maps the four levels to SPEC 3 bitrate and gop, halving the gop for 4K', () => {
    expect(qualityParams('LOW', false)).toEqual({ h264_bitrate: 500, h264_gop: 30 });
    expect(qualityParams('MEDIUM', false)).toEqual({ h264_bitrate: 2000, h264_gop: 30 });
    expect(qualityParams('HIGH', false)).toEqual({ h264_bitrate: 5000, h264_gop: 60 });
    expect(qualityParams('ULTRA_HIGH', false)).toEqual({ h264_bitrate: 8000, h264_gop: 60 });
    expect(qualityParams('ULTRA_HIGH', true)).toEqual({ h264_bitrate: 8000, h264_gop: 30 });
    expect(qualityParams('LOW')).toEqual({ h264_bitrate: 500, h264_gop: 30 }); // no EDID yet
  });

  it('accepts only non-negative finite numbers for custom values (SPEC 5)', () => {
    expect(parseNonNegativeNumber('0')).toBe(0);
    expect(parseNonNegativeNumber(' 1500 ')).toBe(1500);
    expect(parseNonNegativeNumber('12.5')).toBe(12.5);
    expect(parseNonNegativeNumber('1e3')).toBe(1000);
    // SPEC 5's numeric check: decimals only (Number() took 0x10 as 16 and 1e999 as Infinity).
    for (const bad of ['', ' ', '-1', 'abc', 'Infinity', 'NaN', '12px', '0x10', '0b11', '1e999']) {
      expect(parseNonNegativeNumber(bad), bad).toBeNull();
    }
  });
});

describe('quality change', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    resetConfigForTests();
    resetStreamerForTests();
    resetEdid4kForTests();
  });
  afterEach(() => {
    vi.useRealTimers();
    vi.unstubAllGlobals();
  });

  it('sets the preset, stores the level and waits until the stream is back', async () => {
    const dev = device(4);
    let done: boolean | undefined;
    void changeStreamQuality('HIGH').then((online) => (done = online));
    await vi.advanceTimersByTimeAsync(0);
    const setParams = dev.requests.find((r) => r.path === '/api/streamer/set_params');
    expect(setParams?.method).toBe('POST');
    expect(Object.fromEntries(setParams?.query ?? [])).toEqual({
      h264_bitrate: '5000',
      h264_gop: '60',
    });
    await vi.advanceTimersByTimeAsync(QUALITY_POLL_MS * 3);
    expect(done).toBeUndefined();
    expect(dev.polls()).toBe(3);
    await vi.advanceTimersByTimeAsync(QUALITY_POLL_MS);
    expect(dev.polls()).toBe(4);
    expect(done).toBe(true);
    expect(dev.config()['stream_quality']).toBe('HIGH');
    expect(useConfig.getState().config?.stream_quality).toBe('HIGH');
    expect(localStorage.getItem('kvm_stream_quality')).toBe('HIGH');
  });

  it('halves the gop while the device holds a 4K EDID (SPEC 3)', async () => {
    const dev = device(1, { width: 3840, height: 2160 });
    void changeStreamQuality('HIGH');
    await vi.advanceTimersByTimeAsync(0);
    const setParams = dev.requests.find((r) => r.path === '/api/streamer/set_params');
    expect(Object.fromEntries(setParams?.query ?? [])).toEqual({
      h264_bitrate: '5000',
      h264_gop: '30',
    });
    await vi.advanceTimersByTimeAsync(QUALITY_POLL_MS * 2);
  });

  it('re-sends the running preset with the gop halved when the EDID turns 4K, and back', async () => {
    const dev = device(1);
    useConfig.setState({ config: { stream_quality: 'HIGH' } } as never);
    applyStreamer({
      ...streamerState(true),
      params: { ...streamerState(true).params, h264_bitrate: 5000, h264_gop: 60 },
    } as never);
    await followEdidGop({ width: 3840, height: 2160, hz: 30 });
    let sent = dev.requests.filter((r) => r.path === '/api/streamer/set_params');
    expect(sent.map((r) => r.query.get('h264_gop'))).toEqual(['30']);
    await followEdidGop({ width: 3840, height: 2160, hz: 30 }); // no flip: nothing sent
    expect(dev.requests.filter((r) => r.path === '/api/streamer/set_params')).toHaveLength(1);
    // custom values running: left alone
    applyStreamer({
      ...streamerState(true),
      params: { ...streamerState(true).params, h264_bitrate: 1234, h264_gop: 30 },
    } as never);
    await followEdidGop({ width: 1920, height: 1080, hz: 60 });
    sent = dev.requests.filter((r) => r.path === '/api/streamer/set_params');
    expect(sent).toHaveLength(1);
  });

  it('gives up after 10 polls of 300 ms and carries on', async () => {
    const dev = device(0);
    let done: boolean | undefined;
    void waitForStreamOnline().then((online) => (done = online));
    await vi.advanceTimersByTimeAsync(QUALITY_POLL_COUNT * QUALITY_POLL_MS - 1);
    expect(done).toBeUndefined();
    expect(dev.polls()).toBe(QUALITY_POLL_COUNT - 1);
    await vi.advanceTimersByTimeAsync(1);
    expect(done).toBe(false);
    expect(dev.polls()).toBe(QUALITY_POLL_COUNT);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(dev.polls()).toBe(QUALITY_POLL_COUNT);
  });

  it('sends custom values with the bitrate and gop that run now', async () => {
    const dev = device(1);
    applyStreamer(streamerState(true) as never);
    await setStreamerParams({ desired_fps: 15 });
    const setParams = dev.requests.find((r) => r.path === '/api/streamer/set_params');
    expect(Object.fromEntries(setParams?.query ?? [])).toEqual({
      h264_bitrate: '2000',
      h264_gop: '30',
      desired_fps: '15',
    });
  });
});

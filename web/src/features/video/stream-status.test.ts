import { beforeEach, describe, expect, it } from 'vitest';
import { deepMerge } from '@kvm/protocol/merge';
import type { StreamerState } from '@kvm/protocol/streamer';
import { deriveStreamStatus, NO_SIGNAL_AFTER_MS, type StreamStatusInput } from './stream-status';
import { applyStreamer, resetStreamerForTests, sourceOnline, useStreamer } from './streamer-store';

const base: StreamStatusInput = {
  connectionLost: false,
  clientState: 'active',
  sourceOnline: true,
  signalLostAt: null,
  now: 100_000,
};

describe('deriveStreamStatus', () => {
  it('is active when the source is online and frames are decoded', () => {
    expect(deriveStreamStatus(base)).toBe('active');
    expect(deriveStreamStatus({ ...base, sourceOnline: null })).toBe('active');
  });

  it('is inactive without frames or with the source offline', () => {
    for (const clientState of ['idle', 'connecting', 'watching', 'error', 'stopped'] as const) {
      expect(deriveStreamStatus({ ...base, clientState })).toBe('inactive');
    }
    expect(deriveStreamStatus({ ...base, sourceOnline: false })).toBe('inactive');
  });

  it('says no HDMI signal only after 5 s without one, and only while active', () => {
    const lost = { ...base, signalLostAt: base.now - NO_SIGNAL_AFTER_MS + 1 };
    expect(deriveStreamStatus(lost)).toBe('active');
    expect(deriveStreamStatus({ ...lost, now: lost.now + 1 })).toBe('noSignal');
    expect(deriveStreamStatus({ ...lost, now: lost.now + 10_000, clientState: 'watching' })).toBe(
      'inactive',
    );
  });

  it('says re-connecting while the connection is lost, whatever else', () => {
    expect(deriveStreamStatus({ ...base, connectionLost: true })).toBe('reconnecting');
    expect(deriveStreamStatus({ ...base, connectionLost: true, clientState: 'error' })).toBe(
      'reconnecting',
    );
  });
});

function runtime(online: boolean, signal: boolean) {
  return {
    streamer: {
      source: {
        online,
        resolution: { width: 1280, height: 720 },
        captured_fps: 30,
        desired_fps: 30,
      },
      hdmi: { signal },
    },
  } as unknown as Partial<StreamerState>;
}

describe('streamer store', () => {
  beforeEach(() => resetStreamerForTests());

  it('merges partial events deeply and replaces arrays and nulls', () => {
    expect(deepMerge({ a: { b: 1, c: 2 }, l: [1, 2] }, { a: { c: 3 }, l: [9] })).toEqual({
      a: { b: 1, c: 3 },
      l: [9],
    });
    expect(deepMerge({ a: { b: 1 } }, { a: null })).toEqual({ a: null });
    applyStreamer(runtime(true, true));
    applyStreamer({ params: { h264_bitrate: 5000 } } as Partial<StreamerState>);
    const state = useStreamer.getState().state;
    expect(state?.streamer?.source.resolution).toEqual({ width: 1280, height: 720 });
    expect(state?.params.h264_bitrate).toBe(5000);
    expect(sourceOnline(state)).toBe(true);
    applyStreamer({ streamer: null });
    expect(sourceOnline(useStreamer.getState().state)).toBe(false);
    expect(sourceOnline(null)).toBeNull();
  });

  it('remembers when the HDMI signal went away, not when it was last reported gone', () => {
    applyStreamer(runtime(true, true), 1_000);
    expect(useStreamer.getState().signalLostAt).toBeNull();
    applyStreamer(runtime(true, false), 2_000);
    applyStreamer(runtime(true, false), 3_000);
    expect(useStreamer.getState().signalLostAt).toBe(2_000);
    applyStreamer(runtime(true, true), 4_000);
    expect(useStreamer.getState().signalLostAt).toBeNull();
  });
});

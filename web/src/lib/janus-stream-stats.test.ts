import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { JanusStreamStats, type JanusStatsHost } from './janus-stream-stats';
import {
  FIRST_FRAME_PROBE_MS,
  FIRST_FRAME_QUICK_PROBES,
  FIRST_FRAME_QUICK_PROBE_MS,
} from './janus-stream-timing';
import type { StreamState } from './stream-types';

/** A host whose peer reports `decoded.frames` decoded frames. */
function host(decoded: { frames: number }) {
  let state: StreamState = 'watching';
  const getStats = vi.fn(async () => {
    const report = new Map<string, unknown>();
    report.set('in', { type: 'inbound-rtp', kind: 'video', framesDecoded: decoded.frames });
    return report;
  });
  const h: JanusStatsHost = {
    peer: () => ({ getStats, createDataChannel: () => ({}) as never }),
    generation: () => 1,
    state: () => state,
    activate: vi.fn(() => {
      state = 'active';
    }),
    emitInfo: vi.fn(),
  };
  return { h, getStats };
}

describe('JanusStreamStats first-frame probe', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('sees the first decoded frame within one quick look, then stops looking', async () => {
    const decoded = { frames: 0 };
    const { h, getStats } = host(decoded);
    const stats = new JanusStreamStats(h);
    stats.startProbe();
    await vi.advanceTimersByTimeAsync(3 * FIRST_FRAME_QUICK_PROBE_MS);
    expect(getStats).toHaveBeenCalledTimes(3);
    expect(h.activate).not.toHaveBeenCalled();
    decoded.frames = 1;
    await vi.advanceTimersByTimeAsync(FIRST_FRAME_QUICK_PROBE_MS);
    expect(h.activate).toHaveBeenCalledTimes(1);
    const looks = getStats.mock.calls.length;
    await vi.advanceTimersByTimeAsync(10 * FIRST_FRAME_PROBE_MS);
    // no more first-frame looks (the info's own timer asks once a second, the type's at once)
    expect(getStats.mock.calls.length - looks).toBeLessThanOrEqual(1 + 2);
    stats.stopTimers();
  });

  it('slows to the steady cadence after the quick looks', async () => {
    const { h, getStats } = host({ frames: 0 });
    const stats = new JanusStreamStats(h);
    stats.startProbe();
    await vi.advanceTimersByTimeAsync(FIRST_FRAME_QUICK_PROBES * FIRST_FRAME_QUICK_PROBE_MS);
    expect(getStats).toHaveBeenCalledTimes(FIRST_FRAME_QUICK_PROBES);
    await vi.advanceTimersByTimeAsync(4 * FIRST_FRAME_PROBE_MS);
    expect(getStats).toHaveBeenCalledTimes(FIRST_FRAME_QUICK_PROBES + 4);
    stats.stopTimers();
    await vi.advanceTimersByTimeAsync(4 * FIRST_FRAME_PROBE_MS);
    expect(getStats).toHaveBeenCalledTimes(FIRST_FRAME_QUICK_PROBES + 4);
  });
});

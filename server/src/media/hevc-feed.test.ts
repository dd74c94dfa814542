import { afterEach, describe, expect, it, vi } from 'vitest';
import { SILENT_LOGGER as silent } from '../log';
import type { RawFrame } from '../drivers/video/types';
import { splitNalUnits } from './annexb';
import { ffmpegArgs } from './encoder';
import { hevcNalType } from './hevc';
import { HevcFeed, type HevcFeedHub } from './hevc-feed';
import type { AccessUnit } from './types';

/** A hub that hands raw frames to its raw subscribers when told to. */
class FrameHub implements HevcFeedHub {
  readonly raw = new Set<(frame: RawFrame) => void>();
  subscribeRaw(onFrame: (frame: RawFrame) => void): () => void {
    this.raw.add(onFrame);
    return () => this.raw.delete(onFrame);
  }
  getParams() {
    return { bitrateKbps: 500, gop: 30, fps: 30, processing: 'low_latency_first' as const };
  }
  frame(n: number): void {
    const data = Buffer.alloc(64 * 64 * 1.5, 0x80);
    data.fill(n * 20, 0, 64 * 8);
    for (const f of this.raw) {
      f({ width: 64, height: 64, format: 'yuv420p', data, capturedAt: performance.now() });
    }
  }
}

const feeds: HevcFeed[] = [];
afterEach(async () => {
  for (const f of feeds.splice(0)) await f.dispose();
});

describe('HevcFeed', () => {
  it('writes the ffmpeg command line for libx265 into NUT', () => {
    const args = ffmpegArgs({
      ...new FrameHub().getParams(),
      width: 64,
      height: 64,
      format: 'yuv420p',
      codec: 'h265',
    });
    expect(args.slice(args.indexOf('-c:v'), args.indexOf('-c:v') + 6)).toEqual([
      '-c:v',
      'libx265',
      '-preset',
      'ultrafast',
      '-tune',
      'zerolatency',
    ]);
    expect(args.slice(-3)).toEqual(['-f', 'nut', 'pipe:1']);
    expect(args.join(' ')).toContain('keyint=30:min-keyint=30:scenecut=0:repeat-headers=1');
  });

  it('encodes the raw frames of its viewers in H.265, capture only while watched', async () => {
    const hub = new FrameHub();
    const feed = new HevcFeed(hub, silent, { lingerMs: 0 });
    feeds.push(feed);
    expect(await feed.available()).toBe(true);
    expect(hub.raw.size).toBe(0);
    const units: AccessUnit[] = [];
    const stop = feed.subscribe((u) => units.push(u));
    expect(hub.raw.size).toBe(1);
    let n = 0;
    await vi.waitFor(
      () => {
        hub.frame(n++);
        expect(units.length).toBeGreaterThan(2);
      },
      { timeout: 20_000, interval: 50 },
    );
    expect(units[0]!.key).toBe(true);
    expect(splitNalUnits(units[0]!.data).map(hevcNalType).slice(0, 3)).toEqual([32, 33, 34]);
    // a second viewer starts on the cached key frame
    const late: AccessUnit[] = [];
    const stopLate = feed.subscribe((u) => late.push(u));
    expect(late[0]?.key).toBe(true);
    stopLate();
    stop();
    await vi.waitFor(() => expect(hub.raw.size).toBe(0));
    await vi.waitFor(() => expect(feed.encoderPid).toBeNull());
  });
});

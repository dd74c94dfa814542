import { afterEach, describe, expect, it } from 'vitest';
import type { RawFrame } from './types';
import { TestbedVideo } from './testbed';

let video: TestbedVideo | undefined;
afterEach(async () => {
  await video?.dispose();
  video = undefined;
});

/** Collects frames until `count` arrived. */
async function frames(v: TestbedVideo, count: number, onFrame: (f: RawFrame) => void) {
  const got: RawFrame[] = [];
  await v.startCapture((f) => {
    got.push(f);
    onFrame(f);
  }, 120);
  await expect.poll(() => got.length, { timeout: 5000 }).toBeGreaterThanOrEqual(count);
  await v.stopCapture();
  return got;
}

describe('testbed video frame buffers', () => {
  it('reuses a buffer the consumer released, each frame a copy of the picture', async () => {
    video = new TestbedVideo({ width: 64, height: 64 });
    await video.init();
    const got = await frames(video, 4, (f) => {
      expect(f.data.equals(video!.picture.frame)).toBe(true);
      f.release?.();
      // a second release must not lend one buffer twice
      f.release?.();
    });
    const buffers = new Set(got.map((f) => f.data.buffer));
    expect(buffers.size).toBe(1);
  });

  it('never hands out a buffer still lent', async () => {
    video = new TestbedVideo({ width: 64, height: 64 });
    await video.init();
    const got = await frames(video, 4, () => undefined);
    expect(new Set(got.map((f) => f.data)).size).toBe(got.length);
  });
});

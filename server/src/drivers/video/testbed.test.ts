import { afterEach, describe, expect, it } from 'vitest';
import type { RawFrame } from './types';
import { FRAME_BUFFERS, LENT_GIVE_UP_MS, TestbedVideo } from './testbed';

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

  it('lends at most FRAME_BUFFERS buffers, skips frames while all are out and says so', async () => {
    video = new TestbedVideo({ width: 64, height: 64 });
    await video.init();
    const got: RawFrame[] = [];
    await video.startCapture((f) => got.push(f), 120);
    await expect.poll(() => got.length, { timeout: 5000 }).toBe(FRAME_BUFFERS);
    expect(new Set(got.map((f) => f.data)).size).toBe(FRAME_BUFFERS);
    expect(got.every((f) => f.skipped === undefined)).toBe(true);
    // frames come every 8 ms: some are skipped while all buffers are lent
    await new Promise((r) => setTimeout(r, 100));
    expect(got.length).toBe(FRAME_BUFFERS);
    expect(video.buffersLent).toBe(FRAME_BUFFERS);
    got[1]!.release?.();
    await expect.poll(() => got.length, { timeout: 5000 }).toBe(FRAME_BUFFERS + 1);
    const next = got[FRAME_BUFFERS]!;
    expect(next.data).toBe(got[1]!.data);
    expect(next.skipped).toBeGreaterThan(3);
  });

  it('gives a buffer never handed back up after LENT_GIVE_UP_MS: the picture goes on', async () => {
    video = new TestbedVideo({ width: 64, height: 64 });
    await video.init();
    const started = performance.now();
    const got: RawFrame[] = [];
    let fourthAt = 0;
    await video.startCapture((f) => {
      got.push(f);
      if (got.length === FRAME_BUFFERS + 1) fourthAt = performance.now();
    }, 120);
    await expect
      .poll(() => got.length, { timeout: LENT_GIVE_UP_MS + 5000 })
      .toBeGreaterThan(FRAME_BUFFERS);
    expect(fourthAt - started).toBeGreaterThanOrEqual(LENT_GIVE_UP_MS);
    expect(got[FRAME_BUFFERS]!.skipped).toBeGreaterThan(0);
    // a new buffer, not one still lent
    expect(got.slice(0, FRAME_BUFFERS).map((f) => f.data)).not.toContain(got[FRAME_BUFFERS]!.data);
  });
});

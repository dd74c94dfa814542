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
  it('lends the picture itself to a consumer that hands each frame back in time', async () => {
    video = new TestbedVideo({ width: 64, height: 64 });
    await video.init();
    const got = await frames(video, 4, (f) => {
      expect(f.data).toBe(video!.picture.frame);
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
    const wasPicture: boolean[] = [];
    await video.startCapture((f) => {
      got.push(f);
      wasPicture.push(f.data === video!.picture.frame);
    }, 120);
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
    // the picture drew on in a buffer of its own meanwhile, and lends that one now
    expect(got.slice(0, FRAME_BUFFERS).map((f) => f.data)).not.toContain(next.data);
    expect(wasPicture.every(Boolean)).toBe(true);
    expect(next.skipped).toBeGreaterThan(3);
    // the lent three and the picture's own: nothing else was made
    expect(new Set(got.map((f) => f.data)).size).toBe(FRAME_BUFFERS + 1);
  });

  it('never changes a frame a consumer still holds, however long the picture draws on', async () => {
    video = new TestbedVideo({ width: 640, height: 480 });
    await video.init();
    const held: { frame: RawFrame; copy: Buffer }[] = [];
    let count = 0;
    await video.startCapture((f) => {
      count += 1;
      // hold every third frame, hand the rest back at once
      if (count % 3 === 1 && held.length < 2) held.push({ frame: f, copy: Buffer.from(f.data) });
      else f.release?.();
    }, 120);
    await expect.poll(() => count, { timeout: 5000 }).toBeGreaterThan(20);
    expect(held).toHaveLength(2);
    // typed text (the HID draws on the same picture) does not reach a held frame either
    video.picture.typeText('HELD', performance.now());
    // the frame number changed on every frame since: the picture is not what is held
    expect(video.picture.frame.equals(held[0]!.copy)).toBe(false);
    for (const h of held) expect(h.frame.data.equals(h.copy)).toBe(true);
    for (const h of held) h.frame.release?.();
    await expect.poll(() => video!.buffersLent, { timeout: 5000 }).toBeLessThanOrEqual(1);
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

import { EDID_PRESETS, edidPreferredMode, parseEdidHex } from '@kvm/protocol';
import { describe, expect, it } from 'vitest';
import type { RawFrame } from '../video/types';
import { TestbedDisplay } from './testbed';
import { TestbedVideo } from '../video/testbed';

const modeOf = (key: string) => {
  const bytes = parseEdidHex(EDID_PRESETS.find((p) => p.key === key)!.content)!;
  return { bytes: Buffer.from(bytes), mode: edidPreferredMode(bytes)! };
};

describe('TestbedDisplay', () => {
  it('the test screen takes the EDID mode at once, frames follow', async () => {
    const video = new TestbedVideo({ width: 640, height: 480 });
    const display = new TestbedDisplay(video);
    await video.init();
    const frames: RawFrame[] = [];
    await video.startCapture((f) => {
      frames.push(f);
      f.release?.();
    }, 60);
    try {
      const { bytes, mode } = modeOf('E1920x1080');
      await display.apply(bytes, mode);
      expect(display.pending()).toBe(false);
      expect(display.current()).toEqual({ width: 1920, height: 1080, hz: 60 });
      expect(video.getState()).toMatchObject({ width: 1920, height: 1080 });
      await expect
        .poll(() => frames.at(-1) && `${frames.at(-1)!.width}x${frames.at(-1)!.height}`)
        .toBe('1920x1080');
      const last = frames.at(-1)!;
      expect(last.data.length).toBe((1920 * 1080 * 3) / 2);
    } finally {
      await video.dispose();
    }
  });

  it('keeps its size for a mode the picture cannot take', async () => {
    const video = new TestbedVideo({ width: 640, height: 480 });
    const display = new TestbedDisplay(video);
    const { bytes } = modeOf('E1920x1080');
    await display.apply(bytes, { width: 1366, height: 768, hz: 60 });
    expect(display.current()).toMatchObject({ width: 640, height: 480 });
    expect(display.held()).not.toBeNull();
  });
});

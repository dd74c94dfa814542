/**
 * The agent's `snapshot` command for the fleet's wall: scaled into the asked box by the
 * streamer's preview (real ffmpeg), quality lowered step by step over the byte limit, the
 * refusals (`bad_args`, `unavailable`, `too_large`) and the no-signal placeholder's `online`.
 */
import { describe, expect, it } from 'vitest';
import jpegJs from 'jpeg-js';
import { WALL_MAX_HEIGHT, WALL_MAX_WIDTH, WALL_SNAPSHOT_QUALITY } from '@kvm/protocol';
import { jpegSize, makePreview } from '../../media/jpeg';
import { AgentCommandError } from './agent';
import { qualitySteps, wallSnapshot, type CloudSnapshotSource } from './snapshot';

/** A noisy picture (JPEG compresses it badly: quality changes its size a lot). */
function noise(width: number, height: number, seed = 1): Buffer {
  const data = Buffer.alloc(width * height * 4);
  let x = seed;
  for (let i = 0; i < data.length; i += 4) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    data[i] = x & 0xff;
    data[i + 1] = (x >> 8) & 0xff;
    data[i + 2] = (x >> 16) & 0xff;
    data[i + 3] = 255;
  }
  return Buffer.from(jpegJs.encode({ data, width, height }, 90).data);
}

const PICTURE = noise(960, 540);

function source(
  snap: { data: Buffer; width: number; height: number; online: boolean } | null,
  calls: number[] = [],
): CloudSnapshotSource {
  return {
    snapshot: async () => snap,
    preview: (jpeg, box, quality) => {
      calls.push(quality);
      return makePreview('ffmpeg', jpeg, box, quality);
    },
  };
}

const live = { data: PICTURE, width: 960, height: 540, online: true };

async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    if (e instanceof AgentCommandError) return e.code;
    throw e;
  }
  throw new Error('expected a refusal');
}

describe('wallSnapshot', () => {
  it('scales into the default box (WALL_MAX_*) at the default quality', async () => {
    const calls: number[] = [];
    const a = await wallSnapshot(source(live, calls), {});
    const jpeg = Buffer.from(a.jpeg, 'base64');
    expect(jpegSize(jpeg)).toEqual({ width: WALL_MAX_WIDTH, height: WALL_MAX_HEIGHT });
    expect(a).toMatchObject({ type: 'image/jpeg', width: 480, height: 270, online: true });
    expect(calls).toEqual([WALL_SNAPSHOT_QUALITY]);
  });

  it('keeps the aspect inside a smaller box', async () => {
    const a = await wallSnapshot(source(live), { max_width: 160, max_height: 160, quality: 50 });
    expect(jpegSize(Buffer.from(a.jpeg, 'base64'))).toEqual({ width: 160, height: 90 });
    expect(a.quality).toBe(50);
  });

  it('lowers the quality step by step when over the byte limit, then refuses', async () => {
    const full = await wallSnapshot(source(live), { quality: 95 });
    const size95 = Buffer.from(full.jpeg, 'base64').length;
    const calls: number[] = [];
    const lower = await wallSnapshot(source(live, calls), { quality: 95 }, size95 - 1);
    expect(calls.length).toBeGreaterThan(1);
    expect(lower.quality).toBeLessThan(95);
    expect(Buffer.from(lower.jpeg, 'base64').length).toBeLessThan(size95);
    expect(calls).toEqual(qualitySteps(95).slice(0, calls.length));

    const tried: number[] = [];
    expect(await refusal(wallSnapshot(source(live, tried), { quality: 95 }, 500))).toBe(
      'too_large',
    );
    expect(tried).toEqual(qualitySteps(95));
    expect(tried.at(-1)).toBe(5);
  });

  it('refuses arguments out of bounds before taking a picture', async () => {
    let taken = 0;
    const src: CloudSnapshotSource = {
      snapshot: async () => {
        taken += 1;
        return live;
      },
      preview: async (j) => j,
    };
    for (const args of [
      { max_width: WALL_MAX_WIDTH + 1 },
      { max_height: 0 },
      { quality: 0 },
      { quality: 101 },
      { quality: '60' },
      { max_width: 10.5 },
    ]) {
      expect(await refusal(wallSnapshot(src, args))).toBe('bad_args');
    }
    expect(taken).toBe(0);
  });

  it('no picture is `unavailable`; the no-signal placeholder says online: false', async () => {
    expect(await refusal(wallSnapshot(source(null), {}))).toBe('unavailable');
    expect(await refusal(wallSnapshot(null, {}))).toBe('unavailable');
    const placeholder = { data: noise(320, 180, 7), width: 320, height: 180, online: false };
    const a = await wallSnapshot(source(placeholder), {});
    expect(a.online).toBe(false);
    // smaller than the box: not enlarged
    expect(jpegSize(Buffer.from(a.jpeg, 'base64'))).toEqual({ width: 320, height: 180 });
  });
});

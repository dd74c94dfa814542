import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RawFrame, VideoSourceState } from './types';
import { QemuMachine } from '../../platform/qemu/machine';
import {
  ensureGuestImage,
  processesMentioning,
  readSerial,
  until,
} from '../../platform/qemu/test-support';
import { QemuVideo } from './qemu';

let dir: string;
let machine: QemuMachine | null = null;
let video: QemuVideo | null = null;

beforeAll(async () => {
  ensureGuestImage();
  dir = await mkdtemp(join(tmpdir(), 'kvm-video-'));
}, 120_000);
afterAll(async () => {
  await video?.dispose();
  await machine?.dispose();
  await rm(dir, { recursive: true, force: true });
});

/** Share of pixels in rows [y0, y1) that are not black. */
function litShare(frame: RawFrame, y0: number, y1: number): number {
  let lit = 0;
  for (let y = y0; y < y1; y++) {
    for (let x = 0; x < frame.width; x++) {
      const i = (y * frame.width + x) * 4;
      if ((frame.data[i] ?? 0) + (frame.data[i + 1] ?? 0) + (frame.data[i + 2] ?? 0) > 96) lit++;
    }
  }
  return lit / ((y1 - y0) * frame.width);
}

describe('QemuVideo', () => {
  it('follows the guest from BIOS text mode to its 1024x768 console, frames and signal', async () => {
    const m = new QemuMachine({ runDir: join(dir, 'run') });
    machine = m;
    const v = new QemuVideo(m);
    video = v;
    const sizes: string[] = [];
    const states: VideoSourceState[] = [];
    v.onState((s) => {
      states.push(s);
      const size = `${s.width}x${s.height}`;
      if (s.online && sizes.at(-1) !== size) sizes.push(size);
    });
    const frames: RawFrame[] = [];
    await v.init();
    await v.startCapture((f) => frames.push(f), 30);
    await m.init();
    await until('RFB online', () => v.getState().online, 10_000);

    // BIOS text mode first, then the guest's framebuffer console.
    await until(
      '1024x768',
      () => v.getState().width === 1024 && v.getState().height === 768,
      30_000,
    );
    expect(sizes.length).toBeGreaterThan(1);
    expect(sizes).toContain('720x400');
    expect(sizes.at(-1)).toBe('1024x768');

    await until(
      'guest ready',
      async () => (await readSerial(m.paths.serial)).includes('guest ready'),
      20_000,
    );
    // The banner and prompt in the top rows: not black. The bottom of the screen: black.
    const prompt = await until(
      'the prompt on screen',
      () => {
        const f = frames.at(-1);
        return f && f.width === 1024 && litShare(f, 0, 128) > 0.01 ? f : null;
      },
      10_000,
    );
    expect(prompt.format).toBe('bgr0');
    expect(prompt.data.length).toBe(1024 * 768 * 4);
    expect(litShare(prompt, 640, 768)).toBe(0);
    expect(v.getState()).toEqual({ online: true, signal: true, width: 1024, height: 768 });

    // A still screen still gets a frame a second (repeats stamped now, in order).
    const before = frames.length;
    await until('two idle frames', () => frames.length >= before + 2, 5000);
    const last = frames.slice(-3).map((f) => f.capturedAt);
    expect([...last].sort((a, b) => a - b)).toEqual(last);

    // Signal follows the run state, not the (frozen) picture; no frames without signal.
    await m.command('stop');
    await until('no signal', () => !v.getState().signal);
    expect(v.getState().online).toBe(true);
    const whilePaused = frames.length;
    await m.command('cont');
    await until('signal', () => v.getState().signal);
    expect(frames.length - whilePaused).toBeLessThanOrEqual(1);

    // Capture can stop and restart; a QEMU restart reconnects VNC.
    await v.stopCapture();
    const stopped = frames.length;
    // a consumer that gives each frame back at once: the next frames reuse those buffers
    const lent: Buffer[] = [];
    await v.startCapture((f) => {
      frames.push({ ...f, data: Buffer.from(f.data) });
      lent.push(f.data);
      f.release?.();
    }, 30);
    await until(
      'three frames after restart of capture',
      () => frames.length >= stopped + 3,
      10_000,
    );
    expect(new Set(lent).size).toBeLessThan(lent.length);
    expect(frames.at(-1)?.data.length).toBe(1024 * 768 * 4);
    expect(litShare(frames.at(-1)!, 640, 768)).toBe(0);
    process.kill(m.pid as number, 'SIGKILL');
    await until('offline after the crash', () => !v.getState().online, 5000);
    await until('online again', () => v.getState().online, 15_000);

    await v.dispose();
    video = null;
    await m.dispose();
    machine = null;
    expect(await processesMentioning(m.paths.qmp)).toEqual([]);
    expect(states.at(-1)).toMatchObject({ online: false, signal: false });
  }, 60_000);
});

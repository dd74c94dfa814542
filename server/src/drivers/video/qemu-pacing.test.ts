import { EventEmitter } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { QemuMachine } from '../../platform/qemu/machine';
import { RfbClient } from '../../platform/qemu/rfb';
import { QemuVideo } from './qemu';
import type { RawFrame } from './types';

/** The parts of an RFB connection QemuVideo uses: updates are emitted by the test. */
class FakeRfb extends EventEmitter {
  width = 64;
  height = 48;
  framebuffer = Buffer.alloc(64 * 48 * 4);
  requestUpdate = vi.fn();
  wakeRefresh = vi.fn();
  close = vi.fn();
}

/** A running QEMU whose VNC socket is the fake above. */
function fakeMachine(): QemuMachine {
  return Object.assign(new EventEmitter(), {
    qmp: {},
    power: 'running',
    paths: { vnc: '/nonexistent/vnc.sock' },
  }) as unknown as QemuMachine;
}

let rfb: FakeRfb;
let video: QemuVideo;
/** Each frame's delivery time and the capture time it carries (fake ms). */
let frames: { at: number; capturedAt: number }[];

beforeEach(async () => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
  rfb = new FakeRfb();
  vi.spyOn(RfbClient, 'connect').mockResolvedValue(rfb as unknown as RfbClient);
  video = new QemuVideo(fakeMachine());
  await video.init();
  await vi.waitFor(() => expect(RfbClient.connect).toHaveBeenCalled());
  await Promise.resolve(); // the connect's then: attached
  frames = [];
  // 60 fps: a frame interval of 16.7 ms, below FOLLOW_UP_MS (20)
  await video.startCapture((f: RawFrame) => {
    frames.push({ at: performance.now(), capturedAt: f.capturedAt });
    f.release?.(); // the encoder keeps up
  }, 60);
  await vi.advanceTimersByTimeAsync(2000); // the first picture and an idle repeat or two
  await vi.advanceTimersByTimeAsync(100); // the frame interval since the last one has passed
  frames = [];
});

afterEach(async () => {
  await video.dispose();
  vi.useRealTimers();
  vi.restoreAllMocks();
});

/** The frames after a screen update at `now`, over the next `ms`. */
async function afterUpdate(ms: number): Promise<number[]> {
  const t0 = performance.now();
  rfb.emit('update', t0);
  await vi.advanceTimersByTimeAsync(ms);
  return frames.map((f) => Math.round(f.at - t0));
}

describe('QemuVideo pacing', () => {
  it('follows a change that answers input with six repeats, the first after 35 ms, then 20 ms apart at 60 fps', async () => {
    video.wakeRefresh();
    expect(rfb.wakeRefresh).toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(30);
    const times = await afterUpdate(500);
    expect(times).toEqual([0, 35, 55, 75, 95, 115, 135]);
    // the change's frame is dated by its update; the repeats by their own delivery
    expect(frames[0]!.capturedAt).toBe(frames[0]!.at);
  });

  it('wakes QEMU at the input and then once for each refresh QEMU allows (30 ms apart)', async () => {
    const t0 = performance.now();
    const wakes: number[] = [];
    rfb.wakeRefresh.mockImplementation(() => wakes.push(Math.round(performance.now() - t0)));
    video.wakeRefresh();
    await vi.advanceTimersByTimeAsync(10);
    video.wakeRefresh(); // a second key within the window: no new wake, no second schedule
    await vi.advanceTimersByTimeAsync(300);
    expect(wakes).toEqual([0, 30, 60, 90, 120, 160]);
  });

  it('follows a change without input (a blinking cursor) with one repeat only', async () => {
    const times = await afterUpdate(500);
    expect(times).toEqual([0, 35]);
    // input more than a second before the change does not count
    video.wakeRefresh();
    await vi.advanceTimersByTimeAsync(1500);
    frames = [];
    expect(await afterUpdate(500)).toEqual([0, 35]);
  });

  it('starts the repeats over with a newer change, and keeps a still screen at one a second', async () => {
    video.wakeRefresh();
    const t0 = performance.now();
    rfb.emit('update', t0);
    await vi.advanceTimersByTimeAsync(40); // its first repeat out, at 35
    rfb.emit('update', performance.now());
    await vi.advanceTimersByTimeAsync(500);
    const times = frames.map((f) => Math.round(f.at - t0));
    // the newer change goes out at once, 5 ms after the repeat (a repeat leaves a frame in the
    // pace for it), then six repeats of it: 35 ms after it, then 20 ms apart
    expect(times).toEqual([0, 35, 40, 75, 95, 115, 135, 155, 175]);
    frames = [];
    await vi.advanceTimersByTimeAsync(3000);
    expect(frames.length).toBeGreaterThanOrEqual(2);
    expect(frames.length).toBeLessThanOrEqual(3);
  });

  it('lets a change follow another at once, then paces to the frame rate', async () => {
    // the guest's clear in two updates 3 ms apart, then a third 3 ms later
    const t0 = performance.now();
    rfb.emit('update', t0);
    await vi.advanceTimersByTimeAsync(3);
    rfb.emit('update', performance.now());
    await vi.advanceTimersByTimeAsync(3);
    rfb.emit('update', performance.now());
    await vi.advanceTimersByTimeAsync(200);
    const times = frames.map((f) => Math.round(f.at - t0));
    // the third waits until the pace has a frame again: about 1/60 s after the first (the
    // timers count whole ms)
    expect(times.slice(0, 2)).toEqual([0, 3]);
    expect(times[2]).toBeGreaterThanOrEqual(16);
    expect(times[2]).toBeLessThanOrEqual(17);
    // the third change carries the capture time of its update (6), not its delivery's
    expect(Math.round(frames[2]!.capturedAt - t0)).toBe(6);
  });

  it('holds no more than the frame rate and its burst over a second of changes', async () => {
    const t0 = performance.now();
    // an update every 5 ms (faster than QEMU refreshes), for a second
    for (let t = 0; t < 1000; t += 5) {
      rfb.emit('update', performance.now());
      await vi.advanceTimersByTimeAsync(5);
    }
    const inSecond = frames.filter((f) => f.at - t0 < 1000).length;
    // 60 a second and the burst of 2; whole-ms timers make each wait up to 1 ms short
    expect(inSecond).toBeGreaterThanOrEqual(58);
    expect(inSecond).toBeLessThanOrEqual(65);
  });
});

/**
 * The V4L2 capture driver on a fake receiver (platform/v4l2/fake.test-support.ts answers as
 * vivid did in the device VM). The device node is a temporary file, so its unplug is a delete
 * the driver's folder watch sees.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { EDID_PRESETS, parseEdidHex } from '@kvm/protocol';
import { V4l2Ctl } from '../../platform/v4l2/ctl';
import { FakeReceiver, T1080, T720 } from '../../platform/v4l2/fake.test-support';
import { VIVID_EDID_HEX } from '../../platform/v4l2/recorded.test-support';
import { EdidService } from '../../services/system/edid-service';
import { V4l2Display } from '../display/v4l2';
import type { FfmpegInput, VideoSourceState } from './types';
import { V4l2Video } from './v4l2';

const poll = { timeout: 5_000, interval: 10 };
const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

async function setup(
  opts: { watch?: boolean; prepare?: (f: FakeReceiver) => void; busyTimeoutMs?: number } = {},
) {
  const dir = await mkdtemp(join(tmpdir(), 'kvm-v4l2-'));
  const device = join(dir, 'video0');
  await writeFile(device, '');
  const fake = new FakeReceiver();
  opts.prepare?.(fake);
  const ctl = new V4l2Ctl({ device, run: fake.run, spawnWait: fake.spawnWait });
  const video = new V4l2Video({
    ctl,
    watch: opts.watch ?? true,
    busyRetryMs: 5,
    ...(opts.busyTimeoutMs !== undefined ? { busyTimeoutMs: opts.busyTimeoutMs } : {}),
  });
  const states: VideoSourceState[] = [];
  video.onState((s) => states.push(s));
  cleanup.push(async () => {
    await video.dispose();
    await rm(dir, { recursive: true, force: true });
  });
  await video.init();
  return { fake, video, ctl, device, states };
}

const input = (v: V4l2Video): FfmpegInput => v.input(30) as FfmpegInput;

describe('V4l2Video (an HDMI receiver)', () => {
  it('reads the timings at start, sets them, and gives the encoder the device at that size', async () => {
    const { fake, video, device } = await setup();
    expect(video.getState()).toMatchObject({
      online: true,
      signal: true,
      width: 1280,
      height: 720,
    });
    expect(video.getState().capture).toMatchObject({
      kind: 'dv',
      status: 'signal',
      hz: 60,
      format: 'yuyv422',
      error: null,
    });
    expect(input(video)).toEqual({
      kind: 'ffmpeg-input',
      args: ['-f', 'v4l2', '-input_format', 'yuyv422', '-video_size', '1280x720', '-i', device],
      width: 1280,
      height: 720,
      fps: 60,
    });
    expect(fake.calls.some((c) => c[2] === '--set-dv-bt-timings' && c[3] === 'query')).toBe(true);
    // one blocking wait for the next source change, no timer
    await vi.waitFor(() => expect(fake.waiting).toBe(1), poll);
  });

  it('says no signal, no lock and out of range as no HDMI signal with no input, and recovers on the next event', async () => {
    const { fake, video } = await setup();
    for (const mode of ['no_signal', 'no_lock', 'out_of_range'] as const) {
      fake.mode = mode;
      fake.sourceChange();
      await vi.waitFor(() => expect(video.getState().capture?.status).toBe(mode), poll);
      expect(video.getState()).toMatchObject({ online: true, signal: false });
      expect(input(video).width).toBe(0);
      await vi.waitFor(() => expect(fake.waiting).toBe(1), poll);
    }
    expect(video.getState().capture?.error).toBe('An HDMI signal beyond what the receiver takes');
    fake.mode = 'signal';
    fake.sourceChange();
    await vi.waitFor(() => expect(video.getState().capture?.status).toBe('signal'), poll);
    expect(video.getState()).toMatchObject({ signal: true, width: 1280, height: 720 });
    expect(input(video).width).toBe(1280);
  });

  it('new timings: no input while the old reader holds the device, set once it let go, then the new size', async () => {
    let reading = true;
    const { fake, video, states } = await setup();
    fake.busy = () => reading;
    states.length = 0;
    fake.detected = T1080;
    fake.sourceChange();
    await vi.waitFor(() => expect(video.getState().capture?.status).toBe('switching'), poll);
    // the hub stops its encoder on this (no input); until it is gone the device answers EBUSY
    expect(input(video).width).toBe(0);
    await vi.waitFor(() => expect(fake.setBusyAnswers).toBeGreaterThan(2), poll);
    reading = false;
    await vi.waitFor(() => expect(video.getState().capture?.status).toBe('signal'), poll);
    expect(input(video)).toMatchObject({ width: 1920, height: 1080 });
    expect(input(video).args).toContain('1920x1080');
    expect(states.map((s) => s.capture?.status)).toEqual(['switching', 'signal']);
  });

  it('garbage timings and a size beyond the encoder are unsupported_mode, said in a sentence', async () => {
    const { fake, video } = await setup();
    fake.garbage = true;
    fake.sourceChange();
    await vi.waitFor(() => expect(video.getState().capture?.status).toBe('unsupported_mode'), poll);
    expect(video.getState()).toMatchObject({ online: true, signal: false });
    expect(video.getState().capture?.error).toMatch(/garbled/);
    fake.garbage = false;
    fake.detected = { ...T1080, width: 5120, height: 2880 };
    fake.sourceChange();
    await vi.waitFor(() => expect(video.getState().capture?.error).toMatch(/5120x2880/), poll);
    expect(video.getState().capture?.error).toBe(
      'The remote computer sends 5120x2880, which the encoder cannot take (16x16 to 4096x4096)',
    );
    expect(input(video).width).toBe(0);
    fake.detected = T720;
    fake.sourceChange();
    await vi.waitFor(() => expect(video.getState().capture?.status).toBe('signal'), poll);
  });

  it('a device that vanishes is offline (no_device) and comes back with its node', async () => {
    const { fake, video, device } = await setup();
    fake.unplug();
    await rm(device);
    await vi.waitFor(() => expect(video.getState().capture?.status).toBe('no_device'), poll);
    expect(video.getState().online).toBe(false);
    expect(input(video).width).toBe(0);
    fake.present = true;
    await writeFile(device, '');
    await vi.waitFor(() => expect(video.getState().capture?.status).toBe('signal'), poll);
    expect(video.getState().online).toBe(true);
    // events are watched again
    await vi.waitFor(() => expect(fake.waiting).toBe(1), poll);
  });

  it('a USB dongle (no DV timings): its largest size in the first preferred format, at most the rate asked', async () => {
    const { video, device, fake } = await setup({ prepare: (f) => (f.dongle = true) });
    expect(video.getState().capture).toMatchObject({
      kind: 'fixed',
      status: 'signal',
      width: 1920,
      height: 1080,
      hz: 5,
      format: 'yuyv422',
    });
    // MJPEG first: 1920x1080 at 30 fps rather than YUYV's 5
    await video.dispose();
    const ctl = new V4l2Ctl({ device, run: fake.run, spawnWait: fake.spawnWait });
    const mjpeg = new V4l2Video({ ctl, watch: false, formats: ['mjpeg', 'yuyv422'], fps: 25 });
    await mjpeg.init();
    expect(input(mjpeg)).toEqual({
      kind: 'ffmpeg-input',
      args: [
        '-f',
        'v4l2',
        '-input_format',
        'mjpeg',
        '-video_size',
        '1920x1080',
        '-framerate',
        '25',
        '-i',
        device,
      ],
      width: 1920,
      height: 1080,
      fps: 25,
    });
    await mjpeg.dispose();
  });
});

describe('V4l2Display (EDID on the capture device)', () => {
  const preset = (key: string) =>
    Buffer.from(parseEdidHex(EDID_PRESETS.find((p) => p.key === key)!.content)!);

  it('writes the EDID, reads it back, and answers the timings in force', async () => {
    const { fake, video, ctl } = await setup({ prepare: (f) => (f.cecRewrite = true) });
    const display = new V4l2Display(ctl, video);
    const edid = preset('E1920x1080');
    await display.apply(edid, { width: 1920, height: 1080, hz: 60 });
    // held as vivid holds it: its own CEC physical address in, accepted as the same EDID
    expect(fake.edid?.equals(edid)).toBe(false);
    expect((await display.readBack())?.subarray(0, 128)).toEqual(edid.subarray(0, 128));
    expect(display.current()).toEqual({ width: 1280, height: 720, hz: 60 });
  });

  it('a receiver that refuses the EDID while it streams gets it with the encoder let go of, then the picture is back', async () => {
    const { fake, video, ctl, states } = await setup();
    // the hub's encoder: reading while there is input, gone a moment after there is none
    let reading = true;
    video.onState((s) => {
      if (s.capture?.status !== 'signal') setTimeout(() => (reading = false), 30);
      else reading = true;
    });
    fake.edidBusy = () => reading;
    states.length = 0;
    const display = new V4l2Display(ctl, video);
    const edid = preset('E1920x1200');
    await display.apply(edid, { width: 1920, height: 1200, hz: 60 });
    expect(fake.edidBusyAnswers).toBeGreaterThan(1);
    expect(fake.edid?.equals(edid)).toBe(true);
    expect(states.map((s) => s.capture?.status)).toEqual(['switching', 'signal']);
    await vi.waitFor(() => expect(input(video)).toMatchObject({ width: 1280, height: 720 }), poll);
  });

  it('a receiver that stays busy: the apply fails with a sentence after the wait, and the picture is back', async () => {
    const { fake, video, ctl } = await setup({ busyTimeoutMs: 100 });
    fake.edidBusy = () => true;
    const display = new V4l2Display(ctl, video);
    await expect(
      display.apply(preset('E1920x1200'), { width: 1920, height: 1200, hz: 60 }),
    ).rejects.toThrow(/saved but not written: .*VIDIOC_S_EDID: failed: Device or resource busy/);
    expect(fake.edidBusyAnswers).toBeGreaterThan(2);
    expect(video.getState().capture?.status).toBe('signal');
    expect(input(video).width).toBe(1280);
  });

  it('a source change during the write is read once the write is done, not in the middle of it', async () => {
    const { fake, video, ctl, states } = await setup();
    let answers = 0;
    /** How many states had been said when the write went through. */
    let writtenAt = -1;
    fake.edidBusy = () => {
      answers += 1;
      if (answers === 2) {
        // the remote computer answers the hot-plug with new timings while the write waits
        fake.detected = T1080;
        fake.sourceChange();
      }
      if (answers < 5) return true;
      writtenAt = states.length;
      return false;
    };
    states.length = 0;
    await new V4l2Display(ctl, video).apply(preset('E1920x1080'), {
      width: 1920,
      height: 1080,
      hz: 60,
    });
    await vi.waitFor(() => expect(input(video)).toMatchObject({ width: 1920, height: 1080 }), poll);
    // no picture (an encoder on the device) before the write went through; the new size after
    const seen = states.map((s) => `${s.capture?.status} ${s.width}`);
    expect(writtenAt).toBeGreaterThan(0);
    expect(seen.slice(0, writtenAt)).toEqual(['switching 1280']);
    expect(seen.at(-1)).toBe('signal 1920');
  });

  it('a device that keeps other bytes, or takes no EDID, fails the apply with a sentence', async () => {
    const { fake, video, ctl } = await setup();
    const display = new V4l2Display(ctl, video);
    const edid = preset('E1920x1080');
    fake.run = ((orig) => async (file, args, opts) =>
      args[2]?.startsWith('--set-edid') ? { stdout: '', stderr: '' } : orig(file, args, opts))(
      fake.run,
    );
    const ctl2 = new V4l2Ctl({ device: ctl.device, run: fake.run, spawnWait: fake.spawnWait });
    await expect(
      new V4l2Display(ctl2, video).apply(edid, { width: 1920, height: 1080, hz: 60 }),
    ).rejects.toThrow(/saved but not written: .* holds another EDID/);
    fake.dongle = true;
    await expect(display.apply(edid, { width: 1920, height: 1080, hz: 60 })).rejects.toThrow(
      /takes no EDID \(a USB capture dongle has its own\)/,
    );
  });

  it("get_edid reports what the device holds: the submitted text while it holds those bytes, else the device's", async () => {
    const { fake, video, ctl } = await setup({ prepare: (f) => (f.cecRewrite = true) });
    const dataDir = await mkdtemp(join(tmpdir(), 'kvm-v4l2-edid-'));
    cleanup.push(() => rm(dataDir, { recursive: true, force: true }));
    const edid = new EdidService({ dataDir, display: new V4l2Display(ctl, video) });
    // before any submit: vivid's own EDID, read back
    expect(await edid.readState()).toMatchObject({ source: 'device', preset: null });
    expect((await edid.readState()).edid).toBe(VIVID_EDID_HEX.replace(/\s+/g, ''));
    const text = EDID_PRESETS.find((p) => p.key === 'E1920x1200')!.content;
    await edid.submit(text);
    expect(await edid.readState()).toMatchObject({
      edid: text,
      preset: 'E1920x1200',
      source: 'device',
    });
    // somebody else wrote the receiver: get_edid says so, the saved text notwithstanding
    fake.edid = null;
    expect(await edid.readState()).toMatchObject({ edid: '', preset: null, source: 'device' });
    expect(edid.state().edid).toBe(text);
  });
});

import { afterEach, describe, expect, it, vi } from 'vitest';
import { DisabledAudio } from '../drivers/audio/disabled';
import { dominantFrequency } from '../drivers/audio/tone';
import { TestbedAudio } from '../drivers/audio/testbed';
import { SILENT_LOGGER } from '../log';
import { readProcArgv } from '../process/supervisor';
import { AudioHub, audioHubArgs, type AudioPacket } from './audio-hub';
import { decodeOpus } from './opus-test-support';

const hubs: AudioHub[] = [];
afterEach(async () => {
  await Promise.all(hubs.splice(0).map((h) => h.dispose()));
});

describe('audioHubArgs', () => {
  it('wraps the capture in low-delay input flags and a 20 ms Opus, one Ogg page per packet', () => {
    const args = audioHubArgs(['-f', 's16le', '-i', 'pipe:0'], 64);
    const input = args.indexOf('-i');
    expect(args.slice(input - 2, input + 2)).toEqual(['-f', 's16le', '-i', 'pipe:0']);
    expect(args.indexOf('-fflags')).toBeLessThan(input);
    expect(args.join(' ')).toContain(
      '-c:a libopus -application lowdelay -frame_duration 20 -b:a 64k -page_duration 20000 -flush_packets 1 -f ogg pipe:1',
    );
  });
});

describe('AudioHub', () => {
  it('encodes the testbed tone into 20 ms Opus packets that decode back to it', async () => {
    const driver = new TestbedAudio();
    const hub = new AudioHub(driver, SILENT_LOGGER, { graceMs: 100 });
    hubs.push(hub);
    const got: AudioPacket[] = [];
    const counts: number[] = [];
    hub.on('listeners', (n) => counts.push(n));
    const unsubscribe = hub.subscribe((p) => got.push(p));
    expect(hub.subscriberCount).toBe(1);
    await vi.waitFor(() => expect(got.length).toBeGreaterThan(2), { timeout: 10_000 });
    expect(got[0]!.resume).toBe(true);
    expect(got.slice(1).every((p) => !p.resume && p.samples === 960)).toBe(true);
    const from = got.length;
    driver.tone(1000, 600);
    await vi.waitFor(() => expect(got.length).toBeGreaterThan(from + 30), { timeout: 10_000 });
    const pcm = await decodeOpus(got.slice(from));
    // the middle of the tone: whatever the encoder's delay, it is in there
    const mid = pcm.subarray(0.2 * 96000, 0.5 * 96000);
    expect(dominantFrequency(mid, 48000, 2, { minHz: 500, maxHz: 2000 }).hz).toBe(1000);

    const pid = hub.pid!;
    unsubscribe();
    expect(counts).toEqual([1, 0]);
    await vi.waitFor(() => expect(hub.pid).toBeNull(), { timeout: 5000 });
    await vi.waitFor(async () => expect(await readProcArgv(pid)).toBeNull(), { timeout: 3000 });
  });

  it('keeps one ffmpeg for many listeners and restarts it after a crash, marking the gap', async () => {
    const hub = new AudioHub(new TestbedAudio(), SILENT_LOGGER, {
      graceMs: 50,
      backoff: { initialMs: 50 },
    });
    hubs.push(hub);
    const a: AudioPacket[] = [];
    const b: AudioPacket[] = [];
    hub.subscribe((p) => a.push(p));
    hub.subscribe((p) => b.push(p));
    await vi.waitFor(() => expect(b.length).toBeGreaterThan(2), { timeout: 10_000 });
    const first = hub.pid!;
    // a throwing subscriber does not stop the others
    hub.subscribe(() => {
      throw new Error('boom');
    });
    process.kill(first, 'SIGKILL');
    await vi.waitFor(() => expect(hub.pid).not.toBe(first), { timeout: 10_000 });
    const n = a.length;
    await vi.waitFor(() => expect(a.length).toBeGreaterThan(n + 2), { timeout: 10_000 });
    expect(a.slice(n).some((p) => p.resume)).toBe(true);
    expect(hub.subscriberCount).toBe(3);
  });

  it('a listener that comes while the encoder stops gets a new one after it', async () => {
    const hub = new AudioHub(new TestbedAudio(), SILENT_LOGGER, { graceMs: 0 });
    hubs.push(hub);
    const a: AudioPacket[] = [];
    const stop = hub.subscribe((p) => a.push(p));
    await vi.waitFor(() => expect(a.length).toBeGreaterThan(1), { timeout: 10_000 });
    const first = hub.pid!;
    stop();
    await vi.waitFor(() => expect(hub.pid).toBeNull());
    const b: AudioPacket[] = [];
    hub.subscribe((p) => b.push(p));
    await vi.waitFor(() => expect(b.length).toBeGreaterThan(1), { timeout: 10_000 });
    expect(b[0]!.resume).toBe(true);
    expect(hub.pid).not.toBe(first);
    // the old one is gone
    expect(await readProcArgv(first)).toBeNull();
  });

  it('starts nothing while the driver has no sound, and keeps asking', async () => {
    const driver = new DisabledAudio();
    const capture = vi.spyOn(driver, 'capture');
    const hub = new AudioHub(driver, SILENT_LOGGER);
    hubs.push(hub);
    hub.subscribe(() => undefined);
    expect(hub.pid).toBeNull();
    await vi.waitFor(() => expect(capture.mock.calls.length).toBeGreaterThanOrEqual(2), {
      timeout: 3000,
    });
    expect(hub.running).toBe(false);
  });
});

import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { dominantFrequency, s16, sinePcm } from './tone';
import { TestbedAudio } from './testbed';

const stops: (() => void)[] = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop();
});

describe('TestbedAudio', () => {
  it('is simulated and says why there is no camera', () => {
    const a = new TestbedAudio();
    expect([a.kind, a.simulated]).toEqual(['testbed', true]);
    expect(a.cameraUnavailableReason).toMatch(/camera/);
    expect(a.capture().args).toEqual(['-f', 's16le', '-ar', '48000', '-ac', '2', '-i', 'pipe:0']);
    expect(a.playback().args).toEqual(['-f', 's16le', '-ar', '48000', '-ac', '2', 'pipe:1']);
  });

  it('feeds silence in real time, then the tone asked for', async () => {
    const a = new TestbedAudio();
    const stdin = new PassThrough();
    const chunks: Buffer[] = [];
    stdin.on('data', (c: Buffer) => chunks.push(c));
    stops.push(a.capture().feed!(stdin));
    await vi.waitFor(() => expect(chunks.length).toBeGreaterThanOrEqual(3));
    expect(chunks.every((c) => c.length === 3840)).toBe(true);
    expect(chunks.every((c) => c.every((b) => b === 0))).toBe(true);
    const started = a.tone(1000, 500);
    expect(started).toBeLessThanOrEqual(performance.now());
    const from = chunks.length;
    await vi.waitFor(() => expect(chunks.length).toBeGreaterThanOrEqual(from + 5));
    const pcm = s16(Buffer.concat(chunks.slice(from + 1, from + 5)));
    expect(dominantFrequency(pcm, 48000, 2, { minHz: 500, maxHz: 2000 }).hz).toBe(1000);
    expect(() => a.tone(5, 10)).toThrow(RangeError);
    expect(() => a.tone(440, 0)).toThrow(RangeError);
  });

  it('hears a frequency in the decoded microphone, from the mark on', () => {
    const a = new TestbedAudio();
    const stdout = new PassThrough();
    stops.push(a.playback().drain!(stdout));
    stdout.write(sinePcm(440, 100));
    expect(a.heard(440).at).not.toBeNull();
    const mark = a.mark();
    expect(a.heard(440)).toEqual({ at: null, level: 0 });
    stdout.write(Buffer.alloc(3840 * 3));
    // asked before the tone came: each window is looked at once, the later ones still are
    expect(a.heard(880).at).toBeNull();
    // odd sizes are cut into 20 ms windows across writes
    const tone = sinePcm(880, 200);
    stdout.write(tone.subarray(0, 1001));
    stdout.write(tone.subarray(1001));
    const h = a.heard(880);
    expect(h.at).toBeGreaterThanOrEqual(mark);
    expect(h.level).toBeGreaterThan(0.4);
    expect(a.heard(440).at).toBeNull();
    expect(a.heard(880).at).toBe(h.at);
  });
});

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { GATEWAY_RETRY_MS, STREAM_ERROR_RETRY_MS, stereoOpus } from './janus-stream';
import { ANSWER, FakeHandle, OFFER, firstFrame, negotiate, setup } from './janus-stream-test-kit';

describe('JanusStream sound (issue 14)', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  const micTrack = { kind: 'audio', id: 'mic' } as MediaStreamTrack;

  function watchParams(handle: FakeHandle): Array<Record<string, unknown>> {
    return handle.sent
      .filter((s) => s.message['request'] === 'watch')
      .map((s) => s.message['params'] as Record<string, unknown>);
  }

  it('asks for audio when the gateway has it and receives it with stereo Opus', async () => {
    const { runtime, stream } = setup();
    const features = vi.fn();
    stream.on('features', features);
    stream.start();
    const handle = await negotiate(runtime, { audio: true, mic: true });
    expect(features).toHaveBeenCalledWith({ audio: true, mic: true });
    expect(stream.getFeatures()).toEqual({ audio: true, mic: true });
    // No microphone track: audio received only.
    expect(watchParams(handle)).toEqual([
      { orientation: 90, audio: true, video: true, mic: false, camera: false },
    ]);
    const answer = handle.answers[0];
    expect(answer?.tracks).toEqual([
      { type: 'video', capture: false, recv: true, add: true },
      { type: 'audio', capture: false, recv: true, add: true, dontStop: true },
    ]);
    const jsep = { type: 'answer', sdp: 'a=fmtp:111 minptime=10;useinbandfec=1\r\n' };
    answer?.customizeSdp?.(jsep);
    expect(jsep.sdp).toBe('a=fmtp:111 minptime=10;useinbandfec=1;stereo=1\r\n');
  });

  it('never asks for the microphone when the gateway has no sound', async () => {
    const { runtime, stream } = setup(null, { track: micTrack });
    stream.start();
    const handle = await negotiate(runtime, { audio: false, mic: true });
    expect(watchParams(handle)[0]).toMatchObject({ audio: false, mic: false });
    expect(handle.answers[0]?.tracks).toHaveLength(1);
  });

  it('sends the microphone track on the same peer and swaps it in place later', async () => {
    const mic = { track: micTrack as MediaStreamTrack | null };
    const { runtime, stream } = setup(null, mic);
    stream.start();
    const handle = await negotiate(runtime, { audio: true, mic: true });
    expect(watchParams(handle)[0]).toMatchObject({ audio: true, mic: true });
    expect(handle.answers[0]?.tracks[1]).toEqual({
      type: 'audio',
      capture: micTrack,
      recv: true,
      add: true,
      dontStop: true,
    });
    await firstFrame(handle);
    const before = handle.sent.length;
    const other = { kind: 'audio', id: 'mic2' } as MediaStreamTrack;
    mic.track = other;
    stream.micChanged();
    mic.track = null;
    stream.micChanged();
    expect(handle.pc.senders[0]?.replaced).toEqual([other, null]);
    expect(handle.sent.length).toBe(before); // no renegotiation
    expect(stream.getState()).toBe('active');
  });

  it('renegotiates (stop + watch, same session) when a first microphone track comes', async () => {
    const mic = { track: null as MediaStreamTrack | null };
    const { runtime, stream } = setup(null, mic);
    stream.start();
    const handle = await negotiate(runtime, { audio: true, mic: true });
    await firstFrame(handle);
    stream.micChanged(); // still no track: nothing
    const before = handle.sent.length;
    mic.track = micTrack;
    stream.micChanged();
    expect(handle.requests().slice(before)).toEqual(['stop', 'watch']);
    expect(watchParams(handle).at(-1)).toMatchObject({ audio: true, mic: true });
    expect(stream.getState()).toBe('watching');
    expect(runtime.sessions).toHaveLength(1);
  });

  it('a microphone track before the answer waits for it, then renegotiates', async () => {
    const mic = { track: null as MediaStreamTrack | null };
    const { runtime, stream } = setup(null, mic);
    stream.start();
    await vi.advanceTimersByTimeAsync(0);
    const session = runtime.last();
    session.options.success();
    const handle = new FakeHandle();
    session.plugin.success(handle);
    session.plugin.onmessage({
      result: { status: 'features', features: { audio: true, mic: true } },
    });
    // watching, the offer not here yet: no stop + watch that would cross it
    mic.track = micTrack;
    stream.micChanged();
    expect(handle.requests()).toEqual(['features', 'watch']);
    session.plugin.onmessage({ result: { status: 'started' } }, OFFER);
    handle.answers.at(-1)?.success(ANSWER);
    expect(handle.requests()).toEqual(['features', 'watch', 'start', 'stop', 'watch']);
    expect(watchParams(handle).at(-1)).toMatchObject({ audio: true, mic: true });
    // The first offer's late answer failing changes nothing (a newer watch runs).
    handle.answers[0]?.error('late');
    expect(stream.getState()).toBe('watching');
  });

  it('passes the remote audio track on and asks for sound again after a plugin error', async () => {
    const { runtime, stream } = setup();
    const tracks: Array<MediaStreamTrack | null> = [];
    stream.on('audioTrack', (t) => tracks.push(t));
    stream.start();
    const handle = await negotiate(runtime, { audio: true, mic: false });
    const audio = { kind: 'audio', id: 'a' } as MediaStreamTrack;
    runtime.last().plugin.onremotetrack(audio, 'a', true, { reason: 'created' });
    runtime.last().plugin.onremotetrack(audio, 'a', false, { reason: 'mute' });
    expect(stream.getAudioTrack()).toBe(audio);
    expect(stream.getTrack()).toBeNull();
    runtime.last().plugin.onmessage({ error_code: 503, error: 'No source' });
    expect(tracks).toEqual([audio, null]);
    await vi.advanceTimersByTimeAsync(STREAM_ERROR_RETRY_MS);
    expect(watchParams(handle).at(-1)).toMatchObject({ audio: true });
  });

  it('asks for sound again on a new session after the gateway went away', async () => {
    const { runtime, stream } = setup();
    stream.start();
    await negotiate(runtime, { audio: true, mic: false });
    runtime.last().options.error('Lost connection to the server (is it down?)');
    expect(stream.getFeatures()).toBeNull();
    await vi.advanceTimersByTimeAsync(GATEWAY_RETRY_MS);
    const handle = await negotiate(runtime, { audio: true, mic: false });
    expect(watchParams(handle)).toEqual([
      { orientation: 90, audio: true, video: true, mic: false, camera: false },
    ]);
  });

  it('stereoOpus leaves an answer that has it or has no Opus alone', () => {
    expect(stereoOpus('x useinbandfec=1;stereo=1')).toBe('x useinbandfec=1;stereo=1');
    expect(stereoOpus('v=0')).toBe('v=0');
  });
});

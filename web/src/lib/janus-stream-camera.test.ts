import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { firstFrame, negotiate, setup, type FakeHandle } from './janus-stream-test-kit';

describe('JanusStream camera (issue 24)', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  const cam = { kind: 'video', id: 'cam' } as MediaStreamTrack;
  const CAMERA_OFFER = { type: 'offer', sdp: 'v=0 offer\r\na=mid:v\r\na=mid:c\r\n' };

  function watchParams(handle: FakeHandle): Array<Record<string, unknown>> {
    return handle.sent
      .filter((s) => s.message['request'] === 'watch')
      .map((s) => s.message['params'] as Record<string, unknown>);
  }

  it('asks for the camera with a track and sends it on the offered camera section', async () => {
    const { runtime, stream } = setup(null, { track: null }, { track: cam });
    stream.start();
    const handle = await negotiate(runtime, { audio: false, mic: false }, CAMERA_OFFER);
    expect(watchParams(handle)[0]).toMatchObject({ camera: true });
    expect(handle.answers[0]?.tracks).toEqual([
      { type: 'video', capture: false, recv: true, add: true },
      { type: 'video', mid: 'c', capture: cam, recv: false, add: true, dontStop: true },
    ]);
  });

  it('no camera section in the offer (the device has no webcam): only the video is answered', async () => {
    const { runtime, stream } = setup(null, { track: null }, { track: cam });
    stream.start();
    const handle = await negotiate(runtime);
    expect(watchParams(handle)[0]).toMatchObject({ camera: true });
    expect(handle.answers[0]?.tracks).toHaveLength(1);
  });

  it('without a track the watch asks camera: false; a first track renegotiates', async () => {
    const camera = { track: null as MediaStreamTrack | null };
    const { runtime, stream } = setup(null, { track: null }, camera);
    stream.start();
    const handle = await negotiate(runtime);
    expect(watchParams(handle)[0]).toMatchObject({ camera: false });
    await firstFrame(handle);
    const before = handle.sent.length;
    camera.track = cam;
    stream.cameraChanged();
    expect(handle.requests().slice(before)).toEqual(['stop', 'watch']);
    expect(watchParams(handle).at(-1)).toMatchObject({ camera: true });
  });
});

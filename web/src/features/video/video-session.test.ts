import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Emitter } from '../../lib/emitter';
import type * as VideoPrefetch from './video-prefetch';
import { IDLE, type VideoSnapshot, type WebRtcClient } from './video-controller';
import {
  FIRST_FRAME_WAIT_MS,
  firstFramePreview,
  prestartVideo,
  SIGNALLING_FIRST_MS,
  videoController,
} from './video-session';

const { config } = vi.hoisted(() => ({ config: { mode: 'webrtc' as string } }));
// the config's answer, as the early requests would have it
vi.mock('./video-prefetch', async (importOriginal) => ({
  ...(await importOriginal<typeof VideoPrefetch>()),
  modules: { webrtc: null, direct: null },
  takePrefetched: (path: string) =>
    path === '/system/get_config' ? Promise.resolve({ config: { video_mode: config.mode } }) : null,
}));

/** The controller as the early start sees it: its snapshot, set by the test. */
let snapshot: VideoSnapshot;
const listeners = new Set<() => void>();
function update(next: Partial<VideoSnapshot>): void {
  snapshot = { ...snapshot, ...next };
  for (const l of [...listeners]) l();
}

beforeEach(() => {
  snapshot = IDLE;
  config.mode = 'webrtc';
  vi.spyOn(videoController, 'getSnapshot').mockImplementation(() => snapshot);
  vi.spyOn(videoController, 'subscribe').mockImplementation((l) => {
    listeners.add(l);
    return () => listeners.delete(l);
  });
  vi.spyOn(videoController, 'start').mockImplementation((mode) =>
    update({ requestedMode: mode, mode, state: 'connecting' }),
  );
});

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
  listeners.clear();
});

const track = { readyState: 'live', addEventListener() {}, removeEventListener() {} };

describe('prestartVideo (issue 28: the first signalling before the console chunks)', () => {
  it("settles once the client's answer is sent; the track goes to the first frame preview", async () => {
    const setSource = vi.spyOn(firstFramePreview, 'setSource').mockImplementation(() => undefined);
    let settled = false;
    const started = prestartVideo().then(() => (settled = true));
    await vi.waitFor(() => expect(videoController.start).toHaveBeenCalledWith('webrtc'));
    const client = new Emitter<{ answered: undefined }>();
    update({ state: 'watching', webrtc: client as unknown as WebRtcClient });
    update({ track: track as unknown as MediaStreamTrack });
    expect(setSource).toHaveBeenLastCalledWith(track);
    await new Promise((r) => setTimeout(r, 0));
    expect(settled).toBe(false); // the track comes before the answer is made
    client.emit('answered', undefined);
    await started;
  });

  it("after the answer, waits for the preview's first frame FIRST_FRAME_WAIT_MS at most", async () => {
    vi.spyOn(firstFramePreview, 'setSource').mockImplementation(() => undefined);
    // a preview that shows and never presents (a cold encoder)
    vi.spyOn(firstFramePreview, 'firstFrame').mockImplementation(() => new Promise(() => {}));
    vi.useFakeTimers();
    let settled = false;
    const started = prestartVideo().then(() => (settled = true));
    await vi.advanceTimersByTimeAsync(0);
    const client = new Emitter<{ answered: undefined }>();
    update({ state: 'watching', webrtc: client as unknown as WebRtcClient });
    client.emit('answered', undefined);
    await vi.advanceTimersByTimeAsync(FIRST_FRAME_WAIT_MS - 1);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await started;
  });

  it('settles when the client fails, or after SIGNALLING_FIRST_MS at most', async () => {
    vi.spyOn(firstFramePreview, 'setSource').mockImplementation(() => undefined);
    const failing = prestartVideo();
    await vi.waitFor(() => expect(videoController.start).toHaveBeenCalled());
    update({ state: 'error' });
    await failing;

    snapshot = IDLE;
    vi.useFakeTimers();
    let settled = false;
    const slow = prestartVideo().then(() => (settled = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(videoController.start).toHaveBeenCalledTimes(2);
    await vi.advanceTimersByTimeAsync(SIGNALLING_FIRST_MS - 1);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await slow;
  });

  it("direct H.264: the stream goes to the preview; settles on the hello and the preview's first frame", async () => {
    config.mode = 'direct_h264';
    const setSource = vi.spyOn(firstFramePreview, 'setSource').mockImplementation(() => undefined);
    let presented = (): void => undefined;
    vi.spyOn(firstFramePreview, 'firstFrame').mockImplementation(
      () => new Promise<void>((resolve) => (presented = resolve)),
    );
    let settled = false;
    const started = prestartVideo().then(() => (settled = true));
    await vi.waitFor(() => expect(videoController.start).toHaveBeenCalledWith('direct_h264'));
    const direct = { kind: 'direct_h264' } as unknown as VideoSnapshot['direct'];
    update({ direct });
    expect(setSource).toHaveBeenLastCalledWith(direct);
    await new Promise((r) => setTimeout(r, 0));
    expect(settled).toBe(false); // connecting: no hello yet
    update({ state: 'watching' });
    await new Promise((r) => setTimeout(r, 0));
    expect(settled).toBe(false); // the hello came: the first frame is on its way
    presented();
    await started;
  });

  it('a client the view started already is left alone', async () => {
    snapshot = { ...IDLE, requestedMode: 'webrtc', mode: 'webrtc', state: 'active' };
    await prestartVideo();
    expect(videoController.start).not.toHaveBeenCalled();
  });
});

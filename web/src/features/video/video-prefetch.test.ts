import { afterEach, describe, expect, it, vi } from 'vitest';
import { STORAGE_KEYS } from '@kvm/protocol/constants';
import { envelope, stubFetch } from '../../test/fetch-stub';
import { prefetchVideo, takePrefetched } from './video-prefetch';

// the clients' code is not what these tests are about
vi.mock('../../lib/janus-stream', () => ({}));
vi.mock('../../lib/janus-loader', () => ({ loadJanusRuntime: async () => ({}) }));
const { sharedDirectWorker } = vi.hoisted(() => ({ sharedDirectWorker: vi.fn() }));
vi.mock('../../lib/h264-direct', () => ({ sharedDirectWorker }));
vi.mock('janus-gateway', () => ({ default: {} }));
vi.mock('webrtc-adapter', () => ({ default: {} }));

/** The device's answers to the prefetch, with `mode` as the config's video_mode. */
function answerAs(mode = 'webrtc') {
  return stubFetch({
    '/api/system/get_config': () => envelope(200, { config: { video_mode: mode } }),
    '/api/janus/auth': () => envelope(200, { apisecret: null, token_auth: false }),
    '/api/turn/get_turn': () => envelope(200, { uris: [] }),
  });
}

afterEach(() => {
  localStorage.clear();
  vi.unstubAllGlobals();
  sharedDirectWorker.mockClear();
});

describe('prefetchVideo (issue 28: the first session asks beside the console, not after it)', () => {
  it('asks the config, /janus/auth and the TURN state at once; each answer is taken once', async () => {
    const { requests } = answerAs();
    const config = prefetchVideo(1_000);
    expect(requests.map((r) => r.path).sort()).toEqual([
      '/api/janus/auth',
      '/api/system/get_config',
      '/api/turn/get_turn',
    ]);
    await expect(config).resolves.toEqual({ config: { video_mode: 'webrtc' } });
    await expect(takePrefetched('/janus/auth', 1_500)).resolves.toEqual({
      apisecret: null,
      token_auth: false,
    });
    // a second session asks itself (TURN credentials expire)
    expect(takePrefetched('/janus/auth', 1_600)).toBeNull();
    expect(takePrefetched('/nothing', 1_600)).toBeNull();
  });

  it('an answer older than 10 s is not handed out', () => {
    answerAs();
    prefetchVideo(1_000);
    expect(takePrefetched('/turn/get_turn', 11_001)).toBeNull();
  });

  it("direct H.264 last time: only the config, no WebRTC requests, and direct's worker", async () => {
    localStorage.setItem(STORAGE_KEYS.videoMode, 'direct_h264');
    const { requests } = answerAs();
    prefetchVideo(1_000);
    expect(requests.map((r) => r.path)).toEqual(['/api/system/get_config']);
    expect(takePrefetched('/janus/auth', 1_000)).toBeNull();
    await vi.waitFor(() => expect(sharedDirectWorker).toHaveBeenCalledTimes(1));
  });

  it("starts direct H.264's worker early when the stored mode or the config says direct", async () => {
    answerAs('webrtc');
    await prefetchVideo(1_000);
    await new Promise((r) => setTimeout(r, 0));
    expect(sharedDirectWorker).not.toHaveBeenCalled(); // WebRTC: no worker

    answerAs('direct_h264');
    await prefetchVideo(1_000); // no stored mode: the config decides
    await vi.waitFor(() => expect(sharedDirectWorker).toHaveBeenCalledTimes(1));

    localStorage.setItem(STORAGE_KEYS.videoMode, 'direct_h264');
    answerAs('webrtc');
    void prefetchVideo(1_000); // stored: at once, not after the config
    await vi.waitFor(() => expect(sharedDirectWorker).toHaveBeenCalledTimes(2));
  });
});

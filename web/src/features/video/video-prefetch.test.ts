import { afterEach, describe, expect, it, vi } from 'vitest';
import { STORAGE_KEYS } from '@kvm/protocol/constants';
import { envelope, stubFetch } from '../../test/fetch-stub';
import { prefetchVideo, takePrefetched } from './video-prefetch';

// the clients' code is not what these tests are about
vi.mock('../../lib/janus-stream', () => ({}));
vi.mock('../../lib/janus-loader', () => ({ loadJanusRuntime: async () => ({}) }));
vi.mock('../../lib/h264-direct', () => ({}));
vi.mock('janus-gateway', () => ({ default: {} }));
vi.mock('webrtc-adapter', () => ({ default: {} }));

function stub() {
  return stubFetch({
    '/api/system/get_config': () => envelope(200, { config: { video_mode: 'webrtc' } }),
    '/api/janus/auth': () => envelope(200, { apisecret: null, token_auth: false }),
    '/api/turn/get_turn': () => envelope(200, { uris: [] }),
  });
}

afterEach(() => {
  localStorage.clear();
  vi.unstubAllGlobals();
});

describe('prefetchVideo (issue 28: the first session asks beside the console, not after it)', () => {
  it('asks the config, /janus/auth and the TURN state at once; each answer is taken once', async () => {
    const { requests } = stub();
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
    stub();
    prefetchVideo(1_000);
    expect(takePrefetched('/turn/get_turn', 11_001)).toBeNull();
  });

  it('direct H.264 last time: only the config, no WebRTC requests', () => {
    localStorage.setItem(STORAGE_KEYS.videoMode, 'direct_h264');
    const { requests } = stub();
    prefetchVideo(1_000);
    expect(requests.map((r) => r.path)).toEqual(['/api/system/get_config']);
    expect(takePrefetched('/janus/auth', 1_000)).toBeNull();
  });
});

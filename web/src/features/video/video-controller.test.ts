import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Emitter } from '../../lib/emitter';
import { DataChannelInput } from '../../lib/input-channel';
import type { JanusStreamEvents } from '../../lib/janus-stream';
import type { H264DirectEvents } from '../../lib/h264-direct';
import { EMPTY_STREAM_INFO, type StreamState } from '../../lib/stream-types';
import {
  CLIENT_LOAD_RETRY_MS,
  VideoController,
  WEBRTC_FALLBACK_MS,
  type DirectClient,
  type WebRtcClient,
} from './video-controller';

class FakeClient<E extends object> {
  readonly events = new Emitter<E>();
  state: StreamState = 'idle';
  starts = 0;
  stops = 0;
  start() {
    this.starts += 1;
    this.set('connecting');
  }
  stop() {
    this.stops += 1;
    this.set('stopped');
  }
  getState = () => this.state;
  getInfo = () => EMPTY_STREAM_INFO;
  on<K extends keyof E>(type: K, handler: (payload: E[K]) => void) {
    return this.events.on(type, handler);
  }
  set(state: StreamState) {
    this.state = state;
    (this.events as unknown as Emitter<{ state: StreamState }>).emit('state', state);
  }
}

class FakeWebRtc extends FakeClient<JanusStreamEvents> implements WebRtcClient {
  readonly kind = 'webrtc' as const;
  readonly inputChannel = new DataChannelInput();
  getTrack = () => null;
  getAudioTrack = () => null;
  getFeatures = () => null;
  micChanged = () => undefined;
}

class FakeDirect extends FakeClient<H264DirectEvents> implements DirectClient {
  readonly kind = 'direct_h264' as const;
  framesDrawn = 0;
  getSize = () => ({ width: 0, height: 0 });
  attachCanvas() {}
}

function setup(sourceOnline: boolean | null = true) {
  const webrtc: FakeWebRtc[] = [];
  const direct: FakeDirect[] = [];
  let online = sourceOnline;
  const controller = new VideoController({
    createWebRtc: async () => {
      const c = new FakeWebRtc();
      webrtc.push(c);
      return c;
    },
    createDirect: async () => {
      const c = new FakeDirect();
      direct.push(c);
      return c;
    },
    isSourceOnline: () => online,
  });
  return { controller, webrtc, direct, setOnline: (v: boolean | null) => (online = v) };
}

describe('VideoController', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('runs WebRTC and stays on it once a frame arrives in time', async () => {
    const { controller, webrtc, direct } = setup();
    controller.start('webrtc');
    await vi.advanceTimersByTimeAsync(0);
    expect(webrtc[0]?.starts).toBe(1);
    webrtc[0]?.set('active');
    expect(controller.getSnapshot()).toMatchObject({ mode: 'webrtc', state: 'active' });
    await vi.advanceTimersByTimeAsync(WEBRTC_FALLBACK_MS * 3);
    expect(direct).toHaveLength(0);
    expect(controller.getSnapshot().fallback).toBe(false);
  });

  it('falls back to direct H.264 when WebRTC shows no frame within 4 s, and says so', async () => {
    const { controller, webrtc, direct } = setup();
    controller.start('webrtc');
    await vi.advanceTimersByTimeAsync(WEBRTC_FALLBACK_MS - 1);
    expect(direct).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(webrtc[0]?.stops).toBe(1);
    expect(direct[0]?.starts).toBe(1);
    expect(controller.getSnapshot()).toMatchObject({
      requestedMode: 'webrtc',
      mode: 'direct_h264',
      fallback: true,
      direct: direct[0],
      webrtc: null,
    });
    // The stopped WebRTC client's late events change nothing.
    webrtc[0]?.set('active');
    expect(controller.getSnapshot().mode).toBe('direct_h264');
  });

  it('leaves a later outage of a WebRTC that worked to its own retries', async () => {
    const { controller, webrtc, direct } = setup();
    controller.start('webrtc');
    await vi.advanceTimersByTimeAsync(1_000);
    webrtc[0]?.set('active');
    webrtc[0]?.set('error'); // the gateway went away 1 s after the first frame
    await vi.advanceTimersByTimeAsync(WEBRTC_FALLBACK_MS * 2);
    expect(direct).toHaveLength(0);
    expect(controller.getSnapshot()).toMatchObject({ mode: 'webrtc', state: 'error' });
  });

  it('does not blame WebRTC while the source itself is offline', async () => {
    const { controller, direct, setOnline } = setup(false);
    controller.start('webrtc');
    await vi.advanceTimersByTimeAsync(WEBRTC_FALLBACK_MS * 3);
    expect(direct).toHaveLength(0);
    setOnline(true);
    await vi.advanceTimersByTimeAsync(WEBRTC_FALLBACK_MS);
    expect(direct).toHaveLength(1);
  });

  it('falls back at once when WebRTC cannot run in this browser', async () => {
    const { controller, webrtc, direct } = setup();
    controller.start('webrtc');
    await vi.advanceTimersByTimeAsync(0);
    webrtc[0]?.events.emit('fatal', 'unsupported');
    await vi.advanceTimersByTimeAsync(0);
    expect(direct).toHaveLength(1);
    expect(controller.getSnapshot().fallback).toBe(true);
  });

  it('switches live when the setting changes, and never falls back from direct', async () => {
    const { controller, webrtc, direct } = setup();
    controller.start('direct_h264');
    await vi.advanceTimersByTimeAsync(WEBRTC_FALLBACK_MS * 2);
    expect(direct).toHaveLength(1);
    expect(controller.getSnapshot()).toMatchObject({ mode: 'direct_h264', fallback: false });
    controller.start('direct_h264'); // same mode: nothing
    expect(direct[0]?.stops).toBe(0);

    controller.start('webrtc');
    await vi.advanceTimersByTimeAsync(0);
    expect(direct[0]?.stops).toBe(1);
    expect(webrtc).toHaveLength(1);
    webrtc[0]?.set('active');
    expect(controller.getSnapshot()).toMatchObject({ mode: 'webrtc', state: 'active' });

    direct[0]?.events.emit('fatal', 'unsupported'); // old client: ignored
    expect(controller.getSnapshot().unsupported).toBe(false);
  });

  it('marks direct H.264 unsupported without WebCodecs', async () => {
    const { controller, direct } = setup();
    controller.start('direct_h264');
    await vi.advanceTimersByTimeAsync(0);
    direct[0]?.events.emit('fatal', 'unsupported');
    expect(controller.getSnapshot().unsupported).toBe(true);
  });

  it('stop stops the client; a reconnect restarts one that shows nothing', async () => {
    const { controller, webrtc } = setup();
    controller.start('webrtc');
    await vi.advanceTimersByTimeAsync(0);
    webrtc[0]?.set('error');
    controller.reconnected();
    await vi.advanceTimersByTimeAsync(0);
    expect(webrtc).toHaveLength(2);
    webrtc[1]?.set('active');
    controller.reconnected();
    await vi.advanceTimersByTimeAsync(0);
    expect(webrtc).toHaveLength(2);
    controller.stop();
    expect(webrtc[1]?.stops).toBe(1);
    expect(controller.getSnapshot()).toMatchObject({ mode: null, state: 'idle' });
  });

  it('retries when the client code could not be loaded', async () => {
    let fails = 1;
    const direct: FakeDirect[] = [];
    const controller = new VideoController({
      createWebRtc: () => Promise.reject(new Error('unused')),
      createDirect: async () => {
        if (fails-- > 0) throw new Error('chunk failed');
        const c = new FakeDirect();
        direct.push(c);
        return c;
      },
    });
    controller.start('direct_h264');
    await vi.advanceTimersByTimeAsync(0);
    expect(controller.getSnapshot().state).toBe('error');
    await vi.advanceTimersByTimeAsync(CLIENT_LOAD_RETRY_MS);
    expect(direct).toHaveLength(1);
    expect(controller.getSnapshot().state).toBe('connecting');
  });
});

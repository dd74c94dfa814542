import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CONNECT_TIMEOUT_MS, GATEWAY_RETRY_MS, STREAM_ERROR_RETRY_MS } from './janus-stream';
import { ANSWER, FakeHandle, OFFER, firstFrame, negotiate, setup } from './janus-stream-test-kit';

describe('JanusStream', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('runs features → watch → answer/start → active, with the orientation and video only', async () => {
    const { runtime, stream, states } = setup();
    expect(stream.getState()).toBe('idle');
    // 'answered' once the answer went out with `start` (the first frame preview waits for it)
    let answered = 0;
    stream.on('answered', () => (answered += 1));
    stream.start();
    expect(stream.getState()).toBe('connecting');
    const handle = await negotiate(runtime);
    expect(answered).toBe(1);

    const session = runtime.last();
    expect(session.options.server).toBe('ws://device.test/janus/ws?auth_token=abc');
    expect(session.options.destroyOnUnload).toBe(false);
    expect(session.plugin.plugin).toBe('janus.plugin.ustreamer');
    expect(session.plugin.opaqueId).toMatch(/^oid-[A-Za-z0-9]{12}$/);
    expect(handle.sent).toEqual([
      { message: { request: 'features' } },
      {
        message: {
          request: 'watch',
          params: { orientation: 90, audio: false, video: true, mic: false, camera: false },
        },
      },
      { message: { request: 'start' }, jsep: ANSWER },
    ]);
    expect(handle.answers[0]?.jsep).toBe(OFFER);
    expect(handle.answers[0]?.tracks).toEqual([
      { type: 'video', capture: false, recv: true, add: true },
    ]);
    expect(stream.getState()).toBe('watching');

    // No frame decoded yet: still watching.
    handle.pc.setVideo(500, 0, 900);
    await vi.advanceTimersByTimeAsync(250);
    expect(stream.getState()).toBe('watching');
    await firstFrame(handle);
    expect(stream.getState()).toBe('active');
    expect(states).toEqual(['connecting', 'attached', 'watching', 'active']);
  });

  it('opens the "hid" data channel after the answer and exposes it as inputChannel', async () => {
    const { runtime, stream } = setup();
    stream.start();
    const handle = await negotiate(runtime);
    const channel = handle.pc.channels[0];
    expect(channel?.label).toBe('hid');
    expect(channel?.init).toEqual({ ordered: true });
    expect(channel?.binaryType).toBe('arraybuffer');
    const changes = vi.fn();
    stream.inputChannel.subscribe(changes);
    expect(stream.inputChannel.isOpen).toBe(false);
    expect(stream.inputChannel.send(new Uint8Array([3, 0, 0, 0, 0]))).toBe(false);
    channel?.open();
    expect(changes).toHaveBeenCalled();
    expect(stream.inputChannel.isOpen).toBe(true);
    expect(stream.inputChannel.send(new Uint8Array([3, 0, 0, 0, 0]))).toBe(true);
    expect([...new Uint8Array(channel?.sent[0] ?? new ArrayBuffer(0))]).toEqual([3, 0, 0, 0, 0]);
  });

  it('takes ICE servers from TURN; without uris the gateway STUN; else none', async () => {
    const withTurn = setup({ username: 'u', password: 'p', ttl: 60, uris: ['turn:a:3478'] });
    withTurn.stream.start();
    await negotiate(withTurn.runtime);
    expect(withTurn.runtime.last().options.iceServers).toEqual([
      { urls: ['turn:a:3478'], username: 'u', credential: 'p' },
    ]);

    const stunOnly = setup({ username: '', password: '', ttl: 60, uris: [] });
    stunOnly.stream.start();
    await vi.advanceTimersByTimeAsync(0);
    const session = stunOnly.runtime.last();
    const servers = session.options.iceServers;
    expect(servers).toEqual([]);
    session.options.success();
    session.plugin.success(new FakeHandle());
    session.plugin.onmessage({
      result: { status: 'features', features: { ice: { url: 'stun:gw:3478' } } },
    });
    // Same array: janus.js keeps the reference it was given and reads it at answer time.
    expect(session.options.iceServers).toBe(servers);
    expect(servers).toEqual([{ urls: 'stun:gw:3478' }]);

    const offline = setup(null);
    offline.stream.start();
    await negotiate(offline.runtime);
    expect(offline.runtime.last().options.iceServers).toEqual([]);
  });

  it('on a plugin error shows a message and retries stop + watch after 2 s', async () => {
    const { runtime, stream, messages } = setup();
    stream.start();
    const handle = await negotiate(runtime);
    await firstFrame(handle);
    const before = handle.sent.length;

    runtime.last().plugin.onmessage({ ustreamer: 'event', error_code: 503, error: 'No source' });
    expect(messages).toEqual([{ code: 503, text: 'No source' }]);
    expect(stream.getState()).toBe('error');
    expect(stream.inputChannel.isOpen).toBe(false);

    await vi.advanceTimersByTimeAsync(STREAM_ERROR_RETRY_MS - 1);
    expect(handle.sent.length).toBe(before);
    await vi.advanceTimersByTimeAsync(1);
    expect(handle.hangups).toEqual([false]); // the dead peer connection goes locally
    expect(handle.requests().slice(before)).toEqual(['stop', 'watch']);
    expect(stream.getState()).toBe('watching');
    expect(runtime.sessions).toHaveLength(1); // same session

    // The answer to our own stop is not the server stopping.
    runtime.last().plugin.onmessage({ result: { status: 'stopped' } });
    await vi.advanceTimersByTimeAsync(STREAM_ERROR_RETRY_MS * 2);
    expect(handle.requests().slice(before)).toEqual(['stop', 'watch']);
  });

  it('watches again 2 s after a stop it did not ask for', async () => {
    const { runtime, stream } = setup();
    stream.start();
    const handle = await negotiate(runtime);
    await firstFrame(handle);
    runtime.last().plugin.onmessage({ result: { status: 'stopped' } });
    expect(stream.getState()).toBe('attached');
    await vi.advanceTimersByTimeAsync(STREAM_ERROR_RETRY_MS);
    expect(handle.requests().slice(-2)).toEqual(['stop', 'watch']);
  });

  it('retries with a new session 5 s after the gateway connection ends', async () => {
    const { runtime, stream } = setup();
    stream.start();
    const handle = await negotiate(runtime);
    await firstFrame(handle);
    const first = runtime.last();

    first.options.error('Lost connection to the server (is it down?)');
    expect(stream.getState()).toBe('error');
    expect(first.destroyed).toBe(1);
    await vi.advanceTimersByTimeAsync(GATEWAY_RETRY_MS - 1);
    expect(runtime.sessions).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(runtime.sessions).toHaveLength(2);
    expect(stream.getState()).toBe('connecting');

    // Late callbacks of the old session change nothing.
    first.plugin.onmessage({ error_code: 500, error: 'late' });
    first.options.error('late');
    expect(stream.getState()).toBe('connecting');
    await negotiate(runtime);
    expect(stream.getState()).toBe('watching');
  });

  it('also retries 5 s after a session could not be created (gateway down)', async () => {
    const { runtime, stream } = setup();
    stream.start();
    await vi.advanceTimersByTimeAsync(0);
    runtime.last().options.error('Error connecting to the Janus WebSockets server');
    expect(stream.getState()).toBe('error');
    await vi.advanceTimersByTimeAsync(GATEWAY_RETRY_MS);
    expect(runtime.sessions).toHaveLength(2);
  });

  it('gives up on a session that does not attach within 10 s (never hangs offline)', async () => {
    const { runtime, stream } = setup();
    stream.start();
    await vi.advanceTimersByTimeAsync(CONNECT_TIMEOUT_MS);
    expect(stream.getState()).toBe('error');
    expect(runtime.last().destroyed).toBe(1);
    await vi.advanceTimersByTimeAsync(GATEWAY_RETRY_MS);
    expect(runtime.sessions).toHaveLength(2);
  });

  it('tears the session down when the peer connection fails, and reconnects after 5 s', async () => {
    const { runtime, stream } = setup();
    stream.start();
    const handle = await negotiate(runtime);
    await firstFrame(handle);
    const session = runtime.last();
    const channel = handle.pc.channels[0];
    channel?.open();

    session.plugin.connectionState('failed');
    expect(stream.getState()).toBe('error');
    expect(session.destroyed).toBe(1);
    expect(stream.inputChannel.isOpen).toBe(false);
    expect(channel?.readyState).toBe('closed');
    await vi.advanceTimersByTimeAsync(GATEWAY_RETRY_MS);
    expect(runtime.sessions).toHaveLength(2);
  });

  it('stop sends stop and hangs up, destroys the session and retries nothing', async () => {
    const { runtime, stream } = setup();
    stream.start();
    const handle = await negotiate(runtime);
    await firstFrame(handle);
    const session = runtime.last();

    stream.stop();
    expect(handle.requests().slice(-1)).toEqual(['stop']);
    expect(handle.hangups).toEqual([true]);
    expect(session.destroyed).toBe(1);
    expect(stream.getState()).toBe('stopped');

    session.options.error('Lost connection to the server (is it down?)');
    session.plugin.connectionState('failed');
    await vi.advanceTimersByTimeAsync(60_000);
    expect(runtime.sessions).toHaveLength(1);
    expect(stream.getState()).toBe('stopped');

    stream.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(runtime.sessions).toHaveLength(2);
  });

  it('reports bitrate and fps every second and relay/p2p every 5 s', async () => {
    const { runtime, stream } = setup();
    const infos: Array<{ bitrateKbps: number; fps: number; connection: string | null }> = [];
    stream.on('info', (i) => infos.push(i));
    stream.start();
    const handle = await negotiate(runtime);
    await firstFrame(handle, ['relay', 'host']); // 10 000 bytes, 1 frame at t=1000
    expect(stream.getInfo().connection).toBe('relay');

    handle.pc.setVideo(260_000, 31, 2_000, ['host', 'srflx']); // +250 kB, +30 frames in 1 s
    await vi.advanceTimersByTimeAsync(1_000);
    expect(stream.getInfo()).toMatchObject({ bitrateKbps: 2000, fps: 30, connection: 'relay' });

    await vi.advanceTimersByTimeAsync(4_000);
    expect(stream.getInfo().connection).toBe('p2p');
    expect(infos.length).toBeGreaterThan(2);
  });

  it('says WebRTC is unsupported instead of retrying', async () => {
    const { runtime, stream } = setup();
    runtime.webrtcSupported = false;
    const fatal = vi.fn();
    stream.on('fatal', fatal);
    stream.start();
    await vi.advanceTimersByTimeAsync(GATEWAY_RETRY_MS * 2);
    expect(fatal).toHaveBeenCalledWith('unsupported');
    expect(runtime.sessions).toHaveLength(0);
    expect(stream.getState()).toBe('error');
  });

  it('passes the remote video track on, and drops it with the session', async () => {
    const { runtime, stream } = setup();
    const tracks: Array<MediaStreamTrack | null> = [];
    stream.on('track', (t) => tracks.push(t));
    stream.start();
    await negotiate(runtime);
    const track = { kind: 'video', id: 'v' } as MediaStreamTrack;
    runtime.last().plugin.onremotetrack(track, 'v', true, { reason: 'created' });
    runtime.last().plugin.onremotetrack(track, 'v', false, { reason: 'mute' });
    expect(stream.getTrack()).toBe(track);
    stream.stop();
    expect(tracks).toEqual([track, null]);
  });
});

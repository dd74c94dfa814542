import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { TurnState } from '@kvm/protocol/streamer';
import type { DataChannelLike } from './input-channel';
import {
  CONNECT_TIMEOUT_MS,
  GATEWAY_RETRY_MS,
  JANUS_STREAM_TRANSITIONS,
  STREAM_ERROR_RETRY_MS,
  JanusStream,
  iceServersFromTurn,
  janusCredentials,
  janusServerUrl,
  stereoOpus,
} from './janus-stream';
import type {
  AttachOptions,
  JanusJsep,
  JanusRuntime,
  JanusSessionOptions,
  JanusTrackOption,
  PeerConnectionLike,
  PluginHandleLike,
  RtpSenderLike,
} from './janus-types';
import type { StreamState } from './stream-types';
import { IllegalTransitionError } from '@kvm/protocol/transitions';

class FakeDataChannel implements DataChannelLike {
  readyState: RTCDataChannelState = 'connecting';
  binaryType: BinaryType = 'blob';
  readonly sent: ArrayBuffer[] = [];
  onopen: ((event: Event) => void) | null = null;
  onclose: ((event: Event) => void) | null = null;
  onerror: ((event: Event) => void) | null = null;
  constructor(
    readonly label: string,
    readonly init: RTCDataChannelInit | undefined,
  ) {}
  send(data: ArrayBuffer): void {
    this.sent.push(data);
  }
  close(): void {
    this.readyState = 'closed';
  }
  open(): void {
    this.readyState = 'open';
    this.onopen?.(new Event('open'));
  }
}

class FakeSender implements RtpSenderLike {
  readonly replaced: Array<MediaStreamTrack | null> = [];
  constructor(public track: MediaStreamTrack | null) {}
  replaceTrack(track: MediaStreamTrack | null): Promise<void> {
    this.replaced.push(track);
    this.track = track;
    return Promise.resolve();
  }
}

class FakePeer implements PeerConnectionLike {
  stats = new Map<string, unknown>();
  readonly channels: FakeDataChannel[] = [];
  readonly senders: FakeSender[] = [];
  getSenders(): readonly RtpSenderLike[] {
    return this.senders;
  }
  getStats(): Promise<ReadonlyMap<string, unknown>> {
    return Promise.resolve(new Map(this.stats));
  }
  createDataChannel(label: string, init?: RTCDataChannelInit): DataChannelLike {
    const channel = new FakeDataChannel(label, init);
    this.channels.push(channel);
    return channel;
  }
  /** inbound-rtp video with these counters, and a selected pair of the given kinds. */
  setVideo(
    bytesReceived: number,
    framesDecoded: number,
    timestamp: number,
    pair: [string, string] = ['host', 'host'],
  ) {
    this.stats = new Map<string, unknown>([
      [
        'in',
        { id: 'in', type: 'inbound-rtp', kind: 'video', bytesReceived, framesDecoded, timestamp },
      ],
      ['t', { id: 't', type: 'transport', selectedCandidatePairId: 'cp' }],
      ['cp', { id: 'cp', type: 'candidate-pair', localCandidateId: 'l', remoteCandidateId: 'r' }],
      ['l', { id: 'l', type: 'local-candidate', candidateType: pair[0] }],
      ['r', { id: 'r', type: 'remote-candidate', candidateType: pair[1] }],
    ]);
  }
}

interface SentMessage {
  message: Record<string, unknown>;
  jsep?: JanusJsep;
}

interface AnswerCall {
  jsep: JanusJsep;
  tracks: JanusTrackOption[];
  customizeSdp?: (jsep: JanusJsep) => void;
  success: (jsep: JanusJsep) => void;
  error: (error: unknown) => void;
}

/** A plugin handle that records what the stream asks janus.js to do. */
class FakeHandle implements PluginHandleLike {
  readonly sent: SentMessage[] = [];
  readonly hangups: boolean[] = [];
  readonly answers: AnswerCall[] = [];
  /** janus.js adds the captured microphone to the peer connection when it answers. */
  addsSenders = true;
  readonly pc = new FakePeer();
  webrtcStuff = { pc: this.pc as PeerConnectionLike | null };
  send(options: { message: Record<string, unknown>; jsep?: JanusJsep }): void {
    this.sent.push({ message: options.message, ...(options.jsep ? { jsep: options.jsep } : {}) });
  }
  createAnswer(options: AnswerCall): void {
    this.answers.push(options);
    for (const t of options.tracks) {
      if (this.addsSenders && typeof t.capture === 'object') {
        this.pc.senders.push(new FakeSender(t.capture));
      }
    }
  }
  hangup(sendRequest?: boolean): void {
    this.hangups.push(sendRequest === true);
  }
  requests(): string[] {
    return this.sent.map((s) => String(s.message['request']));
  }
}

class FakeSession {
  readonly attachments: AttachOptions[] = [];
  destroyed = 0;
  constructor(readonly options: JanusSessionOptions) {}
  attach(options: AttachOptions): void {
    this.attachments.push(options);
  }
  destroy(): void {
    this.destroyed += 1;
  }
  get plugin(): AttachOptions {
    const a = this.attachments.at(-1);
    if (!a) throw new Error('not attached');
    return a;
  }
}

class FakeRuntime implements JanusRuntime {
  readonly sessions: FakeSession[] = [];
  webrtcSupported = true;
  create = (options: JanusSessionOptions) => {
    const session = new FakeSession(options);
    this.sessions.push(session);
    return session;
  };
  last(): FakeSession {
    const s = this.sessions.at(-1);
    if (!s) throw new Error('no session');
    return s;
  }
}

const OFFER: JanusJsep = { type: 'offer', sdp: 'v=0 offer' };
const ANSWER: JanusJsep = { type: 'answer', sdp: 'v=0 answer' };

function setup(
  turn: TurnState | null = null,
  mic: { track: MediaStreamTrack | null } = { track: null },
) {
  const runtime = new FakeRuntime();
  const stream = new JanusStream({
    serverUrl: () => 'ws://device.test/janus/ws?auth_token=abc',
    getTurn: () => Promise.resolve(turn),
    orientation: () => 90,
    micTrack: () => mic.track,
    loadRuntime: () => Promise.resolve(runtime),
  });
  const states: StreamState[] = [];
  stream.on('state', (s) => states.push(s));
  const messages: Array<{ code: number; text: string }> = [];
  stream.on('message', (m) => messages.push(m));
  return { runtime, stream, states, messages };
}

/** Plays the gateway up to the answer; returns the handle. */
async function negotiate(
  runtime: FakeRuntime,
  features: { audio: boolean; mic: boolean } = { audio: false, mic: false },
): Promise<FakeHandle> {
  await vi.advanceTimersByTimeAsync(0);
  const session = runtime.last();
  session.options.success();
  const handle = new FakeHandle();
  session.plugin.success(handle);
  session.plugin.onmessage({ ustreamer: 'event', result: { status: 'features', features } });
  session.plugin.onmessage({ ustreamer: 'event', result: { status: 'started' } }, OFFER);
  handle.answers.at(-1)?.success(ANSWER);
  return handle;
}

/** The first frame is decoded: the stats probe (250 ms) makes the stream active. */
async function firstFrame(handle: FakeHandle, pair: [string, string] = ['host', 'host']) {
  handle.pc.setVideo(10_000, 1, 1_000, pair);
  await vi.advanceTimersByTimeAsync(250);
}

describe('JanusStream', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('runs features → watch → answer/start → active, with the orientation and video only', async () => {
    const { runtime, stream, states } = setup();
    expect(stream.getState()).toBe('idle');
    stream.start();
    expect(stream.getState()).toBe('connecting');
    const handle = await negotiate(runtime);

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

describe('JanusStream state transitions', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  /** Every `from->to` a stream made, read from its state events. */
  function recordMoves(stream: JanusStream, into: Set<string>) {
    let from = stream.getState();
    stream.on('state', (to) => {
      into.add(`${from}->${to}`);
      from = to;
    });
  }

  /** Up to 'attached': the handle is there, the features answer not yet. */
  async function attach(runtime: FakeRuntime): Promise<FakeSession> {
    await vi.advanceTimersByTimeAsync(0);
    const session = runtime.last();
    session.options.success();
    session.plugin.success(new FakeHandle());
    return session;
  }

  const features = { result: { status: 'features', features: {} } };

  // One short life per group of moves; together they must make every move of the map.
  const scenarios: Record<string, (s: ReturnType<typeof setup>) => Promise<void>> = {
    'stopped before it started': async ({ stream }) => {
      stream.stop();
      stream.start();
    },
    'stopped while connecting': async ({ stream }) => {
      stream.start();
      stream.stop();
    },
    'connect timeout, then start() again from error': async ({ stream }) => {
      stream.start();
      await vi.advanceTimersByTimeAsync(CONNECT_TIMEOUT_MS);
      stream.start();
    },
    'stopped while attached': async ({ runtime, stream }) => {
      stream.start();
      await attach(runtime);
      stream.stop();
    },
    'plugin error answering features': async ({ runtime, stream }) => {
      stream.start();
      const session = await attach(runtime);
      session.plugin.onmessage({ error_code: 503, error: 'No source' });
      await vi.advanceTimersByTimeAsync(STREAM_ERROR_RETRY_MS); // error -> watching
    },
    'server stops while watching, stopped while watching': async ({ runtime, stream }) => {
      stream.start();
      const session = await attach(runtime);
      session.plugin.onmessage(features);
      session.plugin.onmessage({ result: { status: 'stopped' } }); // watching -> attached
      await vi.advanceTimersByTimeAsync(STREAM_ERROR_RETRY_MS); // attached -> watching
      stream.stop();
    },
    'peer fails while watching, new session after 5 s': async ({ runtime, stream }) => {
      stream.start();
      const session = await attach(runtime);
      session.plugin.onmessage(features);
      session.plugin.iceState('failed');
      await vi.advanceTimersByTimeAsync(GATEWAY_RETRY_MS); // error -> connecting
    },
    'active, server stops; active, error, stopped from error': async ({ runtime, stream }) => {
      stream.start();
      const handle = await negotiate(runtime);
      await firstFrame(handle);
      runtime.last().plugin.onmessage({ result: { status: 'stopped' } }); // active -> attached
      await vi.advanceTimersByTimeAsync(STREAM_ERROR_RETRY_MS); // attached -> watching
      // The answer to our own stop, then a new offer for the new watch.
      runtime.last().plugin.onmessage({ result: { status: 'stopped' } });
      runtime.last().plugin.onmessage({ result: { status: 'started' } }, OFFER);
      handle.answers.at(-1)?.success(ANSWER);
      handle.pc.setVideo(20_000, 2, 2_000);
      await vi.advanceTimersByTimeAsync(250); // active again
      expect(stream.getState()).toBe('active');
      runtime.last().plugin.webrtcState(false); // active -> error
      stream.stop();
    },
    'stopped while active': async ({ runtime, stream }) => {
      stream.start();
      await firstFrame(await negotiate(runtime));
      stream.stop();
    },
  };

  it('makes every move of JANUS_STREAM_TRANSITIONS and no other', async () => {
    const made = new Set<string>();
    for (const run of Object.values(scenarios)) {
      const s = setup();
      recordMoves(s.stream, made);
      await run(s);
      s.stream.stop();
    }
    const allowed = Object.entries(JANUS_STREAM_TRANSITIONS).flatMap(([from, tos]) =>
      tos.map((to) => `${from}->${to}`),
    );
    expect([...made].sort()).toEqual(allowed.sort());
  });

  it('throws on an illegal move and stays where it was', () => {
    const { stream } = setup();
    // setState is private: only a bug inside the class could ask for idle -> active.
    const internal = stream as unknown as { setState(state: StreamState): void };
    expect(() => internal.setState('active')).toThrow(IllegalTransitionError);
    expect(() => internal.setState('active')).toThrow(
      'JanusStream: illegal state transition idle -> active',
    );
    expect(stream.getState()).toBe('idle');
  });

  it('ignores a features answer it did not ask for (no active -> watching)', async () => {
    const { runtime, stream } = setup();
    stream.start();
    const handle = await negotiate(runtime);
    await firstFrame(handle);
    const before = handle.sent.length;
    runtime.last().plugin.onmessage({ result: { status: 'features', features: {} } });
    expect(stream.getState()).toBe('active');
    expect(handle.sent.length).toBe(before);
  });
});

describe('janus helpers', () => {
  it('builds the gateway URL with the token', () => {
    expect(janusServerUrl({ protocol: 'https:', host: 'kvm:8443' }, 'a b')).toBe(
      'wss://kvm:8443/janus/ws?auth_token=a%20b',
    );
    expect(janusServerUrl({ protocol: 'http:', host: 'kvm' }, null)).toBe('ws://kvm/janus/ws');
  });

  it('builds ICE servers only from non-empty uris', () => {
    expect(iceServersFromTurn(null)).toEqual([]);
    expect(iceServersFromTurn({ username: '', password: '', ttl: 1, uris: ['stun:s'] })).toEqual([
      { urls: ['stun:s'] },
    ]);
  });
});

describe('Janus token and apisecret (SPEC 7)', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('hands janus.js the secret and the session token as the gateway asks', () => {
    expect(janusCredentials({ apisecret: null, token_auth: false }, 'tok')).toEqual({});
    expect(janusCredentials({ apisecret: 's', token_auth: false }, 'tok')).toEqual({
      apisecret: 's',
    });
    expect(janusCredentials({ apisecret: null, token_auth: true }, 'tok')).toEqual({
      token: 'tok',
    });
    expect(janusCredentials({ apisecret: null, token_auth: true }, null)).toEqual({});
  });

  it('creates the session with them, and without them when they cannot be read', async () => {
    for (const [credentials, expected] of [
      [() => Promise.resolve({ apisecret: 's', token: 't' }), { apisecret: 's', token: 't' }],
      [() => Promise.reject(new Error('offline')), {}],
    ] as const) {
      const runtime = new FakeRuntime();
      const stream = new JanusStream({
        serverUrl: () => 'ws://device.test/janus/ws',
        getTurn: () => Promise.resolve(null),
        orientation: () => 0,
        loadRuntime: () => Promise.resolve(runtime),
        credentials,
      });
      stream.start();
      await vi.advanceTimersByTimeAsync(0);
      const options = runtime.last().options;
      expect({ apisecret: options.apisecret, token: options.token }).toEqual({
        apisecret: undefined,
        token: undefined,
        ...expected,
      });
      stream.stop();
    }
  });
});

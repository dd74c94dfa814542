/**
 * The fakes JanusStream's tests share: janus.js (runtime, session, plugin handle), the peer
 * connection with its stats, data channel and senders, and the steps that play the gateway.
 * Test code only (janus-stream*.test.ts).
 */
import { vi } from 'vitest';
import type { TurnState } from '@kvm/protocol/streamer';
import type { DataChannelLike } from './input-channel';
import { JanusStream } from './janus-stream';
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

export class FakeDataChannel implements DataChannelLike {
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

export class FakeSender implements RtpSenderLike {
  readonly replaced: Array<MediaStreamTrack | null> = [];
  constructor(public track: MediaStreamTrack | null) {}
  replaceTrack(track: MediaStreamTrack | null): Promise<void> {
    this.replaced.push(track);
    this.track = track;
    return Promise.resolve();
  }
}

export class FakePeer implements PeerConnectionLike {
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

export interface SentMessage {
  message: Record<string, unknown>;
  jsep?: JanusJsep;
}

export interface AnswerCall {
  jsep: JanusJsep;
  tracks: JanusTrackOption[];
  customizeSdp?: (jsep: JanusJsep) => void;
  success: (jsep: JanusJsep) => void;
  error: (error: unknown) => void;
}

/** A plugin handle that records what the stream asks janus.js to do. */
export class FakeHandle implements PluginHandleLike {
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

export class FakeSession {
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

export class FakeRuntime implements JanusRuntime {
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

export const OFFER: JanusJsep = { type: 'offer', sdp: 'v=0 offer' };
export const ANSWER: JanusJsep = { type: 'answer', sdp: 'v=0 answer' };

export function setup(
  turn: TurnState | null = null,
  mic: { track: MediaStreamTrack | null } = { track: null },
  camera: { track: MediaStreamTrack | null } = { track: null },
) {
  const runtime = new FakeRuntime();
  const stream = new JanusStream({
    serverUrl: () => 'ws://device.test/janus/ws?auth_token=abc',
    getTurn: () => Promise.resolve(turn),
    orientation: () => 90,
    micTrack: () => mic.track,
    cameraTrack: () => camera.track,
    loadRuntime: () => Promise.resolve(runtime),
  });
  const states: StreamState[] = [];
  stream.on('state', (s) => states.push(s));
  const messages: Array<{ code: number; text: string }> = [];
  stream.on('message', (m) => messages.push(m));
  return { runtime, stream, states, messages };
}

/** Plays the gateway up to the answer; returns the handle. */
export async function negotiate(
  runtime: FakeRuntime,
  features: { audio: boolean; mic: boolean } = { audio: false, mic: false },
  offer: JanusJsep = OFFER,
): Promise<FakeHandle> {
  await vi.advanceTimersByTimeAsync(0);
  const session = runtime.last();
  session.options.success();
  const handle = new FakeHandle();
  session.plugin.success(handle);
  session.plugin.onmessage({ ustreamer: 'event', result: { status: 'features', features } });
  session.plugin.onmessage({ ustreamer: 'event', result: { status: 'started' } }, offer);
  handle.answers.at(-1)?.success(ANSWER);
  return handle;
}

/** The first frame is decoded: the stats probe (250 ms) makes the stream active. */
export async function firstFrame(handle: FakeHandle, pair: [string, string] = ['host', 'host']) {
  handle.pc.setVideo(10_000, 1, 1_000, pair);
  await vi.advanceTimersByTimeAsync(250);
}

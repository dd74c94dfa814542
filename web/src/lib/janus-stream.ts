/**
 * WebRTC video through the device's Janus-protocol gateway (`/janus/ws`, plugin
 * `janus.plugin.ustreamer`, wire-protocol.md 3), driven by the official janus.js, unmodified
 * and loaded only when a WebRTC session starts. A plain class with a state machine and typed
 * events; React subscribes (house-style.md).
 *
 *   idle/stopped/error ──start()──▶ connecting ──session+attach──▶ attached ──features──▶
 *   watching ──offer → answer → start; first frame decoded──▶ active
 *
 * Every move is checked against JANUS_STREAM_TRANSITIONS (an illegal one throws in tests).
 *
 * | event                                   | does (SPEC 4)                                    |
 * |-----------------------------------------|--------------------------------------------------|
 * | plugin error (error_code / error)       | info message; error; 2 s later stop + watch      |
 * | server 'stopped' we did not ask for     | attached; 2 s later stop + watch                 |
 * | peer connection / ICE 'failed'          | session torn down; error; new session after 5 s  |
 * | gateway connection ends, not stop()ped  | error; new session after 5 s                     |
 * | no session within 10 s                  | as a gateway end (a hung socket never blocks)    |
 * | stop()                                  | sends stop, hangs up, destroys the session       |
 *
 * While watching, the peer connection's stats are probed every 250 ms for the first decoded
 * frame (that is 'active'); while active, stream info every 1 s and the connection type
 * (relay or p2p, from the selected candidate pair) every 5 s.
 *
 * Sound (issue 14): the watch asks `audio` when the gateway's features say it has sound, and
 * `mic` when it takes a microphone and the console has a microphone track to send; the answer
 * then receives the Opus section and sends the track on it (PiKVM's stream_janus.js does the
 * same, incl. stereo Opus). Every rewatch and new session asks again, so sound comes back with
 * the video. A microphone track that changes while its section is negotiated is swapped in
 * place (replaceTrack, no renegotiation); a first one needs a new offer: stop + watch.
 */
import type { Orientation } from '@kvm/protocol/enums';
import type { TurnState } from '@kvm/protocol/streamer';
import { Emitter } from './emitter';
import { DataChannelInput, INPUT_CHANNEL_LABEL } from './input-channel';
import { checkTransition } from '@kvm/protocol/transitions';
import { loadJanusRuntime } from './janus-loader';
import {
  CONNECT_TIMEOUT_MS,
  GATEWAY_RETRY_MS,
  JANUS_STREAM_TRANSITIONS,
  STREAM_ERROR_RETRY_MS,
} from './janus-stream-timing';
import {
  USTREAMER_PLUGIN,
  errorText,
  iceServersFromTurn,
  randomId,
  stereoOpus,
  type GatewayFeatures,
  type JanusCredentials,
} from './janus-stream-signalling';
import { JanusStreamStats } from './janus-stream-stats';
import { receiveVideoCodecs, type WatchVideoCodec } from './video-codecs';
import type {
  JanusJsep,
  JanusRuntime,
  JanusSessionLike,
  JanusTrackOption,
  PeerConnectionLike,
  PluginHandleLike,
  RtpSenderLike,
} from './janus-types';
import type {
  StreamClient,
  StreamClientEvents,
  StreamFatalReason,
  StreamInfo,
  StreamState,
} from './stream-types';

// The timing and the signalling helpers live beside this file; callers import them from here.
export {
  CONNECTION_TYPE_MS,
  CONNECT_TIMEOUT_MS,
  FIRST_FRAME_PROBE_MS,
  GATEWAY_RETRY_MS,
  JANUS_STREAM_TRANSITIONS,
  STREAM_ERROR_RETRY_MS,
  STREAM_INFO_MS,
} from './janus-stream-timing';
export {
  USTREAMER_PLUGIN,
  iceServersFromTurn,
  iceTransportPolicyFromQuery,
  janusCredentials,
  janusServerUrl,
  stereoOpus,
} from './janus-stream-signalling';
export type { GatewayFeatures, JanusAuthAnswer, JanusCredentials } from './janus-stream-signalling';

export interface JanusStreamEvents extends StreamClientEvents {
  /** The remote video track (null when there is none any more). */
  track: MediaStreamTrack | null;
  /** The remote computer's sound (null when there is none any more). */
  audioTrack: MediaStreamTrack | null;
  /** The gateway's features answer of the current session. */
  features: GatewayFeatures;
  /** The answer to the gateway's offer has been sent (signalling done; ICE and DTLS follow). */
  answered: void;
}

export interface JanusStreamOptions {
  /** Evaluated on every (re)connect, so a new token is picked up. */
  serverUrl: () => string;
  /** The TURN state (GET /api/turn/get_turn or the `turn` event); null when unknown. */
  getTurn: () => Promise<TurnState | null>;
  /** SPEC 3 watch parameter. */
  orientation: () => Orientation;
  /** The microphone track to send, or null; read at every watch and answer. */
  micTrack?: () => MediaStreamTrack | null;
  /**
   * The camera track to send (issue 24: the gadget's webcam), or null; read at every watch and
   * answer. The server offers the camera's section (mid `c`) only where its webcam takes it.
   */
  cameraTrack?: () => MediaStreamTrack | null;
  loadRuntime?: () => Promise<JanusRuntime>;
  /** What a gateway configured with Janus `api_secret` / `token_auth` asks for (SPEC 7). */
  credentials?: () => Promise<JanusCredentials>;
  /** Read at every new session: 'relay' forces the media through TURN. Default 'all'. */
  iceTransportPolicy?: () => RTCIceTransportPolicy;
}

export class JanusStream implements StreamClient {
  readonly kind = 'webrtc' as const;
  /** The "hid" data channel of the current peer connection (issue 4 sends HID frames on it). */
  readonly inputChannel = new DataChannelInput();

  private readonly options: JanusStreamOptions;
  private readonly emitter = new Emitter<JanusStreamEvents>();
  private state: StreamState = 'idle';
  /** Bumped on every teardown: callbacks of an older session see a stale number and do nothing. */
  private generation = 0;
  private session: JanusSessionLike | null = null;
  private handle: PluginHandleLike | null = null;
  /** The array janus.js was given (it keeps the reference). */
  private iceServers: RTCIceServer[] = [];
  /** 'stopped' answers to our own stop requests, not to be taken as the server stopping. */
  private expectedStops = 0;
  private readonly stats = new JanusStreamStats({
    peer: () => this.peer(),
    generation: () => this.generation,
    state: () => this.state,
    activate: () => this.setState('active'),
    emitInfo: (info) => this.emitter.emit('info', info),
  });
  private track: MediaStreamTrack | null = null;
  private audioTrack: MediaStreamTrack | null = null;
  private features: GatewayFeatures | null = null;
  /** What the last watch asked for. */
  private watched = { audio: false, mic: false, camera: false };
  /** Bumped by every watch: the answer to an older offer (a rewatch came between) does nothing. */
  private watchRound = 0;
  /** The answer to the current watch's offer has gone out. */
  private answered = false;
  /** A microphone track came before that answer: renegotiate once it is out. */
  private micPending = false;
  /** The sender of the negotiated microphone section (null: none negotiated). */
  private micSender: RtpSenderLike | null = null;
  /** The sender of the negotiated camera section (null: none negotiated). */
  private cameraSender: RtpSenderLike | null = null;
  /** A camera track came before the answer: renegotiate once it is out. */
  private cameraPending = false;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private connectTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(options: JanusStreamOptions) {
    this.options = options;
  }

  getState = (): StreamState => this.state;

  getInfo = (): StreamInfo => this.stats.info;

  getTrack = (): MediaStreamTrack | null => this.track;

  getAudioTrack = (): MediaStreamTrack | null => this.audioTrack;

  /** The features answer of the current session (null before it). */
  getFeatures = (): GatewayFeatures | null => this.features;

  /**
   * The microphone track (options.micTrack) changed. A negotiated microphone section takes the
   * new track in place; without one, a track to send needs a new offer (stop + watch).
   */
  micChanged(): void {
    const track = this.options.micTrack?.() ?? null;
    if (this.micSender) {
      this.micSender.replaceTrack(track).catch(() => undefined);
      return;
    }
    if (!track || !this.features?.audio || !this.features.mic) return;
    if (this.state === 'watching' && !this.answered) {
      // The offer of this watch may be on its way: a stop + watch now would cross it.
      this.micPending = true;
      return;
    }
    if (this.state === 'watching' || this.state === 'active') {
      this.dropMedia();
      this.setState('attached');
      this.rewatch();
    }
    // attached or error: the scheduled watch asks for it.
  }

  /**
   * The camera track (options.cameraTrack) changed: a negotiated camera section takes it in
   * place (null sends nothing); without one, a track to send needs a new offer (stop + watch).
   */
  cameraChanged(): void {
    const track = this.options.cameraTrack?.() ?? null;
    if (this.cameraSender) {
      this.cameraSender.replaceTrack(track).catch(() => undefined);
      return;
    }
    if (!track) return;
    if (this.state === 'watching' && !this.answered) {
      this.cameraPending = true;
      return;
    }
    if (this.state === 'watching' || this.state === 'active') {
      this.dropMedia();
      this.setState('attached');
      this.rewatch();
    }
  }

  on<K extends keyof JanusStreamEvents>(
    type: K,
    handler: (payload: JanusStreamEvents[K]) => void,
  ): () => void {
    return this.emitter.on(type, handler);
  }

  start(): void {
    if (this.state !== 'idle' && this.state !== 'stopped' && this.state !== 'error') return;
    this.connect();
  }

  /** SPEC 4: stop sends stop and hangs up; the session (and its socket) goes too. */
  stop(): void {
    if (this.state === 'stopped') return;
    const handle = this.handle;
    if (handle) {
      try {
        handle.send({ message: { request: 'stop' } });
        handle.hangup(true);
      } catch {
        // The gateway is gone already: nothing to tell it.
      }
    }
    this.teardown();
    this.setState('stopped');
  }

  /** Asks the gateway for a key frame (the view was hidden, or the picture is corrupt). */
  requestKeyFrame(): void {
    this.send({ request: 'key_required' });
  }

  // --- session -------------------------------------------------------------------------

  private connect(): void {
    this.teardown();
    const gen = this.generation;
    this.setState('connecting');
    this.connectTimer = setTimeout(() => {
      if (gen === this.generation) this.gatewayEnded();
    }, CONNECT_TIMEOUT_MS);
    void this.open(gen);
  }

  private async open(gen: number): Promise<void> {
    let runtime: JanusRuntime;
    let turn: TurnState | null;
    let credentials: JanusCredentials;
    try {
      [runtime, turn, credentials] = await Promise.all([
        (this.options.loadRuntime ?? loadJanusRuntime)(),
        this.options.getTurn().catch(() => null),
        // Unknown: connect without; a gateway that needs them answers 403 and this retries.
        this.options.credentials?.().catch(() => ({})) ?? {},
      ]);
    } catch {
      if (gen === this.generation) this.gatewayEnded(); // The chunk did not load: offline.
      return;
    }
    if (gen !== this.generation) return;
    if (!runtime.webrtcSupported) {
      this.fail('unsupported');
      return;
    }
    this.iceServers = iceServersFromTurn(turn);
    const session = runtime.create({
      server: this.options.serverUrl(),
      iceServers: this.iceServers,
      iceTransportPolicy: this.options.iceTransportPolicy?.() ?? 'all',
      ...credentials,
      ipv6: true,
      // The page going away closes the socket; the gateway cleans up by itself.
      destroyOnUnload: false,
      success: () => {
        if (gen === this.generation) this.attach(gen);
      },
      error: (error) => {
        if (gen !== this.generation) return;
        if (/not supported/i.test(errorText(error))) this.fail('unsupported');
        else this.gatewayEnded();
      },
      destroyed: () => undefined,
    });
    // janus.js reports some errors from inside its constructor (then returns a bare object).
    if (gen === this.generation) this.session = session;
  }

  private attach(gen: number): void {
    const session = this.session;
    if (!session) return;
    const live = () => gen === this.generation;
    session.attach({
      plugin: USTREAMER_PLUGIN,
      opaqueId: `oid-${randomId(12)}`,
      success: (handle) => {
        if (!live()) return;
        this.handle = handle;
        clearTimeout(this.connectTimer);
        this.setState('attached');
        this.send({ request: 'features' });
      },
      error: () => {
        if (live()) this.gatewayEnded();
      },
      onmessage: (message, jsep) => {
        if (live()) this.onMessage(message, jsep);
      },
      onremotetrack: (track, _mid, added, metadata) => {
        if (!live() || (track.kind !== 'video' && track.kind !== 'audio')) return;
        const set = track.kind === 'video' ? this.setTrack : this.setAudioTrack;
        const current = track.kind === 'video' ? this.track : this.audioTrack;
        // Mute and unmute come through here too: only creation and end change the track.
        if (added && (metadata?.reason ?? 'created') === 'created') set(track);
        else if (!added && metadata?.reason === 'ended' && current === track) set(null);
      },
      connectionState: (state) => {
        if (live() && state === 'failed') this.peerFailed();
      },
      iceState: (state) => {
        if (live() && state === 'failed') this.peerFailed();
      },
      webrtcState: (up) => {
        // The gateway hung up a peer connection that was showing video: watch again.
        if (live() && !up && this.state === 'active') this.streamLost(null);
      },
      oncleanup: () => {
        if (!live()) return;
        this.inputChannel.detach();
        this.micSender = null;
        this.cameraSender = null;
        this.setTrack(null);
        this.setAudioTrack(null);
      },
      ondetached: () => {
        if (live()) this.gatewayEnded();
      },
    });
  }

  private onMessage(message: Record<string, unknown>, jsep: JanusJsep | undefined): void {
    const result = message['result'] as
      | { status?: unknown; features?: { ice?: { url?: unknown }; audio?: unknown; mic?: unknown } }
      | undefined;
    if (message['error'] !== undefined || message['error_code'] !== undefined) {
      const code = typeof message['error_code'] === 'number' ? message['error_code'] : 0;
      const text = typeof message['error'] === 'string' ? message['error'] : 'Unknown error';
      this.streamLost({ code, text });
      return;
    }
    const status = result?.status;
    // The answer to the one features request sent on attach; a repeat (none is sent) is ignored.
    if (status === 'features' && this.state === 'attached') {
      // SPEC 7: TURN first; without TURN uris the gateway's STUN, if it names one.
      const url = result?.features?.ice?.url;
      if (this.iceServers.length === 0 && typeof url === 'string' && url !== '') {
        this.iceServers.push({ urls: url });
      }
      const audio = result?.features?.audio === true;
      this.features = { audio, mic: audio && result?.features?.mic === true };
      this.emitter.emit('features', this.features);
      this.watch();
    } else if (status === 'started') {
      // Replies come in order: any 'stopped' for our own stop came before this.
      this.expectedStops = 0;
    } else if (status === 'stopped') {
      if (this.expectedStops > 0) {
        this.expectedStops -= 1;
      } else if (this.state === 'watching' || this.state === 'active') {
        // SPEC 4: 'stopped' means inactive. The server stopped on its own: ask again later.
        this.dropMedia();
        this.setState('attached');
        this.scheduleRewatch();
      }
    }
    if (jsep?.type === 'offer') this.answer(jsep);
  }

  private watch(): void {
    const audio = this.features?.audio === true;
    const mic =
      audio && this.features?.mic === true && (this.options.micTrack?.() ?? null) !== null;
    const camera = (this.options.cameraTrack?.() ?? null) !== null;
    this.watched = { audio, mic, camera };
    this.watchRound += 1;
    this.answered = false;
    this.micPending = false;
    this.cameraPending = false;
    this.send({
      request: 'watch',
      params: {
        orientation: this.options.orientation(),
        audio,
        video: true,
        mic,
        // The browser's camera, for the gadget target's USB webcam (issue 24): the server offers
        // its section only where the webcam can take it.
        camera,
        // what this browser decodes over WebRTC: H.265 where it can (docs/webrtc.md "H.265")
        ...withCodecs(receiveVideoCodecs()),
      },
    });
    this.setState('watching');
  }

  /** SPEC 4: start sends the answer. */
  private answer(offer: JanusJsep): void {
    const handle = this.handle;
    if (!handle) return;
    const gen = this.generation;
    const round = this.watchRound;
    const live = () => gen === this.generation && round === this.watchRound;
    // Video is received only; the sound too, plus the microphone when the watch asked for it.
    const tracks: JanusTrackOption[] = [{ type: 'video', capture: false, recv: true, add: true }];
    const mic = this.watched.mic ? (this.options.micTrack?.() ?? null) : null;
    if (this.watched.audio) {
      tracks.push({ type: 'audio', capture: mic ?? false, recv: true, add: true, dontStop: true });
    }
    // the camera's section, when the server offered it (it may not take a camera)
    const camera =
      this.watched.camera && offer.sdp?.includes('a=mid:c')
        ? (this.options.cameraTrack?.() ?? null)
        : null;
    if (camera) {
      tracks.push({
        type: 'video',
        mid: 'c',
        capture: camera,
        recv: false,
        add: true,
        dontStop: true,
      });
    }
    handle.createAnswer({
      jsep: offer,
      tracks,
      customizeSdp: (jsep) => {
        if (jsep.sdp) jsep.sdp = stereoOpus(jsep.sdp);
      },
      success: (answer) => {
        if (!live()) return;
        this.answered = true;
        if (mic) {
          this.micSender =
            handle.webrtcStuff?.pc?.getSenders?.().find((s) => s.track === mic) ?? null;
        }
        if (camera) {
          this.cameraSender =
            handle.webrtcStuff?.pc?.getSenders?.().find((s) => s.track === camera) ?? null;
        }
        this.send({ request: 'start' }, answer);
        this.emitter.emit('answered', undefined);
        this.openInputChannel(handle);
        this.stats.startProbe();
        if (this.micPending) {
          this.micPending = false;
          this.micChanged();
        }
        if (this.cameraPending) {
          this.cameraPending = false;
          this.cameraChanged();
        }
      },
      error: (error) => {
        if (live()) this.streamLost({ code: 0, text: errorText(error) });
      },
    });
  }

  private openInputChannel(handle: PluginHandleLike): void {
    const pc = handle.webrtcStuff?.pc;
    if (!pc) return;
    try {
      this.inputChannel.attach(pc.createDataChannel(INPUT_CHANNEL_LABEL, { ordered: true }));
    } catch {
      // No SCTP in the answer (an older gateway): input goes over /api/ws.
    }
  }

  private send(message: Record<string, unknown>, jsep?: JanusJsep): void {
    const handle = this.handle;
    if (!handle) return;
    try {
      handle.send({ message, ...(jsep ? { jsep } : {}), error: () => undefined });
    } catch {
      // Lost gateway: its error callback follows.
    }
  }

  // --- failures --------------------------------------------------------------------------

  /**
   * SPEC 4: a plugin error shows an info message, and after 2 s stop and watch are retried on
   * the same session. `message` null: the stream went away without an error to show.
   */
  private streamLost(message: { code: number; text: string } | null): void {
    if (message) this.emitter.emit('message', message);
    this.dropMedia();
    this.setState('error');
    this.scheduleRewatch();
  }

  private scheduleRewatch(): void {
    clearTimeout(this.retryTimer);
    const gen = this.generation;
    this.retryTimer = setTimeout(() => {
      if (gen === this.generation) this.rewatch();
    }, STREAM_ERROR_RETRY_MS);
  }

  private rewatch(): void {
    const handle = this.handle;
    if (!handle) {
      // Not reached today (the handle goes only in teardown, which also voids this timer); if
      // it were, the session is as good as gone.
      this.gatewayEnded();
      return;
    }
    // The old peer connection goes locally; the gateway's stop ends its side. A new offer then
    // makes a new one (renegotiating the dead one would not work).
    try {
      handle.hangup(false);
    } catch {
      // Nothing to hang up.
    }
    this.expectedStops += 1;
    this.send({ request: 'stop' });
    this.watch();
  }

  /** SPEC 4: a failed peer connection tears the session down; a new one follows after 5 s. */
  private peerFailed(): void {
    this.gatewayEnded();
  }

  /** SPEC 4: the gateway connection ended (not by stop()): a new session after 5 s. */
  private gatewayEnded(): void {
    this.teardown();
    this.setState('error');
    const gen = this.generation;
    this.retryTimer = setTimeout(() => {
      if (gen === this.generation) this.connect();
    }, GATEWAY_RETRY_MS);
  }

  /** No retry: the console decides (falls back to direct H.264). */
  private fail(reason: StreamFatalReason): void {
    this.teardown();
    this.setState('error');
    this.emitter.emit('fatal', reason);
  }

  private teardown(): void {
    this.generation += 1;
    clearTimeout(this.retryTimer);
    clearTimeout(this.connectTimer);
    this.dropMedia();
    const session = this.session;
    this.session = null;
    this.handle = null;
    this.features = null;
    this.expectedStops = 0;
    if (session && typeof session.destroy === 'function') {
      try {
        session.destroy({ cleanupHandles: true, notifyDestroyed: false });
      } catch {
        // A session that never connected has nothing to destroy.
      }
    }
  }

  /** Stops the stats timers and forgets the track and the input channel. */
  private dropMedia(): void {
    this.stats.stopTimers();
    this.inputChannel.detach();
    this.micSender = null;
    this.cameraSender = null;
    this.setTrack(null);
    this.setAudioTrack(null);
    this.stats.clearInfo();
  }

  // --- media ---------------------------------------------------------------------------

  /** The current peer connection (its stats: janus-stream-stats.ts). */
  private peer(): PeerConnectionLike | null {
    return this.handle?.webrtcStuff?.pc ?? null;
  }

  private setTrack = (track: MediaStreamTrack | null): void => {
    if (this.track === track) return;
    this.track = track;
    this.emitter.emit('track', track);
  };

  private setAudioTrack = (track: MediaStreamTrack | null): void => {
    if (this.audioTrack === track) return;
    this.audioTrack = track;
    this.emitter.emit('audioTrack', track);
  };

  private setState(state: StreamState): void {
    if (!checkTransition('JanusStream', JANUS_STREAM_TRANSITIONS, this.state, state)) return;
    this.state = state;
    this.emitter.emit('state', state);
  }
}

/** `codecs` for the watch params, left out when the browser cannot say. */
function withCodecs(codecs: WatchVideoCodec[] | null): { codecs?: WatchVideoCodec[] } {
  return codecs ? { codecs } : {};
}

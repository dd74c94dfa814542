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
import { checkTransition, type TransitionMap } from '@kvm/protocol/transitions';
import { loadJanusRuntime } from './janus-loader';
import type {
  JanusJsep,
  JanusRuntime,
  JanusSessionLike,
  JanusTrackOption,
  PeerConnectionLike,
  PluginHandleLike,
  RtpSenderLike,
} from './janus-types';
import {
  computeStreamRate,
  connectionTypeFromStats,
  inboundVideoFromStats,
  type InboundVideoSample,
} from './rtc-stats';
import type {
  StreamClient,
  StreamClientEvents,
  StreamFatalReason,
  StreamInfo,
  StreamState,
} from './stream-types';

export const USTREAMER_PLUGIN = 'janus.plugin.ustreamer';
/** SPEC 4/9: stop + watch are retried 2 s after a stream error. */
export const STREAM_ERROR_RETRY_MS = 2_000;
/** SPEC 4/9: a gateway that went away is retried after 5 s (a failed PC likewise). */
export const GATEWAY_RETRY_MS = 5_000;
/** SPEC 4/9: stream info refresh and connection-type poll. */
export const STREAM_INFO_MS = 1_000;
export const CONNECTION_TYPE_MS = 5_000;
/** How often the stats are looked at for the first decoded frame. */
export const FIRST_FRAME_PROBE_MS = 250;
/** A session that is not attached by then counts as a gateway end. */
export const CONNECT_TIMEOUT_MS = 10_000;

/**
 * The moves JanusStream makes (stream-types.ts says what each state means). stop() may come
 * in any state; after it only start() moves.
 */
export const JANUS_STREAM_TRANSITIONS: TransitionMap<StreamState> = {
  idle: ['connecting', 'stopped'],
  // Attached, or the session failed / timed out / WebRTC is unsupported.
  connecting: ['attached', 'error', 'stopped'],
  // The features answer starts the watch; a plugin error or a lost gateway is an error.
  attached: ['watching', 'error', 'stopped'],
  // First frame decoded; the server stopped on its own (attached, rewatch in 2 s); an error.
  watching: ['active', 'attached', 'error', 'stopped'],
  active: ['attached', 'error', 'stopped'],
  // A new session (start(), or 5 s after a gateway end), or stop + watch on the same one.
  error: ['connecting', 'watching', 'stopped'],
  stopped: ['connecting'],
};

/** `wss://host/janus/ws?auth_token=…` (WebSockets cannot carry the Token header). */
export function janusServerUrl(
  location: { protocol: string; host: string },
  token: string | null,
): string {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const query = token ? `?auth_token=${encodeURIComponent(token)}` : '';
  return `${scheme}//${location.host}/janus/ws${query}`;
}

/**
 * ICE servers from the TURN state (SPEC 7): one entry with every uri, with the credentials when
 * there are some. No uris: none (the gateway's features.ice.url may add one later).
 */
export function iceServersFromTurn(turn: TurnState | null | undefined): RTCIceServer[] {
  const uris = (turn?.uris ?? []).filter((u) => typeof u === 'string' && u !== '');
  if (uris.length === 0) return [];
  const server: RTCIceServer = { urls: uris };
  if (turn?.username) {
    server.username = turn.username;
    server.credential = turn.password;
  }
  return [server];
}

function randomId(length: number): string {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let out = '';
  for (let i = 0; i < length; i += 1) out += chars.charAt(Math.floor(Math.random() * chars.length));
  return out;
}

function errorText(error: unknown): string {
  if (typeof error === 'string') return error;
  if (error instanceof Error) return error.message;
  return 'Unknown error';
}

export interface JanusStreamEvents extends StreamClientEvents {
  /** The remote video track (null when there is none any more). */
  track: MediaStreamTrack | null;
  /** The remote computer's sound (null when there is none any more). */
  audioTrack: MediaStreamTrack | null;
  /** The gateway's features answer of the current session. */
  features: GatewayFeatures;
}

/** What the gateway's `features` answer says about sound (wire-protocol.md 3.2). */
export interface GatewayFeatures {
  audio: boolean;
  mic: boolean;
}

/** PiKVM's customizeSdp: the answer asks for stereo Opus (the offer's sound is stereo). */
export function stereoOpus(sdp: string): string {
  return sdp.includes('stereo=1') ? sdp : sdp.replace('useinbandfec=1', 'useinbandfec=1;stereo=1');
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
  loadRuntime?: () => Promise<JanusRuntime>;
  /** What a gateway configured with Janus `api_secret` / `token_auth` asks for (SPEC 7). */
  credentials?: () => Promise<JanusCredentials>;
}

/** Janus `token` / `apisecret` for janus.js; absent members are not sent. */
export interface JanusCredentials {
  token?: string;
  apisecret?: string;
}

/** `GET /api/janus/auth` (docs/api.md). */
export interface JanusAuthAnswer {
  apisecret: string | null;
  token_auth: boolean;
}

/** What janus.js is given: the secret when the gateway has one, the session token when asked. */
export function janusCredentials(answer: JanusAuthAnswer, token: string | null): JanusCredentials {
  return {
    ...(answer.apisecret !== null ? { apisecret: answer.apisecret } : {}),
    ...(answer.token_auth && token ? { token } : {}),
  };
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
  private info: StreamInfo = { bitrateKbps: 0, fps: 0, connection: null };
  private lastSample: InboundVideoSample | null = null;
  private lastSampleAt = 0;
  private track: MediaStreamTrack | null = null;
  private audioTrack: MediaStreamTrack | null = null;
  private features: GatewayFeatures | null = null;
  /** What the last watch asked for. */
  private watched = { audio: false, mic: false };
  /** Bumped by every watch: the answer to an older offer (a rewatch came between) does nothing. */
  private watchRound = 0;
  /** The answer to the current watch's offer has gone out. */
  private answered = false;
  /** A microphone track came before that answer: renegotiate once it is out. */
  private micPending = false;
  /** The sender of the negotiated microphone section (null: none negotiated). */
  private micSender: RtpSenderLike | null = null;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private connectTimer: ReturnType<typeof setTimeout> | undefined;
  private probeTimer: ReturnType<typeof setInterval> | undefined;
  private infoTimer: ReturnType<typeof setInterval> | undefined;
  private typeTimer: ReturnType<typeof setInterval> | undefined;

  constructor(options: JanusStreamOptions) {
    this.options = options;
  }

  getState = (): StreamState => this.state;

  getInfo = (): StreamInfo => this.info;

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
    this.watched = { audio, mic };
    this.watchRound += 1;
    this.answered = false;
    this.micPending = false;
    this.send({
      request: 'watch',
      params: {
        orientation: this.options.orientation(),
        audio,
        video: true,
        mic,
        // The browser's camera needs the UVC gadget of the hardware target (issue 14).
        camera: false,
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
        this.send({ request: 'start' }, answer);
        this.openInputChannel(handle);
        this.startProbe();
        if (this.micPending) {
          this.micPending = false;
          this.micChanged();
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
    clearInterval(this.probeTimer);
    clearInterval(this.infoTimer);
    clearInterval(this.typeTimer);
    this.probeTimer = this.infoTimer = this.typeTimer = undefined;
    this.lastSample = null;
    this.inputChannel.detach();
    this.micSender = null;
    this.setTrack(null);
    this.setAudioTrack(null);
    if (this.info.bitrateKbps !== 0 || this.info.fps !== 0 || this.info.connection !== null) {
      this.info = { bitrateKbps: 0, fps: 0, connection: null };
      this.emitter.emit('info', this.info);
    }
  }

  // --- stats -----------------------------------------------------------------------------

  private peer(): PeerConnectionLike | null {
    return this.handle?.webrtcStuff?.pc ?? null;
  }

  private startProbe(): void {
    clearInterval(this.probeTimer);
    const gen = this.generation;
    this.probeTimer = setInterval(() => {
      const pc = this.peer();
      if (!pc) return;
      pc.getStats().then(
        (report) => {
          if (gen !== this.generation || this.state !== 'watching') return;
          const sample = inboundVideoFromStats(report);
          if (sample && sample.framesDecoded > 0) this.becomeActive(sample);
        },
        () => undefined,
      );
    }, FIRST_FRAME_PROBE_MS);
  }

  private becomeActive(sample: InboundVideoSample): void {
    clearInterval(this.probeTimer);
    this.probeTimer = undefined;
    this.lastSample = sample;
    this.lastSampleAt = sample.timestamp ?? Date.now();
    this.setState('active');
    const gen = this.generation;
    this.infoTimer = setInterval(() => {
      if (gen === this.generation) void this.refreshInfo(gen);
    }, STREAM_INFO_MS);
    this.typeTimer = setInterval(() => {
      if (gen === this.generation) void this.refreshConnectionType(gen);
    }, CONNECTION_TYPE_MS);
    void this.refreshConnectionType(gen);
  }

  private async refreshInfo(gen: number): Promise<void> {
    const pc = this.peer();
    if (!pc) return;
    const report = await pc.getStats().catch(() => null);
    if (!report || gen !== this.generation) return;
    const sample = inboundVideoFromStats(report);
    if (!sample) return;
    const at = sample.timestamp ?? Date.now();
    const rate = computeStreamRate(this.lastSample, sample, at - this.lastSampleAt);
    this.lastSample = sample;
    this.lastSampleAt = at;
    this.setInfo({ ...this.info, ...rate });
  }

  private async refreshConnectionType(gen: number): Promise<void> {
    const pc = this.peer();
    if (!pc) return;
    const report = await pc.getStats().catch(() => null);
    if (!report || gen !== this.generation) return;
    const connection = connectionTypeFromStats(report);
    if (connection !== this.info.connection) this.setInfo({ ...this.info, connection });
  }

  private setInfo(info: StreamInfo): void {
    this.info = info;
    this.emitter.emit('info', info);
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

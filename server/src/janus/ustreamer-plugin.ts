/**
 * `janus.plugin.ustreamer` as kvmd's clients know it (wire-protocol.md 3.2, docs/webrtc.md):
 * `features`, `watch` (the server offers), `start` (with the browser's answer), `stop` and
 * `key_required`. Each handle has at most one viewer: a werift peer connection and the video
 * forwarder that feeds it. werift loads with the first viewer (webrtc.ts).
 *
 * Sound (issue 14): `watch` with `audio: true` adds the Opus section when the target has sound;
 * the viewer then listens to the audio hub from the answer on, each packet packetised with its
 * own SSRC. `mic: true` makes the section `sendrecv` when the microphone is enabled and the
 * target takes one; the browser's RTP goes to the microphone sink. `camera: true` adds a
 * recvonly VP8 section (mid `c`) when the target's webcam can take it (the gadget's UVC
 * function, issue 24); the browser's RTP goes to the camera input, and its key frames are asked
 * for with RTCP PLI. Elsewhere `camera` is ignored (the console says why).
 *
 * Video codec (issue 28, codecs.ts): `watch` with `codecs` listing `h265` (our console sends the
 * browser's receive codecs) gets an offer with H265 before H264 where the device encodes H.265;
 * the answer picks, and an H265 viewer's forwarder takes the H.265 feed (media/hevc-feed.ts).
 *
 * Viewers are counted from what `viewers` holds: one entry per handle from the start of its
 * `watch` (the offer is being built) until its teardown, so concurrent watches are bounded too.
 */
import type { AudioPacket } from '../media/audio-hub';
import { OpusPacketizer } from '../media/opus-rtp';
import type { VideoFeed } from '../media/types';
import type { Logger } from '../log';
import { TokenBucket } from '../ws/socket-guard';
import type { JanusPeer } from './peer';
import {
  IcePortsExhaustedError,
  offeredProfileLevelId,
  type CandidateInit,
  type IceNetworkConfig,
  type IceServerConfig,
} from './peer-params';
import type { JanusPlugin, PluginHandle, PluginSocket } from './plugin';
import {
  JanusErrorCode,
  JanusRequestError,
  USTREAMER_PLUGIN,
  UstreamerError,
  isRecord,
  type Jsep,
  type UstreamerEventData,
} from './protocol';
import { VideoForwarder } from './video-forwarder';
import { browserVideoCodecs, offeredVideoCodecs } from './codecs';
import { loadPeerModule } from './webrtc';

/** The sound both ways as the plugin needs it (services/audio/audio-service.ts). */
export interface JanusAudio {
  /** `features.audio` and `features.mic` (mic: enabled and available). */
  features(): { audio: boolean; mic: boolean };
  /** Receives the remote computer's sound until the returned function is called. */
  listen(fn: (p: AudioPacket) => void): () => void;
  /** One RTP packet of a viewer's microphone. */
  micRtp(sender: string, rtp: Buffer): void;
  /** The viewer's peer is gone: its microphone stops. */
  micGone(sender: string): void;
}

export interface UstreamerPluginDeps {
  feed: VideoFeed;
  /**
   * The same picture in H.265 (media/hevc-feed.ts), for viewers whose browser takes it
   * (codecs.ts); none: H.264 only.
   */
  h265Feed?: (VideoFeed & { available?: () => Promise<boolean> }) | null;
  /** ICE servers for the server's side; `[]` offline and in tests. Read at each `watch`. */
  iceServers: () => readonly IceServerConfig[];
  /** `webrtc.port_range` and `webrtc.nat_1to1_ips` (none: any port, own addresses). */
  ice?: IceNetworkConfig;
  /** `result.features` of the `features` status, e.g. `janusFeatures(iceServers())`. */
  features: () => object;
  /** A binary input frame `[op][payload]` (ops 1-5, wire-protocol.md 2.8) from a data channel. */
  onInput: (sessionKey: string, data: Buffer) => void;
  /** The peer behind `sessionKey` is gone: release whatever it holds pressed. */
  onViewerGone: (sessionKey: string) => void;
  log: Logger;
  /** At most this many live peer connections over all sessions. */
  maxPeers?: number;
  /** The target's sound; none: `audio`/`mic` are never offered. */
  audio?: JanusAudio;
  /** The gadget's webcam (services/camera/camera-input.ts); none: `camera` is never offered. */
  camera?: JanusCamera | null;
}

/** The browser's camera as the plugin needs it (services/camera/camera-input.ts). */
export interface JanusCamera {
  /** The webcam can take a camera now. */
  available(): boolean;
  /** A viewer's peer has the camera section; `keyFrame` asks its browser for a key frame. */
  open(sender: string, keyFrame: () => void): void;
  /** One RTP packet of the viewer's camera. */
  rtp(sender: string, packet: Buffer): void;
  /** The viewer's peer is gone. */
  gone(sender: string): void;
}

const DEFAULT_MAX_PEERS = 16;
/** Peer connections one socket may hold, so one client cannot take every viewer slot. */
export const MAX_PEERS_PER_SOCKET = 4;
/** `watch` requests per socket (each builds a werift peer: certificates, UDP sockets). */
export const WATCHES_PER_SECOND = 1;
export const WATCH_BURST = 4;

/** `features` as the ustreamer plugin of kvmd reports them; `ice.url` only with a STUN url. */
export function janusFeatures(
  iceServers: readonly IceServerConfig[],
  opts: { audio?: boolean; mic?: boolean } = {},
): { audio: boolean; mic: boolean; ice?: { url: string } } {
  const urls = iceServers.flatMap((s) => (Array.isArray(s.urls) ? s.urls : [s.urls]));
  const stun = urls.find((u) => /^stuns?:/.test(u));
  return {
    audio: opts.audio ?? false,
    mic: opts.mic ?? false,
    ...(stun ? { ice: { url: stun } } : {}),
  };
}

/** One handle's viewer: `peer` is null while the offer is being built. */
interface Viewer {
  /** The socket the viewer is counted against (a `claim` may move the session later). */
  readonly socket: PluginSocket;
  readonly watchAt: number;
  peer: JanusPeer | null;
  forwarder: VideoForwarder | null;
  /** Stops the viewer's listening to the audio hub (set once DTLS is up). */
  unlisten: (() => void) | null;
  /** The offer has the Opus section / it is sendrecv. */
  audio: boolean;
  mic: boolean;
  /** The offer has the camera's section. */
  camera: boolean;
  key: string;
}

export class UstreamerPlugin implements JanusPlugin {
  readonly name = USTREAMER_PLUGIN;
  readonly info = { name: 'ustreamer', version_string: 'kvm' } as const;
  private readonly viewers = new Map<PluginHandle, Viewer>();
  private readonly watchBuckets = new WeakMap<PluginSocket, TokenBucket>();
  private readonly maxPeers: number;
  private peerSeq = 0;
  private closed = false;

  constructor(private readonly deps: UstreamerPluginDeps) {
    this.maxPeers = deps.maxPeers ?? DEFAULT_MAX_PEERS;
  }

  get peerCount(): number {
    return this.viewers.size;
  }

  /** Viewers counted against `socket`. */
  peersOf(socket: PluginSocket): number {
    let n = 0;
    for (const v of this.viewers.values()) if (v.socket === socket) n += 1;
    return n;
  }

  attach(): void {
    // Nothing until `watch`.
  }

  admit(handle: PluginHandle, body: Record<string, unknown>, jsep: Jsep | null): void {
    // An answer needs our offer, or a `watch` still building it ahead in the queue.
    if (jsep && !this.viewers.get(handle)?.peer && handle.pending === 0) {
      throw new JanusRequestError(
        JanusErrorCode.unexpectedAnswer,
        'Unexpected ANSWER (did we offer?)',
      );
    }
    if (body['request'] === 'watch' && !this.watchBucket(handle.socket).take()) {
      throw new JanusRequestError(
        JanusErrorCode.unknown,
        'Too many watch requests, try again later',
      );
    }
  }

  async message(
    handle: PluginHandle,
    body: Record<string, unknown>,
    jsep: Jsep | null,
  ): Promise<void> {
    const request = body['request'];
    if (request === undefined) return pushError(handle, UstreamerError.requestMissing);
    if (typeof request !== 'string') return pushError(handle, UstreamerError.requestNotString);
    switch (request) {
      case 'features':
        return pushStatus(handle, 'features', { features: this.deps.features() });
      case 'watch':
        return this.watch(handle, isRecord(body['params']) ? body['params'] : {});
      case 'start':
        return this.start(handle, jsep);
      case 'stop':
        await this.teardown(handle, 'Stopped', true);
        return pushStatus(handle, 'stopped');
      case 'key_required': {
        // No reply (wire-protocol.md 3.2).
        const forwarder = this.viewers.get(handle)?.forwarder;
        if (forwarder) forwarder.requestKeyFrame();
        else this.deps.feed.requestKeyFrame();
        return;
      }
      default:
        return pushError(handle, UstreamerError.notImplemented);
    }
  }

  trickle(handle: PluginHandle, candidates: readonly unknown[]): void {
    const peer = this.viewers.get(handle)?.peer;
    if (!peer) return;
    for (const c of candidates) {
      if (!isRecord(c) || c['completed'] === true) continue;
      if (typeof c['candidate'] !== 'string') continue;
      peer.addCandidate(c as CandidateInit);
    }
  }

  hangup(handle: PluginHandle, reason: string): Promise<void> {
    return this.teardown(handle, reason, true);
  }

  detach(handle: PluginHandle, notify: boolean): Promise<void> {
    return this.teardown(handle, 'Detach', notify);
  }

  close(): void {
    this.closed = true;
  }

  private async watch(handle: PluginHandle, params: Record<string, unknown>): Promise<void> {
    // A new watch replaces the handle's peer: janus.js cannot take a second offer on its PC.
    await this.teardown(handle, 'Renegotiation', true);
    if (this.viewers.size >= this.maxPeers) {
      return pushError(handle, [503, 'Too many viewers']);
    }
    // Counted from the start of the offer: concurrent watches on several handles all wait here.
    const socket = handle.socket;
    if (this.peersOf(socket) >= MAX_PEERS_PER_SOCKET) {
      return pushError(handle, [503, 'Too many viewers on this connection']);
    }
    // `orientation` (CVO) is accepted and ignored: the picture is sent as captured. GL clients
    // split audio off with `video: false`. `camera` only where the webcam can take it.
    const video = params['video'] !== false;
    const features = this.deps.audio?.features() ?? { audio: false, mic: false };
    const audio = params['audio'] === true && features.audio;
    const mic = audio && params['mic'] === true && features.mic;
    const camera = params['camera'] === true && (this.deps.camera?.available() ?? false);
    const viewer: Viewer = {
      socket,
      watchAt: performance.now(),
      peer: null,
      forwarder: null,
      unlisten: null,
      audio,
      mic,
      camera,
      key: `janus:${handle.sessionId}:${handle.id}:${++this.peerSeq}`,
    };
    this.viewers.set(handle, viewer);
    let peer: JanusPeer;
    try {
      const browserCodecs = browserVideoCodecs(params['codecs']);
      const { JanusPeer } = await loadPeerModule();
      peer = await JanusPeer.create({
        iceServers: this.deps.iceServers(),
        video,
        audio,
        mic,
        camera,
        profileLevelId: offeredProfileLevelId(this.deps.feed.profileLevelId),
        // the browser's receive codecs (our console sends them): H.265 first where it decodes it
        videoCodecs: offeredVideoCodecs(browserCodecs, await this.canH265(browserCodecs)),
        ...(this.deps.ice ? { ice: this.deps.ice } : {}),
        log: this.deps.log,
      });
    } catch (err) {
      this.viewers.delete(handle);
      this.deps.log.warn({ err: String(err) }, 'janus: offer failed');
      if (err instanceof IcePortsExhaustedError) {
        return pushError(handle, [503, "Can't create the offer: no free WebRTC port"]);
      }
      return pushError(handle, [503, "Can't create the offer"]);
    }
    if (handle.detached || this.closed) {
      this.viewers.delete(handle);
      await peer.close();
      return;
    }
    const { key, watchAt } = viewer;
    viewer.peer = peer;
    const forwarder = video
      ? new VideoForwarder(this.deps.feed, (pkt, at) => peer.sendRtp(pkt, at), peer.videoSsrc)
      : null;
    viewer.forwarder = forwarder;
    peer.on('mediaReady', () => {
      forwarder?.setReady();
      // listening starts with DTLS: packets before it would be lost, the talkspurt's marker too
      const sound = this.deps.audio;
      if (viewer.audio && sound && !viewer.unlisten && this.viewers.get(handle) === viewer) {
        viewer.unlisten = this.listen(sound, peer);
      }
    });
    peer.on('connected', () => {
      this.deps.log.info(
        { peer: key, ms: Math.round(performance.now() - watchAt) },
        'janus: webrtc up',
      );
      handle.push({ janus: 'webrtcup' });
    });
    peer.on('gone', (reason) => {
      if (this.viewers.get(handle) === viewer) void this.teardown(handle, reason, true);
    });
    // These run inside werift's SCTP/RTCP handling: never let a throw escape into it.
    peer.on('input', (frame) => this.guard('onInput', () => this.deps.onInput(key, frame)));
    peer.on('inputClosed', () => this.guard('onViewerGone', () => this.deps.onViewerGone(key)));
    peer.on('keyFrameRequest', () =>
      this.guard('requestKeyFrame', () => forwarder?.requestKeyFrame()),
    );
    const sound = this.deps.audio;
    if (mic && sound) {
      peer.on('micRtp', (packet) => this.guard('micRtp', () => sound.micRtp(key, packet)));
    }
    const cam = this.deps.camera;
    if (camera && cam) {
      cam.open(key, () => peer.requestCameraKeyFrame());
      peer.on('cameraRtp', (packet) => this.guard('cameraRtp', () => cam.rtp(key, packet)));
    }
    this.deps.log.debug(
      { peer: key, ms: Math.round(performance.now() - watchAt) },
      'janus: offer sent',
    );
    pushStatus(handle, 'started', undefined, { type: 'offer', sdp: peer.offerSdp });
  }

  private async start(handle: PluginHandle, answer: Jsep | null): Promise<void> {
    const viewer = this.viewers.get(handle);
    const peer = viewer?.peer;
    if (answer && viewer && peer && !peer.hasAnswer) {
      try {
        this.deps.log.debug(
          { peer: viewer.key, ms: Math.round(performance.now() - viewer.watchAt) },
          'janus: answer received',
        );
        await peer.applyAnswer(answer.sdp);
      } catch (err) {
        this.deps.log.warn({ err: String(err) }, 'janus: answer refused');
        await this.teardown(handle, 'Bad answer', true);
        return pushError(handle, [JanusErrorCode.jsepInvalidSdp, 'Invalid answer SDP']);
      }
      if (this.viewers.get(handle) !== viewer) return;
      const h265 = this.deps.h265Feed;
      if (peer.videoCodec === 'h265' && h265) viewer.forwarder?.setCodec('h265', h265);
      viewer.forwarder?.start();
    }
    pushStatus(handle, 'started');
  }

  /** Ends the handle's viewer, if it has a built one (an offer in progress ends itself). */
  private async teardown(handle: PluginHandle, reason: string, notify: boolean): Promise<void> {
    const viewer = this.viewers.get(handle);
    const peer = viewer?.peer;
    if (!viewer || !peer) return;
    this.viewers.delete(handle);
    viewer.forwarder?.stop();
    viewer.unlisten?.();
    viewer.unlisten = null;
    if (viewer.mic) this.guard('micGone', () => this.deps.audio?.micGone(viewer.key));
    if (viewer.camera) this.guard('cameraGone', () => this.deps.camera?.gone(viewer.key));
    peer.removeAllListeners();
    const stats = viewer.forwarder?.stats;
    this.deps.log.debug({ peer: viewer.key, reason, ...stats }, 'janus: peer closed');
    this.guard('onViewerGone', () => this.deps.onViewerGone(viewer.key));
    if (notify && !handle.detached) handle.push({ janus: 'hangup', reason });
    await peer.close();
  }

  /**
   * The viewer's own RTP stream of the hub's packets. After a gap (the encoder restarted) the
   * timestamp jumps by the wall-clock gap, so the browser's jitter buffer stays in step.
   */
  private listen(audio: JanusAudio, peer: JanusPeer): () => void {
    const packetizer = new OpusPacketizer({ ssrc: peer.audioSsrc });
    let last: AudioPacket | null = null;
    try {
      return audio.listen((p) => {
        if (p.resume && last) {
          packetizer.resume(((p.at - last.at) * 48_000) / 1000 - last.samples);
        }
        last = p;
        const rtp = packetizer.packetize(p.data);
        if (rtp) peer.sendAudioRtp(rtp);
      });
    } catch (err) {
      this.deps.log.warn({ err: String(err) }, 'janus: cannot listen to the sound');
      return () => undefined;
    }
  }

  /** The device encodes H.265 and the browser lists it (ffmpeg probed once, on first need). */
  private async canH265(browser: readonly string[]): Promise<boolean> {
    const feed = this.deps.h265Feed;
    if (!feed || !browser.includes('h265')) return false;
    return feed.available ? feed.available().catch(() => false) : true;
  }

  private watchBucket(socket: PluginSocket): TokenBucket {
    let bucket = this.watchBuckets.get(socket);
    if (!bucket) {
      bucket = new TokenBucket(WATCHES_PER_SECOND, WATCH_BURST);
      this.watchBuckets.set(socket, bucket);
    }
    return bucket;
  }

  private guard(what: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.deps.log.warn({ err: String(err) }, `janus: ${what} failed`);
    }
  }
}

function pushStatus(
  handle: PluginHandle,
  status: string,
  extra?: Record<string, unknown>,
  jsep?: Jsep,
): void {
  const data: UstreamerEventData = { ustreamer: 'event', result: { status, ...extra } };
  handle.push({
    janus: 'event',
    plugindata: { plugin: USTREAMER_PLUGIN, data },
    ...(jsep ? { jsep } : {}),
  });
}

function pushError(handle: PluginHandle, [code, reason]: readonly [number, string]): void {
  const data: UstreamerEventData = { ustreamer: 'event', error_code: code, error: reason };
  handle.push({ janus: 'event', plugindata: { plugin: USTREAMER_PLUGIN, data } });
}

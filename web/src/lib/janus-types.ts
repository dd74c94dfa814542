/**
 * The parts of janus.js (and of the RTCPeerConnection it holds) that the WebRTC client uses.
 * Written here rather than taken from janus.d.ts, which lacks some of the callbacks; the tests
 * pass fakes of exactly these shapes.
 */
import type { DataChannelLike } from './input-channel';

export interface JanusJsep {
  type?: string;
  sdp?: string;
}

export interface JanusTrackOption {
  type: 'video' | 'audio' | 'data';
  /** false: receive only; a track: janus.js sends that track (the microphone). */
  capture: boolean | MediaStreamTrack;
  recv?: boolean;
  add?: boolean;
  /** janus.js leaves the track running at hangup (the console owns the microphone). */
  dontStop?: boolean;
  /** The offer's section this track goes to (the camera's, mid `c`). */
  mid?: string;
}

/** The parts of RTCRtpSender used here. */
export interface RtpSenderLike {
  readonly track: MediaStreamTrack | null;
  replaceTrack(track: MediaStreamTrack | null): Promise<void>;
}

/** The parts of RTCPeerConnection used here. */
export interface PeerConnectionLike {
  getStats(): Promise<ReadonlyMap<string, unknown> | RTCStatsReport>;
  createDataChannel(label: string, init?: RTCDataChannelInit): DataChannelLike;
  getSenders?(): readonly RtpSenderLike[];
}

export interface PluginHandleLike {
  send(options: {
    message: Record<string, unknown>;
    jsep?: JanusJsep;
    success?: (data?: unknown) => void;
    error?: (error: unknown) => void;
  }): void;
  createAnswer(options: {
    jsep: JanusJsep;
    tracks: JanusTrackOption[];
    /** Runs on the answer before it is set (janus.js). */
    customizeSdp?: (jsep: JanusJsep) => void;
    success: (jsep: JanusJsep) => void;
    error: (error: unknown) => void;
  }): void;
  hangup(sendRequest?: boolean): void;
  webrtcStuff?: { pc?: PeerConnectionLike | null };
}

export interface AttachOptions {
  plugin: string;
  opaqueId: string;
  success: (handle: PluginHandleLike) => void;
  error: (error: unknown) => void;
  onmessage: (message: Record<string, unknown>, jsep?: JanusJsep) => void;
  onremotetrack: (
    track: MediaStreamTrack,
    mid: string,
    added: boolean,
    metadata?: { reason?: string },
  ) => void;
  connectionState: (state: string) => void;
  iceState: (state: string) => void;
  webrtcState: (up: boolean, reason?: string) => void;
  oncleanup: () => void;
  ondetached: () => void;
}

export interface JanusSessionLike {
  attach(options: AttachOptions): void;
  destroy(options?: { cleanupHandles?: boolean; notifyDestroyed?: boolean }): void;
}

export interface JanusSessionOptions {
  server: string;
  /** Kept by reference by janus.js: entries pushed later still reach the peer connection. */
  iceServers: RTCIceServer[];
  /** 'relay' keeps only TURN relay candidates (`?ice=relay`, docs/console.md). */
  iceTransportPolicy: RTCIceTransportPolicy;
  ipv6: boolean;
  destroyOnUnload: boolean;
  /** Janus `token` / `apisecret`, sent by janus.js in every request when given (SPEC 7). */
  token?: string;
  apisecret?: string;
  success: () => void;
  error: (error: unknown) => void;
  destroyed: () => void;
}

export interface JanusRuntime {
  create(options: JanusSessionOptions): JanusSessionLike;
  webrtcSupported: boolean;
}

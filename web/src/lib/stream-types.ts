/**
 * What the two video clients (WebRTC through janus.js, direct H.264 through WebCodecs) share, so
 * the console switches between them without caring which one runs.
 *
 * | state      | means                                                             |
 * |------------|-------------------------------------------------------------------|
 * | idle       | created, start() not called                                       |
 * | connecting | opening the socket / the gateway session                          |
 * | attached   | Janus only: plugin handle attached, features asked (or 'stopped') |
 * | watching   | asked for video; no frame decoded yet                             |
 * | active     | frames are being decoded                                          |
 * | error      | something failed; a retry is scheduled (unless `fatal`)           |
 * | stopped    | stop() was called: nothing runs until start()                     |
 */
export type StreamState =
  'idle' | 'connecting' | 'attached' | 'watching' | 'active' | 'error' | 'stopped';

/** SPEC 3 "Stream info": bitrate, frames per second, connection type. */
export interface StreamInfo {
  /** kbit/s received over the last second. */
  bitrateKbps: number;
  fps: number;
  /** relay (through TURN) or p2p for WebRTC, direct for the H.264 socket; null until known. */
  connection: 'relay' | 'p2p' | 'direct' | null;
}

/** A message for the user (SPEC 4: "on an error an info message shows"). */
export interface StreamMessage {
  /** A plugin error code (SPEC 8 "Streaming") or 0 for library-level conditions. */
  code: number;
  text: string;
}

/** Why a client gave up for good (no retry is scheduled). */
export type StreamFatalReason = 'unsupported';

export interface StreamClientEvents {
  state: StreamState;
  info: StreamInfo;
  message: StreamMessage;
  /** The client will not retry: the fallback logic of the console decides what happens. */
  fatal: StreamFatalReason;
}

export interface StreamClient {
  readonly kind: 'webrtc' | 'direct_h264';
  getState(): StreamState;
  start(): void;
  stop(): void;
  on<K extends keyof StreamClientEvents>(
    type: K,
    handler: (payload: StreamClientEvents[K]) => void,
  ): () => void;
}

export const EMPTY_STREAM_INFO: StreamInfo = { bitrateKbps: 0, fps: 0, connection: null };

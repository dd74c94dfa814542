/**
 * The media socket's wire (wire-protocol.md 4): the server's media hello names the H.264
 * profile-level-id, binary frames `[0x01][key 0|1][Annex B access unit]` follow; the client pings
 * with 0x00 (answer 0xFF) and asks for a key frame with 0x01. h264-direct-pipeline.ts speaks it.
 * Our addition: a start with `capture_time: true` gets `[0x02][key 0|1][float64 BE: the frame's
 * capture time, device epoch ms][access unit]` (the latency readout).
 */

export const MEDIA_PING_MS = 1_000;
/** Reconnect after this many pings without a pong. */
export const MEDIA_MAX_MISSED_PONGS = 5;
/** Constrained Baseline 3.1, what the server encodes when it does not say. */
export const DEFAULT_PROFILE_LEVEL_ID = '42E01F';

export const MEDIA_OP_VIDEO = 0x01;
export const MEDIA_OP_TIMED_VIDEO = 0x02;
export const MEDIA_PING = 0x00;
export const MEDIA_PONG = 0xff;
export const MEDIA_KEY_REQUEST = 0x01;

export type MediaFrame =
  { kind: 'video'; key: boolean; data: Uint8Array; capturedAt?: number } | { kind: 'pong' };

/** One binary message of the media socket; null for anything not understood (ignored). */
export function parseMediaFrame(message: ArrayBuffer | Uint8Array): MediaFrame | null {
  const bytes = message instanceof Uint8Array ? message : new Uint8Array(message);
  if (bytes.length === 1 && bytes[0] === MEDIA_PONG) return { kind: 'pong' };
  if (bytes.length >= 3 && bytes[0] === MEDIA_OP_VIDEO) {
    return { kind: 'video', key: bytes[1] !== 0, data: bytes.subarray(2) };
  }
  if (bytes.length >= 11 && bytes[0] === MEDIA_OP_TIMED_VIDEO) {
    const capturedAt = new DataView(bytes.buffer, bytes.byteOffset + 2, 8).getFloat64(0);
    return { kind: 'video', key: bytes[1] !== 0, data: bytes.subarray(10), capturedAt };
  }
  return null;
}

/** The WebCodecs codec string for a profile-level-id such as 42E01F. */
export function h264Codec(profileLevelId: string | undefined): string {
  const id = /^[0-9a-f]{6}$/i.test(profileLevelId ?? '')
    ? profileLevelId!
    : DEFAULT_PROFILE_LEVEL_ID;
  return `avc1.${id.toLowerCase()}`;
}

/** The parts of a WebSocket used here (the DOM's and the worker's are the same). */
export interface MediaSocketLike {
  binaryType: BinaryType;
  send(data: string | ArrayBufferView): void;
  close(): void;
  onopen: ((event: Event) => void) | null;
  onclose: ((event: CloseEvent) => void) | null;
  onmessage: ((event: MessageEvent) => void) | null;
  onerror: ((event: Event) => void) | null;
}

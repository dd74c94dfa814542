/**
 * When JanusStream acts (SPEC 4/9) and which state may follow which. The class itself is in
 * janus-stream.ts; stream-types.ts says what each state means.
 */
import type { TransitionMap } from '@kvm/protocol/transitions';
import type { StreamState } from './stream-types';

/** SPEC 4/9: stop + watch are retried 2 s after a stream error. */
export const STREAM_ERROR_RETRY_MS = 2_000;
/** SPEC 4/9: a gateway that went away is retried after 5 s (a failed PC likewise). */
export const GATEWAY_RETRY_MS = 5_000;
/** SPEC 4/9: stream info refresh and connection-type poll. */
export const STREAM_INFO_MS = 1_000;
export const CONNECTION_TYPE_MS = 5_000;
/**
 * How often the stats are looked at for the first decoded frame: every
 * FIRST_FRAME_QUICK_PROBE_MS for the first FIRST_FRAME_QUICK_PROBES looks (the first frame
 * comes 10-60 ms after the answer on a LAN, and the console's chrome waits for 'active'), then
 * every FIRST_FRAME_PROBE_MS.
 */
export const FIRST_FRAME_PROBE_MS = 250;
export const FIRST_FRAME_QUICK_PROBE_MS = 40;
export const FIRST_FRAME_QUICK_PROBES = 25;
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

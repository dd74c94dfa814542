/**
 * The stream's state in the status bar (SPEC 2/4 "Stream"): active, inactive, no HDMI signal
 * (active, but the HDMI signal has been gone for 5 s), re-connecting (the connection to the
 * device is lost).
 */
import type { StreamState } from '../../lib/stream-types';

export type StreamStatus = 'active' | 'inactive' | 'noSignal' | 'reconnecting';

/** SPEC 4: the no-signal text shows once the signal has been gone this long. */
export const NO_SIGNAL_AFTER_MS = 5_000;

export interface StreamStatusInput {
  /** The heartbeat says the connection is lost. */
  connectionLost: boolean;
  /** State of the running video client. */
  clientState: StreamState;
  /** streamer.source.online; null when not known. */
  sourceOnline: boolean | null;
  /** When the HDMI signal went away (Date.now()); null while there is one. */
  signalLostAt: number | null;
  now: number;
}

export function deriveStreamStatus(input: StreamStatusInput): StreamStatus {
  if (input.connectionLost) return 'reconnecting';
  // Active: the source is online and frames arrive (the client decodes them).
  if (input.clientState !== 'active' || input.sourceOnline === false) return 'inactive';
  if (input.signalLostAt !== null && input.now - input.signalLostAt >= NO_SIGNAL_AFTER_MS) {
    return 'noSignal';
  }
  return 'active';
}

/**
 * Direct H.264's frame counters (H3's honest video bench reads them): every video frame
 * received is, in the end, either presented or dropped for one reason.
 */

/** Why a received frame was never presented. */
export type DropReason =
  /** a delta frame with no key frame before it on this decoder */
  | 'before_key'
  /** a video frame before the server's media hello was answered */
  | 'before_start'
  /** thrown away undecoded: decoder reset (too far behind), error or closed with the socket */
  | 'decoder'
  /** decoded, then overtaken by a newer frame before the next animation frame */
  | 'overtaken'
  /** decoded while no canvas was attached, or still waiting when the socket went */
  | 'not_shown';

export const DROP_REASONS: readonly DropReason[] = [
  'before_key',
  'before_start',
  'decoder',
  'overtaken',
  'not_shown',
];

/** Frame counters since the stream was made (H3's honest video bench reads them). */
export interface DirectCounters {
  /** video frames received from the socket */
  received: number;
  /** frames the decoder handed out */
  decoded: number;
  /** frames drawn on the canvas */
  presented: number;
  /** frames received and never presented (sum of droppedBy) */
  dropped: number;
  droppedBy: Record<DropReason, number>;
}

export function emptyCounters(): DirectCounters {
  return {
    received: 0,
    decoded: 0,
    presented: 0,
    dropped: 0,
    droppedBy: { before_key: 0, before_start: 0, decoder: 0, overtaken: 0, not_shown: 0 },
  };
}

export function addCounters(a: DirectCounters, b: DirectCounters): DirectCounters {
  const droppedBy = { ...a.droppedBy };
  for (const reason of DROP_REASONS) droppedBy[reason] += b.droppedBy[reason];
  return {
    received: a.received + b.received,
    decoded: a.decoded + b.decoded,
    presented: a.presented + b.presented,
    dropped: a.dropped + b.dropped,
    droppedBy,
  };
}

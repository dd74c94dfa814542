/**
 * Delayed SACKs for the data channel's SCTP association (RFC 4960 6.2), patched onto werift's
 * SCTP instance at run time. Checked against werift 0.23.0 (lib/index.mjs, class SCTP:
 * receiveDataChunk, scheduleSack, sendSack, sackImmediate, sackTimeout, sackMisOrdered,
 * sackDuplicates); sctp-sack.test.ts fails when any of them is gone.
 *
 * Why: werift sets `sackImmediate` for every DATA chunk, so each input message (one key event,
 * one mouse move) made the server send a SACK right after it: a DTLS record encrypted and a UDP
 * send that wakes the browser's network thread, which then decrypts and parses it. On the
 * 2-core machine under load the input bench's server profile spent most of its busy time in
 * those sends (`doSend`, one per input message), and the next message waited behind them.
 *
 * With the patch an in-order, complete, new chunk no longer forces a SACK: werift's own rule
 * then acknowledges every second packet at once (handleData's sackPacketCount), and a lone
 * packet after `delayMs` instead of werift's 200 ms (well under any sender's retransmission
 * timeout). A gap, a duplicate or a fragment still gets its SACK at once, as werift does, so
 * the browser's fast retransmit is untouched. Delivery is not delayed: werift hands a chunk to
 * the data channel before it decides about the SACK.
 */

/** The parts of werift 0.23.0's SCTP class the patch touches. */
interface WeriftSctp {
  receiveDataChunk(chunk: { flags: number }): void;
  scheduleSack(): Promise<void>;
  sendSack(): Promise<void>;
  sackImmediate: boolean;
  sackNeeded: boolean;
  sackTimeout: ReturnType<typeof setTimeout> | undefined;
  sackMisOrdered: Set<number>;
  sackDuplicates: number[];
  isStopped: boolean;
}

/** DATA chunk flag E: the last fragment of a message (RFC 4960 3.3.1). */
const DATA_LAST_FRAG = 0x01;

/** A lone packet's SACK waits this long (werift's own delay is 200 ms). */
export const SACK_DELAY_MS = 20;

const patched = new WeakSet<object>();

/** Whether `sctp` has every member the patch relies on (werift 0.23.0's SCTP). */
export function isPatchableSctp(sctp: unknown): sctp is WeriftSctp {
  if (typeof sctp !== 'object' || sctp === null) return false;
  const s = sctp as Record<string, unknown>;
  return (
    typeof s['receiveDataChunk'] === 'function' &&
    typeof s['scheduleSack'] === 'function' &&
    typeof s['sendSack'] === 'function' &&
    typeof s['sackImmediate'] === 'boolean' &&
    typeof s['sackNeeded'] === 'boolean' &&
    typeof s['isStopped'] === 'boolean' &&
    'sackTimeout' in s &&
    s['sackMisOrdered'] instanceof Set &&
    Array.isArray(s['sackDuplicates'])
  );
}

/**
 * Makes the SACKs of werift's SCTP association `sctp` delayed (see the file comment); once per
 * instance. False (nothing changed) when `sctp` is not the werift SCTP this was checked against.
 */
export function delaySacks(sctp: unknown, delayMs = SACK_DELAY_MS): boolean {
  if (!isPatchableSctp(sctp)) return false;
  if (patched.has(sctp)) return true;
  patched.add(sctp);
  const receiveDataChunk = sctp.receiveDataChunk;
  const scheduleSack = sctp.scheduleSack;
  sctp.receiveDataChunk = function (this: WeriftSctp, chunk: { flags: number }): void {
    const duplicates = this.sackDuplicates.length;
    receiveDataChunk.call(this, chunk);
    const inOrder = this.sackMisOrdered.size === 0;
    const duplicate = this.sackDuplicates.length > duplicates;
    const whole = (chunk.flags & DATA_LAST_FRAG) !== 0;
    if (inOrder && !duplicate && whole) this.sackImmediate = false;
  };
  sctp.scheduleSack = function (this: WeriftSctp): Promise<void> {
    // immediate, or a delayed one already pending: werift's own logic
    if (this.sackImmediate || this.sackTimeout !== undefined) return scheduleSack.call(this);
    if (this.isStopped || !this.sackNeeded) return Promise.resolve();
    // the same field werift clears on stop and after an immediate SACK
    this.sackTimeout = setTimeout(() => {
      this.sackTimeout = undefined;
      this.sendSack().catch(() => undefined);
    }, delayMs);
    return Promise.resolve();
  };
  return true;
}

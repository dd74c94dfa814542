/**
 * The paste loop every HID driver shares: takes key events one at a time from a lazy source,
 * keeps them `gapMs` apart (start to start), gives the event loop a turn at least every
 * PASTE_EVENTS_PER_TURN events so a long paste never holds up other requests, stops when its
 * signal fires, and never leaves a key of the sequence pressed, however it ends.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { isModifierKey } from '@kvm/protocol';
import type { KeyEvent } from './types';

/** Events sent between two turns of the event loop when nothing else makes the loop wait. */
export const PASTE_EVENTS_PER_TURN = 32;

/** Sleeps `ms`, or less when the signal fires first. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Sends `events` through `send` (one key transition; may be async, e.g. a QMP command).
 * Resolves when the sequence is done or stopped; rejects with `send`'s error after releasing
 * what was pressed. The releases go through `send` too, so they reach the same keyboard.
 */
export async function paceKeyEvents(
  events: Iterable<KeyEvent>,
  gapMs: number,
  signal: AbortSignal,
  send: (key: string, pressed: boolean) => void | Promise<void>,
): Promise<void> {
  const down = new Set<string>();
  let sinceTurn = 0;
  try {
    for (const e of events) {
      if (signal.aborted) break;
      const started = performance.now();
      // A press counts before its send and a release after it: a release of a key the device
      // never saw is harmless, a press the bookkeeping missed would stick.
      if (e.state) down.add(e.key);
      await send(e.key, e.state);
      if (!e.state) down.delete(e.key);
      const left = gapMs - (performance.now() - started);
      if (left > 0.5) {
        await sleep(left, signal);
        sinceTurn = 0;
      } else if (++sinceTurn >= PASTE_EVENTS_PER_TURN) {
        sinceTurn = 0;
        await nextTurn();
      }
    }
  } finally {
    // Non-modifiers first: releasing Shift before its letter could type the unshifted one.
    const keys = [...down].sort((a, b) => Number(isModifierKey(a)) - Number(isModifierKey(b)));
    for (const key of keys) {
      try {
        await send(key, false);
      } catch {
        // The device went away: nothing is pressed on a keyboard that is gone.
      }
    }
  }
}

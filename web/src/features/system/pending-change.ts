/**
 * A network change waiting for confirmation (issue 11, item 3): applied, kept only if confirmed
 * before its deadline, else the device puts the previous settings back by itself.
 */
import type { PendingNetworkChange } from '@kvm/protocol/system';

export interface TrackedPending {
  change: PendingNetworkChange;
  /** Local Date.now() ms when the device reverts. */
  deadline: number;
}

/**
 * `expires_at` is the device's clock; this browser's may differ. Trust it while it is within the
 * window the device announced (plus a little transit), else count the window from receipt.
 */
export function trackPending(change: PendingNetworkChange, receivedAt: number): TrackedPending {
  const windowMs = Math.max(0, change.timeout_s) * 1000;
  const left = change.expires_at - receivedAt;
  const deadline = left > 0 && left <= windowMs + 2000 ? change.expires_at : receivedAt + windowMs;
  return { change, deadline };
}

export function secondsLeft(tracked: TrackedPending, now: number): number {
  return Math.max(0, Math.ceil((tracked.deadline - now) / 1000));
}

/** The new address as a link target, or null when it is where this page already is. */
export function newAddressLink(change: PendingNetworkChange, pageHost: string): string | null {
  if (!change.new_address) return null;
  try {
    const url = new URL(change.new_address);
    return url.host === pageHost ? null : url.href;
  } catch {
    return null;
  }
}

/** Calls `onExpire` once at the tracked deadline; a new change or null replaces the timer. */
export class PendingWatch {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly onExpire: (tracked: TrackedPending) => void;

  constructor(onExpire: (tracked: TrackedPending) => void) {
    this.onExpire = onExpire;
  }

  track(change: PendingNetworkChange | null, now = Date.now()): TrackedPending | null {
    this.clear();
    if (!change) return null;
    const tracked = trackPending(change, now);
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.onExpire(tracked);
      },
      Math.max(0, tracked.deadline - now),
    );
    return tracked;
  }

  clear(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

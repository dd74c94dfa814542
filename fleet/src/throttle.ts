/**
 * Per-key request limits of the fleet (sign-up codes, logins, bind codes, claims), on the device
 * server's LoginRateLimiter (server/src/services/auth/rate-limit.ts: an attempt is counted when it
 * is reserved, before any work, so a burst cannot slip past; IPv6 counts per /64). Limits are per
 * replica, in memory: N replicas allow at most N times as much (docs/security.md).
 */
import { RateLimitError } from '../../server/src/errors';
import {
  LoginRateLimiter,
  type Attempt,
  type RateLimitOptions,
} from '../../server/src/services/auth/rate-limit';
import { FleetRateLimitError } from './errors';

export type { Attempt };

export class Throttle {
  private readonly limiter: LoginRateLimiter;

  /** `max` requests within `windowS` lock the key for `lockS`; `what` names it in the error. */
  constructor(
    private readonly what: string,
    opts: { max: number; windowS: number; lockS: number },
    now?: () => number,
  ) {
    const o: RateLimitOptions = {
      max_failures: opts.max,
      window_s: opts.windowS,
      lock_s: opts.lockS,
    };
    this.limiter = new LoginRateLimiter(o, now);
  }

  /** Counts one request of `key` now; throws FleetRateLimitError (429) while it is locked. */
  take(key: string): Attempt {
    try {
      return this.limiter.reserve(key);
    } catch (e) {
      if (e instanceof RateLimitError) {
        throw new FleetRateLimitError(this.what, this.limiter.remaining(key));
      }
      throw e;
    }
  }

  /** The request succeeded: the key starts afresh (for limits on failures only). */
  forgive(attempt: Attempt): void {
    this.limiter.succeed(attempt);
  }

  /** Seconds `key` must still wait (0: it may go). */
  remaining(key: string): number {
    return this.limiter.remaining(key);
  }
}

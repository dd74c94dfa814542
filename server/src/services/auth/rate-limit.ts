/**
 * Login rate limit per client address (GL kvmd): `max_failures` failed attempts within
 * `window_s` lock the address for `lock_s`. A success clears the address.
 *
 * An attempt is counted when it is reserved, BEFORE its password hash runs, and a success
 * takes it back: counting after the hash let a burst of concurrent guesses all pass the check
 * before the first one failed (30 at once got 29 tries). With reservations, of any number of
 * guesses arriving at once at most `max_failures` are ever checked.
 */
import { isIP } from 'node:net';
import { RateLimitError } from '../../errors';

export interface RateLimitOptions {
  max_failures: number;
  window_s: number;
  lock_s: number;
}

interface Entry {
  /** Times of failed and still-running attempts within the window. */
  attempts: number[];
  lockedUntil: number;
}

/** One reserved attempt; hand it back to `fail` or `succeed`. */
export interface Attempt {
  readonly key: string;
  readonly at: number;
  /** This attempt's reservation started the lock. */
  readonly locking: boolean;
  settled: boolean;
}

export interface FailOutcome {
  /** Seconds the address is now locked for, 0 when it may still try. */
  lockedS: number;
  /** The lock started with this failure (log it once). */
  lockStarted: boolean;
}

/** Addresses remembered at most; past it the quietest are forgotten first. */
export const RATE_LIMIT_MAX_ADDRESSES = 10_000;

/**
 * The bucket an address counts in. An IPv6 client normally holds a whole /64, so it would get
 * 2^64 fresh buckets by rotating its interface id: count the /64. IPv4-mapped IPv6 counts as
 * the IPv4 address.
 */
export function addressKey(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped?.[1]) return mapped[1];
  if (isIP(ip) !== 6) return ip;
  const [head = '', tail = ''] = ip.toLowerCase().split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = ip.includes('::')
    ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right]
    : left;
  return `${groups
    .slice(0, 4)
    .map((g) => Number.parseInt(g || '0', 16).toString(16))
    .join(':')}::/64`;
}

export class LoginRateLimiter {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly opts: RateLimitOptions,
    private readonly now: () => number = Date.now,
  ) {}

  /** Seconds the address must still wait, or 0 when it may try. */
  remaining(ip: string): number {
    const entry = this.entries.get(addressKey(ip));
    if (!entry) return 0;
    const left = entry.lockedUntil - this.now();
    return left > 0 ? Math.ceil(left / 1000) : 0;
  }

  /**
   * Counts one attempt of `ip` now, synchronously; throws RateLimitError while the address is
   * locked. The reservation that reaches `max_failures` starts the lock, and is itself still
   * checked (its caller may hold the right password).
   */
  reserve(ip: string): Attempt {
    const key = addressKey(ip);
    const t = this.now();
    const wait = this.remaining(ip);
    if (wait > 0) throw new RateLimitError(wait);
    const entry = this.entries.get(key) ?? { attempts: [], lockedUntil: 0 };
    entry.attempts = entry.attempts.filter((a) => t - a < this.opts.window_s * 1000);
    entry.attempts.push(t);
    let locking = false;
    if (entry.attempts.length >= this.opts.max_failures) {
      entry.lockedUntil = t + this.opts.lock_s * 1000;
      entry.attempts = [];
      locking = true;
    }
    // Re-inserting keeps the Map in order of last activity, so pruning drops the quietest.
    this.entries.delete(key);
    this.entries.set(key, entry);
    this.prune(t);
    return { key, at: t, locking, settled: false };
  }

  /** The attempt failed: it stays counted. */
  fail(attempt: Attempt): FailOutcome {
    attempt.settled = true;
    const entry = this.entries.get(attempt.key);
    const left = entry ? entry.lockedUntil - this.now() : 0;
    const lockedS = left > 0 ? Math.ceil(left / 1000) : 0;
    return { lockedS, lockStarted: attempt.locking && lockedS > 0 };
  }

  /** The attempt succeeded: the address starts afresh. */
  succeed(attempt: Attempt): void {
    if (attempt.settled) return;
    attempt.settled = true;
    this.entries.delete(attempt.key);
  }

  /**
   * The attempt was never checked (the server refused it before hashing). It stays counted:
   * an address that floods the hash queue is guessing as surely as one that is checked.
   */
  abandon(attempt: Attempt): FailOutcome {
    return this.fail(attempt);
  }

  get size(): number {
    return this.entries.size;
  }

  /** Keeps the map bounded: drop addresses with nothing recent, then the quietest. */
  private prune(t: number): void {
    if (this.entries.size < 1024) return;
    for (const [key, e] of this.entries) {
      const recent = e.attempts.some((a) => t - a < this.opts.window_s * 1000);
      if (!recent && e.lockedUntil <= t) this.entries.delete(key);
    }
    for (const key of this.entries.keys()) {
      if (this.entries.size <= RATE_LIMIT_MAX_ADDRESSES) break;
      this.entries.delete(key);
    }
  }
}

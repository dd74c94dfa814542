/**
 * Login rate limit per client address (GL kvmd): `maxFailures` failed logins within `windowS`
 * lock the address for `lockS`. A success clears the address's failures.
 */
export interface RateLimitOptions {
  max_failures: number;
  window_s: number;
  lock_s: number;
}

interface Entry {
  failures: number[];
  lockedUntil: number;
}

export class LoginRateLimiter {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly opts: RateLimitOptions,
    private readonly now: () => number = Date.now,
  ) {}

  /** Seconds the address must still wait, or 0 when it may try. */
  remaining(ip: string): number {
    const entry = this.entries.get(ip);
    if (!entry) return 0;
    const left = entry.lockedUntil - this.now();
    return left > 0 ? Math.ceil(left / 1000) : 0;
  }

  fail(ip: string): void {
    const t = this.now();
    const entry = this.entries.get(ip) ?? { failures: [], lockedUntil: 0 };
    entry.failures = entry.failures.filter((f) => t - f < this.opts.window_s * 1000);
    entry.failures.push(t);
    if (entry.failures.length >= this.opts.max_failures) {
      entry.lockedUntil = t + this.opts.lock_s * 1000;
      entry.failures = [];
    }
    this.entries.set(ip, entry);
    this.prune(t);
  }

  succeed(ip: string): void {
    this.entries.delete(ip);
  }

  /** Keeps the map bounded: drop addresses with nothing recent. */
  private prune(t: number): void {
    if (this.entries.size < 1024) return;
    for (const [ip, e] of this.entries) {
      const recent = e.failures.some((f) => t - f < this.opts.window_s * 1000);
      if (!recent && e.lockedUntil <= t) this.entries.delete(ip);
    }
  }
}

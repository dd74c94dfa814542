/**
 * A budget for log lines that anonymous requests cause (failed logins, malformed bodies, refused
 * upgrades). Without it a stranger can write to the device's log as fast as it can send requests
 * and rotate the real history away. A token bucket: `burst` lines at once, refilled at
 * `perMinute`; lines over the budget are counted, and the count is reported on the next line
 * that is allowed, so the log still says how much happened.
 */
export interface LogBudgetOptions {
  /** Lines that may be written at once after a quiet period. */
  burst?: number;
  /** Lines per minute in the long run. */
  perMinute?: number;
  now?: () => number;
}

export const ANON_LOG_BURST = 20;
export const ANON_LOG_PER_MINUTE = 30;

export class LogBudget {
  private readonly burst: number;
  private readonly perMs: number;
  private readonly now: () => number;
  private tokens: number;
  private last: number;
  private dropped = 0;

  constructor(opts: LogBudgetOptions = {}) {
    this.burst = opts.burst ?? ANON_LOG_BURST;
    this.perMs = (opts.perMinute ?? ANON_LOG_PER_MINUTE) / 60_000;
    this.now = opts.now ?? Date.now;
    this.tokens = this.burst;
    this.last = this.now();
  }

  /**
   * Whether a line may be written now. When it may, `suppressed` is the number of lines refused
   * since the last allowed one (put it in that line); when it may not, the line is counted.
   */
  take(): { ok: true; suppressed: number } | { ok: false } {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + (t - this.last) * this.perMs);
    this.last = t;
    if (this.tokens < 1) {
      this.dropped += 1;
      return { ok: false };
    }
    this.tokens -= 1;
    const suppressed = this.dropped;
    this.dropped = 0;
    return { ok: true, suppressed };
  }
}

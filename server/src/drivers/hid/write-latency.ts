/**
 * A bounded record of how long something took: the last `capacity` durations in a fixed ring
 * (no growth, whatever the rate), with the running count and sum since the start. Read as a
 * Prometheus summary: quantiles over the ring, `_sum` and `_count` over everything.
 */

/** A summary's figures, in seconds. */
export interface LatencySummary {
  /** quantile (0..1) -> seconds, over the last `window` durations; empty when none yet. */
  quantiles: Array<{ quantile: number; value: number }>;
  /** Durations recorded since the start, and their sum (seconds). */
  count: number;
  sum: number;
  /** How many durations the quantiles are taken over (at most the ring's capacity). */
  window: number;
}

export const SUMMARY_QUANTILES = [0.5, 0.9, 0.99] as const;

export class LatencyRing {
  private readonly ring: Float64Array;
  private next = 0;
  private filled = 0;
  private total = 0;
  private totalSum = 0;

  constructor(readonly capacity = 1024) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('capacity >= 1');
    this.ring = new Float64Array(capacity);
  }

  /** One duration, in seconds; negative or non-finite values are not durations and are ignored. */
  record(seconds: number): void {
    if (!Number.isFinite(seconds) || seconds < 0) return;
    this.ring[this.next] = seconds;
    this.next = (this.next + 1) % this.capacity;
    this.filled = Math.min(this.filled + 1, this.capacity);
    this.total += 1;
    this.totalSum += seconds;
  }

  /** Nearest-rank quantiles over the ring, with the running count and sum. */
  summary(quantiles: readonly number[] = SUMMARY_QUANTILES): LatencySummary {
    const window = Array.from(this.ring.subarray(0, this.filled)).sort((a, b) => a - b);
    return {
      quantiles:
        window.length === 0
          ? []
          : quantiles.map((q) => ({
              quantile: q,
              value:
                window[Math.min(window.length - 1, Math.max(0, Math.ceil(q * window.length) - 1))]!,
            })),
      count: this.total,
      sum: this.totalSum,
      window: window.length,
    };
  }
}

/**
 * A small seeded PRNG (mulberry32) and the choices the fuzzer makes with it. The same seed gives
 * the same inputs in the same order, so a crash found in a long run reproduces with `--seed`.
 */
export class Prng {
  private state: number;

  constructor(readonly seed: number) {
    this.state = seed >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from nothing');
    return items[Math.floor(this.next() * items.length)]!;
  }

  bytes(n: number): Buffer {
    const out = Buffer.alloc(n);
    for (let i = 0; i < n; i += 1) out[i] = Math.floor(this.next() * 256);
    return out;
  }

  /** A size that is usually small and sometimes large (log-uniform up to `max`). */
  size(max: number): number {
    return Math.min(max, Math.floor(Math.exp(this.next() * Math.log(max + 1))) - 1);
  }

  /** A fresh seed drawn from this stream (for a sub-generator). */
  fork(): Prng {
    return new Prng(this.int(1, 0x7fffffff));
  }
}

/** A seed for a run that did not name one. */
export function randomSeed(): number {
  return (Date.now() ^ (process.pid << 16)) >>> 0 || 1;
}

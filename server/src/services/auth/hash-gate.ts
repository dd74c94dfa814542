/**
 * Bounds the password hashes running at once. scrypt runs on libuv's thread pool (4 threads),
 * which every file read of every page shares: 200 concurrent logins once held it for 20 s and
 * slowed every page to 8-9 s. At most `overall` hashes run at once (leaving the rest of the pool
 * to file I/O), at most `perAddress` for one client address; a bounded queue waits behind them
 * and everything past it is refused at once, without hashing.
 */
import { RateLimitError, ServiceUnavailableError } from '../../errors';

export interface HashGateOptions {
  /** Hashes running at once, whoever asks. */
  overall: number;
  /** Hashes running at once for one address. */
  perAddress: number;
  /** Requests waiting for a slot, whoever asks. */
  queue: number;
  /** Requests of one address running or waiting. */
  perAddressQueue: number;
}

export const HASH_GATE_DEFAULTS: HashGateOptions = {
  overall: 2,
  perAddress: 1,
  queue: 32,
  perAddressQueue: 4,
};

/** The device is busy hashing other clients' passwords (503, try again shortly). */
export class LoginBusyError extends ServiceUnavailableError {
  constructor() {
    super('Too many logins at once; please try again in a few seconds', {
      remaining_time: 1,
    });
  }
}

interface Waiter {
  key: string;
  start: () => void;
}

export class HashGate {
  private running = 0;
  /** Per address: running + waiting. */
  private readonly held = new Map<string, { running: number; total: number }>();
  private readonly waiters: Waiter[] = [];

  constructor(private readonly opts: HashGateOptions = HASH_GATE_DEFAULTS) {}

  /**
   * Runs `fn` when a slot is free. Throws at once, without running it, when the address
   * already has `perAddressQueue` requests here (429) or the queue is full (503).
   */
  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const mine = this.held.get(key) ?? { running: 0, total: 0 };
    if (mine.total >= this.opts.perAddressQueue) {
      const err = new RateLimitError(1);
      err.message = 'Too many login attempts at once from this address; try again in 1 seconds';
      throw err;
    }
    const now = this.running < this.opts.overall && mine.running < this.opts.perAddress;
    if (!now && this.waiters.length >= this.opts.queue) throw new LoginBusyError();
    mine.total += 1;
    this.held.set(key, mine);
    if (now) {
      mine.running += 1;
      this.running += 1;
    } else {
      // dispatch() takes the slot for us before it wakes us.
      await new Promise<void>((start) => this.waiters.push({ key, start }));
    }
    try {
      return await fn();
    } finally {
      this.running -= 1;
      mine.running -= 1;
      mine.total -= 1;
      if (mine.total === 0) this.held.delete(key);
      this.dispatch();
    }
  }

  /** For tests and the bench: hashes running and requests waiting. */
  get stats(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiters.length };
  }

  private dispatch(): void {
    for (let i = 0; i < this.waiters.length && this.running < this.opts.overall;) {
      const w = this.waiters[i];
      const h = w ? this.held.get(w.key) : undefined;
      if (w && h && h.running < this.opts.perAddress) {
        this.waiters.splice(i, 1);
        h.running += 1;
        this.running += 1;
        w.start();
      } else {
        i += 1;
      }
    }
  }
}

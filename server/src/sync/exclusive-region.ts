/**
 * One exclusive region per subsystem (kvmd's `aiotools` region): every verb that touches the
 * hardware runs inside it; a second caller is refused at once with the subsystem's busy error
 * (409) instead of queueing behind a physical operation. `reset` is the one caller that waits:
 * it takes the region right after the running verb (before anyone else can), so nothing the
 * verb started can land after the reset.
 *
 * | call           | region free           | region taken                                  |
 * |----------------|-----------------------|-----------------------------------------------|
 * | enter(fn)      | runs fn, holds region | throws busyError() synchronously (no fn call) |
 * | enterAfter(fn) | runs fn, holds region | waits, then runs fn before any other enter()  |
 *
 * `busy` is true from the first line of a verb to its last; `onChange` fires on each flip.
 */
export class ExclusiveRegion {
  private holder: object | null = null;
  /** Callers of enterAfter waiting for the holder, in order. */
  private readonly queue: (() => void)[] = [];
  private readonly listeners = new Set<(busy: boolean) => void>();

  constructor(private readonly busyError: () => Error) {}

  get busy(): boolean {
    return this.holder !== null;
  }

  /** Listens to `busy` flips; returns the unsubscribe. */
  onChange(listener: (busy: boolean) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Runs `fn` inside the region, or throws the busy error at once if it is taken. */
  enter<T>(fn: () => Promise<T>): Promise<T> {
    if (this.holder !== null) return Promise.reject(this.busyError());
    return this.run(fn);
  }

  /** Runs `fn` inside the region as soon as the current holder (if any) leaves it. */
  async enterAfter<T>(fn: () => Promise<T>): Promise<T> {
    if (this.holder !== null) {
      // The leaving holder hands the region over without freeing it: `busy` never drops and
      // an enter() in between is refused.
      await new Promise<void>((resolve) => this.queue.push(resolve));
      return this.run(fn, true);
    }
    return this.run(fn);
  }

  private run<T>(fn: () => Promise<T>, handedOver = false): Promise<T> {
    // Taken before fn's first line: a nested or re-entrant enter() is refused too.
    const token = {};
    this.holder = token;
    if (!handedOver) this.changed();
    let result: Promise<T>;
    try {
      result = fn();
    } catch (err) {
      result = Promise.reject(err as Error);
    }
    void result.then(
      () => this.leave(token),
      () => this.leave(token),
    );
    return result;
  }

  private leave(token: object): void {
    if (this.holder !== token) return;
    const next = this.queue.shift();
    if (next) {
      // Still busy: a placeholder holds the region until the waiter's fn has started.
      this.holder = {};
      next();
      return;
    }
    this.holder = null;
    this.changed();
  }

  private changed(): void {
    for (const l of this.listeners) l(this.busy);
  }
}

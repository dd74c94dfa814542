/**
 * One operation at a time, in call order: a caller waits behind the ones before it (unlike
 * `ExclusiveRegion`, which refuses a second caller at once). For changes that must not
 * interleave but should not be refused either: writes of one settings file, one `nmcli`
 * command after another, QMP's multi-step media changes.
 *
 * A failed operation does not stop the ones behind it. With `max`, at most that many may wait
 * behind the running one; the next caller gets `busyError()` at once, so a client cannot pile
 * up unbounded work.
 */
export interface SerialQueueOptions {
  /** Callers allowed to wait behind the running one; unbounded when absent. */
  max?: number;
  /** What a caller over `max` is refused with. */
  busyError?: () => Error;
}

export class SerialQueue {
  private tail: Promise<void> = Promise.resolve();
  private count = 0;

  constructor(private readonly opts: SerialQueueOptions = {}) {}

  /** Operations running or waiting. */
  get pending(): number {
    return this.count;
  }

  /** Runs `fn` once every operation queued before it has settled. */
  run<T>(fn: () => Promise<T>): Promise<T> {
    const { max, busyError } = this.opts;
    // the running one plus `max` waiting
    if (max !== undefined && this.count > max) {
      return Promise.reject(busyError ? busyError() : new Error('too many queued operations'));
    }
    this.count++;
    const result = this.tail.then(fn);
    this.tail = result.then(
      () => {
        this.count--;
      },
      () => {
        this.count--;
      },
    );
    return result;
  }

  /** Resolves once everything queued so far has settled (shutdown, tests). */
  idle(): Promise<void> {
    return this.tail;
  }
}

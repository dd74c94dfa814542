import { describe, expect, it } from 'vitest';
import { SerialQueue } from './serial-queue';

function deferred(): { promise: Promise<void>; resolve: () => void; reject: (e: Error) => void } {
  let resolve!: () => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('SerialQueue', () => {
  it('runs operations one at a time in call order', async () => {
    const queue = new SerialQueue();
    const order: string[] = [];
    const first = deferred();
    const a = queue.run(async () => {
      order.push('a start');
      await first.promise;
      order.push('a end');
    });
    const b = queue.run(async () => {
      order.push('b');
    });
    await Promise.resolve();
    expect(order).toEqual(['a start']);
    expect(queue.pending).toBe(2);
    first.resolve();
    await Promise.all([a, b]);
    expect(order).toEqual(['a start', 'a end', 'b']);
    expect(queue.pending).toBe(0);
  });

  it('goes on after a failed operation and hands each caller its own outcome', async () => {
    const queue = new SerialQueue();
    const failed = queue.run(() => Promise.reject(new Error('boom')));
    const next = queue.run(async () => 42);
    await expect(failed).rejects.toThrow('boom');
    await expect(next).resolves.toBe(42);
  });

  it('refuses callers beyond max waiting with the busy error, and takes them again later', async () => {
    class Busy extends Error {}
    const queue = new SerialQueue({ max: 1, busyError: () => new Busy('busy') });
    const gate = deferred();
    const running = queue.run(() => gate.promise);
    const waiting = queue.run(async () => 'second');
    await expect(queue.run(async () => 'third')).rejects.toBeInstanceOf(Busy);
    gate.resolve();
    await running;
    await expect(waiting).resolves.toBe('second');
    await expect(queue.run(async () => 'later')).resolves.toBe('later');
  });

  it('idle() resolves after everything queued so far', async () => {
    const queue = new SerialQueue();
    const done: number[] = [];
    void queue.run(async () => {
      await new Promise((r) => setTimeout(r, 5));
      done.push(1);
    });
    void queue.run(() => Promise.reject(new Error('x'))).catch(() => undefined);
    await queue.idle();
    expect(done).toEqual([1]);
  });
});

/**
 * One `/dev/hidgN` of the gadget (the kernel's f_hid): input reports written to the host, output
 * reports (the keyboard's LEDs) read back.
 *
 * f_hid keeps one report in flight per function: a write is taken at once while the previous
 * report has been fetched by the host's last poll (its IN token), and a non-blocking write gets
 * EAGAIN until then. A host that stopped polling (asleep, a BIOS without USB legacy support, the
 * cable out while the UDC still says configured) therefore makes every write EAGAIN. So:
 * - the node is opened O_RDWR | O_NONBLOCK and every write runs in libuv's threadpool
 *   (`fs.write`), never a synchronous call on the event loop, and never a blocking write that
 *   would hold a threadpool thread (there are four) for as long as the host sleeps;
 * - EAGAIN is retried every HIDG_RETRY_MS until the write's time-out (config
 *   `gadget.hid_write_timeout_ms`), then the write fails with HidgTimeoutError;
 * - ESHUTDOWN, ENODEV, ENXIO or EPIPE mean the function is unbound (HidgUnboundError);
 * - one write at a time, in call order, from a bounded queue (HIDG_QUEUE_MAX): past it, reports
 *   that may be lost (pointer moves, presses) are dropped and counted; `essential` ones
 *   (releases) are always queued, and they are bounded by the keys and buttons that exist;
 * - when a write fails, the reports waiting behind it are dropped too (counted): each would
 *   wait its own time-out for a host that is not polling. The HID driver then sends a
 *   release-all report once the host is back, so nothing stays pressed.
 *
 * Output reports are read by polling (HIDG_READ_POLL_MS): Node cannot wait on a character
 * device (libuv's pipe and tty handles refuse it, so there is no epoll for it), and a blocking
 * `fs.read` would hold a threadpool thread until the host changes an LED and could not be
 * interrupted by close(). A non-blocking read every 100 ms costs ten syscalls a second and
 * shows a Caps Lock change within that time.
 */
import { EventEmitter } from 'node:events';
import { close, constants, open, read, write } from 'node:fs';
import { ServiceUnavailableError } from '../../errors';
import type { Logger } from '../../log';

/** Reports waiting per endpoint, the one being written included, before drops begin. */
export const HIDG_QUEUE_MAX = 256;
/** How often an EAGAIN write is tried again. */
export const HIDG_RETRY_MS = 2;
/** How often the output report (the keyboard LEDs) is read. */
export const HIDG_READ_POLL_MS = 100;
/** f_hid hands one output report per read; ours are 1 byte, the buffer takes any. */
const READ_BUFFER_BYTES = 64;

const UNBOUND_CODES = new Set(['ESHUTDOWN', 'ENODEV', 'ENXIO', 'EPIPE']);

/** 503: the host did not fetch a report within the write time-out (it stopped polling). */
export class HidgTimeoutError extends ServiceUnavailableError {
  constructor(path: string, timeoutMs: number) {
    super(`The remote computer took no USB report from ${path} for ${timeoutMs} ms`);
  }
}

/** 503: the HID function is not bound to a host (the UDC is unbound or the gadget gone). */
export class HidgUnboundError extends ServiceUnavailableError {
  constructor(path: string, code: string) {
    super(`${path} is not connected to a USB host (${code})`);
  }
}

/** What the HID driver writes to: a hidg node, or an in-memory fake in the driver's tests. */
export interface HidReportEndpoint {
  readonly path: string;
  /** Reports written or waiting (the one in flight included). */
  readonly queued: number;
  /** A non-essential write now would be dropped. */
  readonly full: boolean;
  /** Reports dropped: refused by a full queue, or waiting behind a failed write or a close. */
  readonly dropped: number;
  /**
   * Queues a report. Resolves true once the kernel took it, false if it was dropped (queue full
   * and not `essential`, the endpoint closed, or a write before it failed); rejects with
   * HidgTimeoutError or HidgUnboundError when this report's own write failed. `timeoutMs`
   * overrides the endpoint's (0: one attempt, for probing a host that stopped polling).
   */
  write(report: Uint8Array, opts?: { essential?: boolean; timeoutMs?: number }): Promise<boolean>;
  /** Called with each output report that differs from the one before. */
  onOutput(listener: (report: Uint8Array) => void): () => void;
  /** Stops reading, drops what waits, lets the write in flight finish, closes the node. */
  close(): Promise<void>;
}

export interface HidgOptions {
  writeTimeoutMs: number;
  /** Bytes of the function's output report: 1 for the keyboard's LEDs, 0 = none (no reading). */
  outputReportLength: number;
  queueMax?: number;
  retryMs?: number;
  readPollMs?: number;
  log?: Logger;
}

interface Pending {
  report: Uint8Array;
  timeoutMs: number;
  resolve: (written: boolean) => void;
  reject: (err: Error) => void;
}

class ClosedSignal extends Error {}

function errnoCode(err: unknown): string {
  return (err as NodeJS.ErrnoException | null)?.code ?? '';
}

function fsWrite(fd: number, buf: Uint8Array): Promise<number> {
  return new Promise((resolve, reject) =>
    write(fd, buf, 0, buf.length, null, (err, n) => (err ? reject(err) : resolve(n))),
  );
}

function fsRead(fd: number, buf: Uint8Array): Promise<number> {
  return new Promise((resolve, reject) =>
    read(fd, buf, 0, buf.length, null, (err, n) => (err ? reject(err) : resolve(n))),
  );
}

/** Opens a hidg node (O_RDWR | O_NONBLOCK, in the threadpool). */
export function openHidg(path: string, opts: HidgOptions): Promise<HidgEndpoint> {
  return new Promise((resolve, reject) =>
    open(path, constants.O_RDWR | constants.O_NONBLOCK, (err, fd) =>
      err ? reject(err) : resolve(new HidgEndpoint(path, fd, opts)),
    ),
  );
}

export class HidgEndpoint implements HidReportEndpoint {
  private readonly queue: Pending[] = [];
  private writing = false;
  private readingNow = false;
  private closed = false;
  private closing: Promise<void> | null = null;
  /** Settles when the write loop and the read in flight are done (close waits for it). */
  private idleWaiters: Array<() => void> = [];
  private readonly outputs = new EventEmitter<{ output: [Uint8Array] }>();
  private lastOutput: Buffer | null = null;
  private readonly readTimer: NodeJS.Timeout | null;
  private readErrorLogged = false;
  private droppedCount = 0;
  /** Writes that failed with a time-out (the bench and the driver's log read it). */
  timeouts = 0;

  constructor(
    readonly path: string,
    private readonly fd: number,
    private readonly opts: HidgOptions,
  ) {
    if (opts.outputReportLength > 0) {
      this.readTimer = setInterval(
        () => void this.readOutputs(),
        opts.readPollMs ?? HIDG_READ_POLL_MS,
      );
      this.readTimer.unref();
    } else {
      this.readTimer = null;
    }
  }

  get queued(): number {
    return this.queue.length;
  }

  get full(): boolean {
    return this.queue.length >= (this.opts.queueMax ?? HIDG_QUEUE_MAX);
  }

  get dropped(): number {
    return this.droppedCount;
  }

  write(
    report: Uint8Array,
    opts: { essential?: boolean; timeoutMs?: number } = {},
  ): Promise<boolean> {
    if (this.closed || (!opts.essential && this.full)) {
      this.droppedCount++;
      return Promise.resolve(false);
    }
    return new Promise((resolve, reject) => {
      this.queue.push({
        report,
        timeoutMs: opts.timeoutMs ?? this.opts.writeTimeoutMs,
        resolve,
        reject,
      });
      if (!this.writing) void this.pump();
    });
  }

  onOutput(listener: (report: Uint8Array) => void): () => void {
    this.outputs.on('output', listener);
    return () => this.outputs.off('output', listener);
  }

  close(): Promise<void> {
    this.closing ??= this.doClose();
    return this.closing;
  }

  // ---- internals ----

  private async doClose(): Promise<void> {
    this.closed = true;
    if (this.readTimer) clearInterval(this.readTimer);
    this.outputs.removeAllListeners();
    // The write in flight stops at its next retry; closing its fd under a threadpool call
    // could hand the number to another file meanwhile.
    if (this.writing || this.readingNow) {
      await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    }
    this.dropWaiting(0);
    await new Promise<void>((resolve) => close(this.fd, () => resolve()));
  }

  private settleIdle(): void {
    if (this.writing || this.readingNow) return;
    for (const w of this.idleWaiters.splice(0)) w();
  }

  /** Resolves false (dropped) every report waiting from index `from` on. */
  private dropWaiting(from: number): void {
    for (const p of this.queue.splice(from)) {
      this.droppedCount++;
      p.resolve(false);
    }
  }

  private async pump(): Promise<void> {
    this.writing = true;
    try {
      while (this.queue.length > 0 && !this.closed) {
        const item = this.queue[0]!;
        try {
          await this.writeOne(item.report, item.timeoutMs);
          this.queue.shift();
          item.resolve(true);
        } catch (err) {
          this.queue.shift();
          if (err instanceof ClosedSignal) {
            this.droppedCount++;
            item.resolve(false);
            break;
          }
          item.reject(err as Error);
          this.dropWaiting(0);
        }
      }
    } finally {
      this.writing = false;
      if (this.closed) this.dropWaiting(0);
      this.settleIdle();
    }
  }

  private async writeOne(report: Uint8Array, timeoutMs: number): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      if (this.closed) throw new ClosedSignal();
      try {
        await fsWrite(this.fd, report);
        return;
      } catch (err) {
        const code = errnoCode(err);
        if (code === 'EAGAIN' || code === 'EWOULDBLOCK') {
          const left = deadline - performance.now();
          if (left <= 0) {
            // A probe (timeoutMs 0) that finds the host still away is not a new time-out.
            if (timeoutMs > 0) this.timeouts++;
            throw new HidgTimeoutError(this.path, timeoutMs);
          }
          await sleep(Math.min(this.opts.retryMs ?? HIDG_RETRY_MS, left));
          continue;
        }
        if (UNBOUND_CODES.has(code)) throw new HidgUnboundError(this.path, code);
        throw err;
      }
    }
  }

  /** Reads every output report waiting; emits the last one if it differs from the one before. */
  private async readOutputs(): Promise<void> {
    if (this.readingNow || this.closed) return;
    this.readingNow = true;
    const buf = Buffer.alloc(READ_BUFFER_BYTES);
    let latest: Buffer | null = null;
    try {
      for (;;) {
        if (this.closed) break;
        let n: number;
        try {
          n = await fsRead(this.fd, buf);
        } catch (err) {
          const code = errnoCode(err);
          if (code !== 'EAGAIN' && code !== 'EWOULDBLOCK' && !this.readErrorLogged) {
            // Unbound and the like: the driver learns it from the UDC state and its writes.
            this.readErrorLogged = true;
            this.opts.log?.debug({ path: this.path, code }, 'hidg: output report read failed');
          }
          break;
        }
        if (n <= 0) break;
        // f_hid hands one report per read; a stream (the tests' FIFO) may hand several at
        // once: the last whole one is the host's latest.
        const size = this.opts.outputReportLength;
        const end = n >= size ? n - (n % size) : n;
        latest = Buffer.from(buf.subarray(Math.max(0, end - size), end));
      }
    } finally {
      this.readingNow = false;
      this.settleIdle();
    }
    if (latest && !this.closed && !(this.lastOutput && latest.equals(this.lastOutput))) {
      this.lastOutput = latest;
      this.outputs.emit('output', new Uint8Array(latest));
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

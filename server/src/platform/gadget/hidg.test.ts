/**
 * The hidg endpoint on a FIFO: like f_hid, a FIFO opened O_NONBLOCK answers EAGAIN when its
 * reader stops taking bytes (the pipe's 64 KiB are full), which is what a host that stopped
 * polling does to /dev/hidgN.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HidgTimeoutError, openHidg, type HidgEndpoint } from './hidg';

let dir: string;
let fifo: string;
const fds: number[] = [];
const endpoints: HidgEndpoint[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'hidg-test-'));
  fifo = join(dir, 'hidg0');
  const made = spawnSync('mkfifo', [fifo]);
  expect(made.status).toBe(0);
});

afterEach(async () => {
  for (const ep of endpoints.splice(0)) await ep.close();
  for (const fd of fds.splice(0)) closeSync(fd);
  rmSync(dir, { recursive: true, force: true });
});

async function endpoint(opts: Partial<Parameters<typeof openHidg>[1]> = {}): Promise<HidgEndpoint> {
  const ep = await openHidg(fifo, { writeTimeoutMs: 300, outputReportLength: 0, ...opts });
  endpoints.push(ep);
  return ep;
}

/** The host's side: a non-blocking reader (and a writer, to fill the pipe or send LEDs). */
function hostSide(): { reader: number; writer: number } {
  const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
  const writer = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
  fds.push(reader, writer);
  return { reader, writer };
}

/** Reads what is in the pipe now. */
function drain(fd: number): Buffer {
  const chunks: Buffer[] = [];
  const buf = Buffer.alloc(65536);
  for (;;) {
    try {
      const n = readSync(fd, buf);
      if (n <= 0) break;
      chunks.push(Buffer.from(buf.subarray(0, n)));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EAGAIN') break;
      throw err;
    }
  }
  return Buffer.concat(chunks);
}

/** Writes until the pipe is full (the host stopped polling). */
function fill(fd: number): number {
  const chunk = Buffer.alloc(4096, 0xee);
  let total = 0;
  for (;;) {
    try {
      total += writeSync(fd, chunk);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EAGAIN') return total;
      throw err;
    }
  }
}

async function waitFor<T>(fn: () => T | undefined | null | false, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('HidgEndpoint on a FIFO', () => {
  it('writes reports byte-exact and in order', async () => {
    const { reader } = hostSide();
    const ep = await endpoint();
    const reports = [
      Uint8Array.of(0, 0, 4, 0, 0, 0, 0, 0),
      Uint8Array.of(2, 0, 4, 5, 0, 0, 0, 0),
      Uint8Array.of(0, 0, 0, 0, 0, 0, 0, 0),
    ];
    const results = await Promise.all(reports.map((r) => ep.write(r)));
    expect(results).toEqual([true, true, true]);
    expect(drain(reader).toString('hex')).toBe(
      reports.map((r) => Buffer.from(r).toString('hex')).join(''),
    );
    expect(ep.dropped).toBe(0);
  });

  it('times out within the time-out plus slack when the host stops, the event loop ticking', async () => {
    const { reader, writer } = hostSide();
    expect(fill(writer)).toBeGreaterThanOrEqual(65536 - 4096);
    // Long enough that a loaded machine's pauses cannot pass for a blocked loop, or hide one.
    const ep = await endpoint({ writeTimeoutMs: 1000 });
    let ticks = 0;
    let last = performance.now();
    let maxGap = 0;
    const timer = setInterval(() => {
      const now = performance.now();
      maxGap = Math.max(maxGap, now - last);
      last = now;
      ticks++;
    }, 10);
    const started = performance.now();
    const err = await ep.write(Uint8Array.of(0, 0, 4, 0, 0, 0, 0, 0)).catch((e: unknown) => e);
    const took = performance.now() - started;
    clearInterval(timer);
    expect(err).toBeInstanceOf(HidgTimeoutError);
    expect((err as HidgTimeoutError).status).toBe(503);
    expect(took).toBeGreaterThanOrEqual(999);
    expect(took).toBeLessThan(1000 + 2000);
    // A write that held the loop (a sync or busy retry) would stop the interval for the whole
    // time-out; an idle loop ticks about 100 times.
    expect(ticks).toBeGreaterThanOrEqual(10);
    expect(maxGap).toBeLessThan(600);
    expect(ep.timeouts).toBe(1);

    // The host is back: the pipe empties and reports flow again.
    drain(reader);
    expect(await ep.write(Uint8Array.of(0, 0, 0, 0, 0, 0, 0, 0))).toBe(true);
    expect(drain(reader).toString('hex')).toBe('0000000000000000');
  });

  it('bounds the queue: moves and presses are dropped when full, releases never', async () => {
    const { reader, writer } = hostSide();
    fill(writer);
    const ep = await endpoint({ writeTimeoutMs: 10_000, queueMax: 3 });
    const sent = [1, 2, 3].map((n) => ep.write(Uint8Array.of(n)));
    expect(ep.full).toBe(true);
    expect(await ep.write(Uint8Array.of(4))).toBe(false);
    expect(await ep.write(Uint8Array.of(5))).toBe(false);
    expect(ep.dropped).toBe(2);
    const release = ep.write(Uint8Array.of(6), { essential: true });
    expect(ep.queued).toBe(4);
    // The host polls again: everything queued goes out in order, after the filler.
    let got = Buffer.alloc(0);
    let settled = false;
    const all = Promise.all([...sent, release]).finally(() => (settled = true));
    await waitFor(() => {
      got = Buffer.concat([got, drain(reader)]);
      return settled;
    });
    expect(await all).toEqual([true, true, true, true]);
    got = Buffer.concat([got, drain(reader)]);
    expect(got.subarray(got.length - 4).toString('hex')).toBe('01020306');
    expect(got.subarray(0, got.length - 4).every((b) => b === 0xee)).toBe(true);
  });

  it('drops what waited behind a write that timed out, with one probe attempt after', async () => {
    const { reader, writer } = hostSide();
    fill(writer);
    const ep = await endpoint({ writeTimeoutMs: 10_000 });
    const first = ep.write(Uint8Array.of(1), { timeoutMs: 100 }).catch((e: unknown) => e);
    const second = ep.write(Uint8Array.of(2), { essential: true });
    expect(await first).toBeInstanceOf(HidgTimeoutError);
    expect(await second).toBe(false);
    expect(ep.dropped).toBe(1);
    // timeoutMs 0: one attempt, EAGAIN at once (not the endpoint's 10 s).
    const t0 = performance.now();
    expect(
      await ep.write(Uint8Array.of(3), { timeoutMs: 0 }).catch((e: unknown) => e),
    ).toBeInstanceOf(HidgTimeoutError);
    expect(performance.now() - t0).toBeLessThan(3000);
    expect(ep.timeouts).toBe(1); // the probe is not counted
    drain(reader);
    expect(await ep.write(Uint8Array.of(9), { timeoutMs: 0 })).toBe(true);
    expect(drain(reader).toString('hex')).toBe('09');
  });

  it('reads the output report and tells only changes', async () => {
    const { writer } = hostSide();
    const ep = await endpoint({ outputReportLength: 1, readPollMs: 20 });
    const seen: string[] = [];
    ep.onOutput((r) => seen.push(Buffer.from(r).toString('hex')));
    writeSync(writer, Uint8Array.of(0x02));
    await waitFor(() => seen.length === 1);
    writeSync(writer, Uint8Array.of(0x02));
    writeSync(writer, Uint8Array.of(0x03));
    await waitFor(() => seen.length === 2);
    expect(seen).toEqual(['02', '03']);
  });

  it('close() stops a write stuck on a host that does not poll, well before its time-out', async () => {
    const { writer } = hostSide();
    fill(writer);
    const ep = await endpoint({ writeTimeoutMs: 10_000 });
    const stuck = ep.write(Uint8Array.of(1));
    const waiting = ep.write(Uint8Array.of(2), { essential: true });
    await new Promise((r) => setTimeout(r, 30));
    const t0 = performance.now();
    await ep.close();
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(await stuck).toBe(false);
    expect(await waiting).toBe(false);
    expect(await ep.write(Uint8Array.of(3), { essential: true })).toBe(false);
  });
});

import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  CLOCK_FAST_COUNT,
  CLOCK_FAST_MS,
  CLOCK_REFINE_COUNT,
  CLOCK_REFINE_MS,
  CLOCK_SLOW_MS,
  ClockOffset,
  DISPLAY_EVERY_MS,
  LatencyReadout,
  RTP_WRAP_MS,
  captureFromRtp,
  runClockSync,
  type ClockSocket,
} from './latency-readout';

/** A device whose clock is `ahead` ms ahead of the page's, its timeOrigin at `origin`. */
function exchange(pageSent: number, rtt: number, ahead: number, origin: number) {
  const serverMs = pageSent + rtt / 2 + ahead;
  return { sentAt: pageSent, receivedAt: pageSent + rtt, serverMs, serverMono: serverMs - origin };
}

describe('ClockOffset', () => {
  it('takes the offset from the fastest round trip, at most half of it off', () => {
    const c = new ClockOffset();
    expect(c.estimate()).toBeNull();
    // an asymmetric slow exchange (the answer waited 30 ms) and a fast one
    c.add({ sentAt: 1000, receivedAt: 1040, serverMs: 1000 + 35 + 500, serverMono: 35 });
    c.add(exchange(2000, 2, 500, 1000));
    const e = c.estimate()!;
    expect(e.offsetMs).toBeCloseTo(500, 6);
    expect(e.boundMs).toBe(1);
    expect(e.serverOrigin).toBe(1000);
  });

  it('ignores an exchange whose answer came before its request', () => {
    const c = new ClockOffset();
    c.add({ sentAt: 10, receivedAt: 5, serverMs: 0, serverMono: 0 });
    expect(c.count).toBe(0);
  });
});

describe('captureFromRtp', () => {
  const origin = 1_764_000_000_000;
  const clock = { offsetMs: 250, boundMs: 1, serverOrigin: origin };

  it('turns 90 kHz of the device performance.now() into its epoch ms', () => {
    const captureMono = 12_345.5;
    const rtp = Math.round(captureMono * 90) >>> 0;
    const pageNow = origin + captureMono + 40 - clock.offsetMs;
    expect(captureFromRtp(rtp, clock, pageNow)).toBeCloseTo(origin + captureMono, 1);
  });

  it('unwraps timestamps of a device up longer than the 32-bit wrap', () => {
    const captureMono = 3 * RTP_WRAP_MS + 777;
    const rtp = Math.round(captureMono * 90) % 0x1_0000_0000;
    const pageNow = origin + captureMono + 30 - clock.offsetMs;
    expect(captureFromRtp(rtp, clock, pageNow)).toBeCloseTo(origin + captureMono, 1);
  });
});

describe('LatencyReadout', () => {
  it('dates frames once it has a clock, and shows the newest every DISPLAY_EVERY_MS', () => {
    let now = 0;
    const r = new LatencyReadout(() => now);
    const seen: (number | null)[] = [];
    r.subscribe(() => seen.push(r.getView().latencyMs));
    expect(r.note('direct_h264', 100, 150)).toBe(false);
    r.clock.add(exchange(0, 2, 1000, 0)); // device 1000 ms ahead
    expect(r.note('direct_h264', 1100, 140)).toBe(true); // 140 + 1000 - 1100
    now = DISPLAY_EVERY_MS - 1;
    r.note('direct_h264', 1200, 230);
    now = DISPLAY_EVERY_MS;
    r.note('direct_h264', 1300, 335);
    expect(seen).toEqual([40, 35]);
    expect(r.frames.map((f) => Math.round(f.latencyMs))).toEqual([40, 30, 35]);
    expect(r.getView()).toMatchObject({ mode: 'direct_h264', boundMs: 1 });
    r.reset();
    expect(r.getView().latencyMs).toBeNull();
  });

  it('leaves out direct frames captured before the viewer started or asked for a key frame', () => {
    const r = new LatencyReadout(() => 0);
    r.clock.add(exchange(0, 2, 1000, 0)); // device 1000 ms ahead
    // joined at page 5000 (device 6000): the cached GOP's frames from device 1100 and 5990
    expect(r.note('direct_h264', 1100, 5020, { liveFrom: 5000 })).toBe(false);
    expect(r.note('direct_h264', 5990, 5030, { liveFrom: 5000 })).toBe(false);
    expect(r.getView().latencyMs).toBeNull();
    // the first live frame
    expect(r.note('direct_h264', 6010, 5040, { liveFrom: 5000 })).toBe(true);
    expect(r.getView()).toMatchObject({ mode: 'direct_h264', latencyMs: 30 });
    expect(r.frames).toHaveLength(1);
    expect(r.frames[0]).not.toHaveProperty('liveFrom');
  });
});

describe('runClockSync', () => {
  afterEach(() => vi.useRealTimers());

  /** A fake event socket: the ids asked, and the page's handler of answers (null once off). */
  function clockSocket() {
    const fake = {
      sent: [] as number[],
      handler: null as ((event: unknown) => void) | null,
      socket: {
        send: (frame) => {
          fake.sent.push(frame.event.id);
          return true;
        },
        on: (_type, h) => {
          fake.handler = h;
          return () => {
            fake.handler = null;
          };
        },
      } as ClockSocket,
      /** An answer from the device, as the event socket hands it on. */
      reply: (event: unknown): void => fake.handler!(event),
    };
    return fake;
  }

  it('asks quickly at first, then slowly, and feeds the answers to the readout', () => {
    vi.useFakeTimers();
    const fake = clockSocket();
    const { sent, socket, reply: handler } = fake;
    const r = new LatencyReadout();
    let pageNow = 5000;
    const stop = runClockSync(r, socket, () => pageNow);
    expect(sent).toEqual([1]);
    pageNow += 4;
    handler({ id: 1, server_ms: 5002 + 300, mono_ms: 302 });
    handler({ id: 99, server_ms: 1, mono_ms: 1 }); // never asked: ignored
    expect(r.clock.estimate()).toMatchObject({ offsetMs: 300, boundMs: 2, serverOrigin: 5000 });
    vi.advanceTimersByTime(1000);
    expect(sent.length).toBe(CLOCK_FAST_COUNT);
    stop();
    vi.advanceTimersByTime(60_000);
    expect(sent.length).toBe(CLOCK_FAST_COUNT);
    expect(fake.handler).toBeNull();
  });

  it('goes on asking twice a second while the offset is loose, and slowly once it is tight', () => {
    vi.useFakeTimers();
    const fake = clockSocket();
    const { sent, socket, reply: handler } = fake;
    const r = new LatencyReadout();
    let pageNow = 5000;
    // every answer comes 20 ms after its request: the offset is known to 10 ms only
    const answer = (rtt: number): void => {
      const id = sent.at(-1)!;
      pageNow += rtt;
      handler({ id, server_ms: pageNow - rtt / 2 + 300, mono_ms: 1 });
    };
    const stop = runClockSync(r, socket, () => pageNow);
    answer(20);
    for (let i = 1; i < CLOCK_FAST_COUNT; i += 1) {
      vi.advanceTimersByTime(CLOCK_FAST_MS);
      answer(20);
    }
    expect(r.clock.estimate()?.boundMs).toBe(10);
    vi.advanceTimersByTime(CLOCK_REFINE_MS);
    expect(sent.length).toBe(CLOCK_FAST_COUNT + 1);
    answer(20);
    vi.advanceTimersByTime(CLOCK_REFINE_MS);
    expect(sent.length).toBe(CLOCK_FAST_COUNT + 2);
    answer(1); // a quick one: known to 0.5 ms now
    expect(r.clock.estimate()).toMatchObject({ offsetMs: 300, boundMs: 0.5 });
    vi.advanceTimersByTime(CLOCK_REFINE_MS); // the one already planned
    const settled = sent.length;
    vi.advanceTimersByTime(CLOCK_SLOW_MS - 1);
    expect(sent.length).toBe(settled);
    vi.advanceTimersByTime(1);
    expect(sent.length).toBe(settled + 1);
    stop();
  });

  it('stops refining after CLOCK_REFINE_COUNT exchanges when the offset stays loose', () => {
    vi.useFakeTimers();
    let sent = 0;
    const socket: ClockSocket = {
      send: () => {
        sent += 1;
        return true;
      },
      on: () => () => undefined,
    };
    // no answer at all: no estimate, the loosest case
    const stop = runClockSync(new LatencyReadout(), socket, () => 0);
    vi.advanceTimersByTime(CLOCK_FAST_MS * CLOCK_FAST_COUNT + CLOCK_REFINE_MS * CLOCK_REFINE_COUNT);
    const after = sent;
    expect(after).toBeGreaterThanOrEqual(CLOCK_FAST_COUNT + CLOCK_REFINE_COUNT - 1);
    vi.advanceTimersByTime(CLOCK_SLOW_MS * 2);
    expect(sent - after).toBeLessThanOrEqual(2);
    stop();
  });
});

/** Helpers shared by the benches. */
import { availableParallelism, loadavg } from 'node:os';

/**
 * Short mode (`--short` after the bench's name, or KVM_BENCH_SHORT=1): the same measurements
 * with small counts and windows, so that `npm test` can prove every bench still measures
 * (e2e/bench-short.spec.ts). Its numbers are not figures: the JSON says `"short": true`.
 */
export const SHORT = process.argv.includes('--short') || process.env['KVM_BENCH_SHORT'] === '1';

/** `full` normally, `short` in short mode. */
export function sized<T>(full: T, short: T): T {
  return SHORT ? short : full;
}

/**
 * What sets this run apart, spread into the bench's JSON: `short: true` in short mode, and
 * `cpu_limit`, the fraction of the machine's CPU it ran under (KVM_BENCH_CPU, a slower machine
 * of the same kind: scripts/cpu-limit.mjs). Nothing for a full run on the whole machine.
 */
export function runMarks(): { short?: true; cpu_limit?: number } {
  const limit = process.env['KVM_BENCH_CPU_APPLIED'];
  return {
    ...(SHORT ? { short: true as const } : {}),
    ...(limit ? { cpu_limit: Number(limit) } : {}),
  };
}

export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Nearest-rank percentile (p in 0..100) of unsorted values; NaN for none. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

export function round(n: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

/** Everything the bench says goes to stderr; stdout carries only the JSON result. */
export function note(msg: string): void {
  process.stderr.write(`${msg}\n`);
}

/** This process's clock as epoch ms (the same scale a page's timeOrigin + now uses). */
export function epochNow(): number {
  return performance.timeOrigin + performance.now();
}

/** clockOffset's bound it is content with, and the most round trips it takes to reach it. */
const CLOCK_GOOD_BOUND_MS = 1;
const CLOCK_MAX_TRIPS = 200;

/**
 * How far another process's epoch clock (`read`, e.g. a page's performance.timeOrigin + now)
 * is ahead of ours: the round trip with the smallest delay of `trips`, whose midpoint is the
 * best estimate; `bound` is half that round trip, the most the estimate can be off. Both
 * clocks come from the same kernel clock, but each process fixes its timeOrigin once against
 * the wall clock, so they can disagree by a few ms, which is a lot next to a 30 ms latency.
 * After `trips`, it goes on while the bound is over CLOCK_GOOD_BOUND_MS, up to
 * CLOCK_MAX_TRIPS: a page busy with video answered its fastest of 15 in 14.7 ms once (a bound
 * of 7.35 ms), and the readout's error against that estimate (6.5-6.9 ms in two runs) was the
 * estimate's own.
 */
export async function clockOffset(
  read: () => Promise<number>,
  trips = 15,
): Promise<{ offset: number; bound: number }> {
  let best = { offset: 0, bound: Infinity };
  for (let i = 0; i < trips || (best.bound > CLOCK_GOOD_BOUND_MS && i < CLOCK_MAX_TRIPS); i += 1) {
    const t0 = epochNow();
    const remote = await read();
    const t1 = epochNow();
    if ((t1 - t0) / 2 < best.bound) best = { offset: remote - (t0 + t1) / 2, bound: (t1 - t0) / 2 };
  }
  return best;
}

/** Initialises a fresh server at `base` with `password` and logs in: the session token. */
export async function initAndLogin(base: string, password: string): Promise<string> {
  await fetch(`${base}/api/init/init?password=${encodeURIComponent(password)}`);
  const res = await fetch(`${base}/api/auth/login`, {
    method: 'POST',
    body: new URLSearchParams({ user: 'admin', passwd: password }),
  });
  if (res.status !== 200) throw new Error(`login: HTTP ${res.status}`);
  return ((await res.json()) as { result: { token: string } }).result.token;
}

/**
 * How fast this machine is right now, for a reader comparing figures of two runs: the wall ms
 * of a fixed single-threaded JavaScript work (an integer hash loop of 2^25 rounds, no memory,
 * no I/O; the median of 3), the CPU ms the same work was charged (`calibration_cpu_ms`: CPU
 * figures such as cpu_pct_audio are charged time too, and a busy or shared host charges more
 * for the same work), with the load average and the core count. Long enough (about 60 ms on one
 * free core) that the scheduler's share shows in it, not one lucky time slice. A slower or
 * busier machine shows in it: a figure that grew with it is the machine's, one that grew
 * without it the code's.
 */
export function machineSpeed(): {
  calibration_ms: number;
  calibration_cpu_ms: number;
  load_1m: number;
  cores: number;
} {
  const wall: number[] = [];
  const cpu: number[] = [];
  let h = 0x811c9dc5;
  for (let run = 0; run < 3; run += 1) {
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    for (let i = 0; i < 1 << 25; i += 1) h = Math.imul(h ^ i, 0x01000193) >>> 0;
    const c = process.cpuUsage(c0);
    wall.push(performance.now() - t0);
    cpu.push((c.user + c.system) / 1000);
  }
  // h is used, so the loop cannot be dropped
  if (h === 0.5) note('');
  return {
    calibration_ms: round(median(wall), 1),
    calibration_cpu_ms: round(median(cpu), 1),
    load_1m: round(loadavg()[0] ?? 0, 2),
    cores: availableParallelism(),
  };
}

/** Helpers shared by the benches. */

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

/** `{short: true}` in short mode, nothing otherwise: spread into the bench's JSON. */
export function shortMark(): { short?: true } {
  return SHORT ? { short: true } : {};
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

/**
 * How far another process's epoch clock (`read`, e.g. a page's performance.timeOrigin + now)
 * is ahead of ours: the round trip with the smallest delay of `trips`, whose midpoint is the
 * best estimate; `bound` is half that round trip, the most the estimate can be off. Both
 * clocks come from the same kernel clock, but each process fixes its timeOrigin once against
 * the wall clock, so they can disagree by a few ms, which is a lot next to a 30 ms latency.
 */
export async function clockOffset(
  read: () => Promise<number>,
  trips = 15,
): Promise<{ offset: number; bound: number }> {
  let best = { offset: 0, bound: Infinity };
  for (let i = 0; i < trips; i += 1) {
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

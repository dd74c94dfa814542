/** Helpers shared by the benches. */
export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export function round(n: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

/** Everything the bench says goes to stderr; stdout carries only the JSON result. */
export function note(msg: string): void {
  process.stderr.write(`${msg}\n`);
}

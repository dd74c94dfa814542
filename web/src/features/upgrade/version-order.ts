/**
 * SPEC 4 version order, for the console until protocol/src/upgrade.ts (compareVersions /
 * isNewer, the server's copy) is in the tree: Vmajor.minor.patch with an optional release or
 * beta suffix and number; plain > release > beta; an unparsable version ranks lowest.
 */
const PATTERN = /^v?(\d+)\.(\d+)\.(\d+)(?:[\s_-]*(release|beta)\s*(\d+)?)?$/i;
const KIND_RANK: Record<string, number> = { beta: 0, release: 1, plain: 2 };

function parse(version: string): number[] | null {
  const match = PATTERN.exec(version.trim());
  if (!match) return null;
  const kind = (match[4] ?? 'plain').toLowerCase();
  return [
    Number(match[1]),
    Number(match[2]),
    Number(match[3]),
    KIND_RANK[kind] ?? 0,
    Number(match[5] ?? 0),
  ];
}

/** Negative, 0 or positive as a ranks below, equal to or above b. */
export function compareVersions(a: string, b: string): number {
  const pa = parse(a);
  const pb = parse(b);
  if (!pa || !pb) return (pa ? 1 : 0) - (pb ? 1 : 0);
  for (let i = 0; i < pa.length; i += 1) {
    const diff = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (diff !== 0) return Math.sign(diff);
  }
  return 0;
}

/** Whether `candidate` ranks above `current`. */
export function isNewer(candidate: string, current: string): boolean {
  return compareVersions(candidate, current) > 0;
}

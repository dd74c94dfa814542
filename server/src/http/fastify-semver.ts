/**
 * What Fastify asks of `semver` (fastify/lib/plugin-utils.js `checkVersion`): whether its own
 * version satisfies a plugin's `fastify` range, and in a release candidate phase `gt` and
 * `coerce`. The built server's bundle gets this module for that one require (scripts/build.mjs
 * `smallSemver`): semver itself is 45 KB of source evaluated at start, with some 80 regular
 * expressions, for three checks of "5.x". Ranges made of exact or wildcard versions (`5.x`,
 * `5.2.x`, `5.2.1`, joined by `||`) are answered; any other form throws at start with the range
 * named, so a plugin that brings one is seen at once. Unit tests run the real semver.
 */

interface Version {
  parts: [number, number, number];
  prerelease: boolean;
}

const VERSION = /^v?(\d+)\.(\d+)\.(\d+)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/;
/** N, N.x, N.M, N.M.x or N.M.P (`*` for `x` too). */
const WILDCARD = /^(\d+)(?:\.(\d+|x|\*))?(?:\.(\d+|x|\*))?$/;

function parse(version: string): Version {
  const m = VERSION.exec(version.trim());
  if (!m) throw new TypeError(`Invalid Version: ${version}`);
  return { parts: [Number(m[1]), Number(m[2]), Number(m[3])], prerelease: m[4] !== undefined };
}

function compare(a: Version, b: Version): number {
  for (let i = 0; i < 3; i++) {
    if (a.parts[i] !== b.parts[i]) return a.parts[i]! < b.parts[i]! ? -1 : 1;
  }
  // a prerelease comes before its release
  return Number(b.prerelease) - Number(a.prerelease);
}

export function satisfies(
  version: string,
  range: string,
  options: { includePrerelease?: boolean } = {},
): boolean {
  const v = parse(version);
  return range.split('||').some((alternative) => {
    const m = WILDCARD.exec(alternative.trim());
    if (!m) {
      throw new Error(
        `the built server's semver answers only ranges like 5.x or 5.2.1, not ${JSON.stringify(range)} (server/src/http/fastify-semver.ts)`,
      );
    }
    const [, ...parts] = m;
    const exact = parts.every((part) => part !== undefined && part !== 'x' && part !== '*');
    // a prerelease is in a wildcard range only when asked for, never in an exact release
    if (v.prerelease && (exact || !options.includePrerelease)) return false;
    return parts.every(
      (part, i) =>
        part === undefined || part === 'x' || part === '*' || Number(part) === v.parts[i],
    );
  });
}

export function gt(a: string, b: string): boolean {
  return compare(parse(a), parse(b)) > 0;
}

/** The first version in `text`, with the missing parts 0 (semver's coerce, as a string). */
export function coerce(text: string): string | null {
  const m = /(\d+)(?:\.(\d+))?(?:\.(\d+))?/.exec(text);
  return m ? `${m[1]}.${m[2] ?? 0}.${m[3] ?? 0}` : null;
}

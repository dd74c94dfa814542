/**
 * One deep merge for the state patches kvmd sends (only what changed) and the config overrides
 * of the command line: objects merge key by key, anything else replaces.
 */

/** An object the merge descends into: not null, not an array. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * `patch` over `base`: objects merge key by key; arrays, null and other values replace; an
 * undefined value leaves the key alone. A non-object patch replaces `base` (undefined keeps it).
 * `replaceWhole` names dotted paths (`storage.images`) whose object replaces instead of
 * merging: maps that are always sent whole, where merging would keep deleted keys.
 * Never changes its arguments.
 */
export function deepMerge<T>(base: T, patch: unknown, replaceWhole?: ReadonlySet<string>): T {
  if (!isPlainObject(base) || !isPlainObject(patch))
    return (patch === undefined ? base : patch) as T;
  return mergeAt(base, patch, replaceWhole, '') as T;
}

function mergeAt(
  base: Record<string, unknown>,
  patch: Record<string, unknown>,
  replaceWhole: ReadonlySet<string> | undefined,
  path: string,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) continue;
    const at = path ? `${path}.${key}` : key;
    const current = out[key];
    out[key] =
      isPlainObject(value) && isPlainObject(current) && !replaceWhole?.has(at)
        ? mergeAt(current, value, replaceWhole, at)
        : value;
  }
  return out;
}

/** A dictionary's texts by dotted key (`a.b.c`): what the i18n tests of both consoles compare. */
export type Dict = { [key: string]: string | Dict };

export function leaves(dict: Dict, prefix = ''): Map<string, string> {
  const out = new Map<string, string>();
  for (const [key, value] of Object.entries(dict)) {
    const path = prefix ? `${prefix}.${key}` : key;
    if (typeof value === 'string') out.set(path, value);
    else for (const [k, v] of leaves(value, path)) out.set(k, v);
  }
  return out;
}
